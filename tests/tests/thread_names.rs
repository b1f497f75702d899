//! Every kind of thread a pool runs is told apart by the name the kernel
//! shows (`ps -L`, `top`, `/proc/PID/task/TID/comm`: 15 bytes at most),
//! with the default prefix, and a bad name is an `InvalidInput` error. Its
//! own process: it lists every thread of it.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use tests::watchdog;

/// The kernel's names of this process's threads.
fn kernel_names() -> BTreeSet<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|c| c.trim_end().to_string())
        .collect()
}

#[test]
fn each_kind_of_thread_has_its_own_kernel_name() {
    watchdog("thread names", 30, || {
        let pool = pool::Builder::new().worker_threads(2).build().unwrap();
        pool.block_on(async {
            // A blocking thread, and (tokio-compat) a tokio blocking thread.
            pool::spawn_blocking(|| ()).await.unwrap();
            tokio::task::spawn_blocking(|| ()).await.unwrap();
        });
        let expected = [
            "pool-worker-0",
            "pool-worker-1",
            "pool-watcher",
            "pool-blocking-0",
            "pool-tblk",
        ];
        // A thread renames itself as it starts: give each a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut names = kernel_names();
        while !expected.iter().all(|e| names.contains(*e)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            names = kernel_names();
        }
        for e in expected {
            assert!(names.contains(e), "no thread named {e:?} among {names:?}");
        }
        assert!(names.iter().all(|n| n.len() <= 15), "{names:?}");
        // No side thread runs tokio: each worker drives its own runtime.
        assert!(!names.iter().any(|n| n.ends_with("-tok")), "{names:?}");
        // Their full names are unchanged (panics and `thread::current()`).
        let blocking = pool.block_on(async {
            pool::spawn_blocking(|| std::thread::current().name().map(str::to_owned)).await
        });
        // Not a worker: named after the pool, not `pool-worker-blocking-0`.
        assert_eq!(blocking.unwrap().as_deref(), Some("pool-blocking-0"));
    });
}

#[test]
fn a_thread_name_that_cannot_name_a_thread_is_invalid_input() {
    for bad in ["", "a\0b"] {
        let err = pool::Builder::new().thread_name(bad).build().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}");
        assert!(
            err.to_string()
                .contains("thread_name must be a non-empty name"),
            "{err}"
        );
    }
}
