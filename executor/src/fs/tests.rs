//! File operations whose completion comes later, on a pool whose driver's
//! sleeper blocks in the driver itself (no `tokio-compat`; the full suite,
//! `tests/tests/fs.rs`, runs where the workspace turns it on, and so the
//! sleeper blocks in its tokio runtime). Each runs on both engines.
//! `.ci/run` runs these with the package's own features:
//! `cargo test -p pool --lib fs::tests`.

use crate::builder::Builder;
use crate::pool::Pool;
use crate::time::tests::watchdog;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn pool(io_uring: bool, paused: bool) -> Pool {
    Builder::new()
        .worker_threads(1)
        .io_uring(io_uring)
        .start_paused(paused)
        .build()
        .unwrap()
}

/// A FIFO in a fresh directory: opening it for writing waits for a reader.
fn fifo(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pool-fs-unit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fifo");
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    path
}

/// A reader that comes after `after`, and what it read.
fn reader(path: &Path, after: Duration) -> std::thread::JoinHandle<Vec<u8>> {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let read = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
        read
    })
}

#[test]
fn a_completion_that_comes_later_wakes_the_sleeping_worker() {
    for io_uring in [true, false] {
        watchdog("a late completion", 30, move || {
            let p = pool(io_uring, false);
            let path = fifo(&format!("late-{io_uring}"));
            let read = reader(&path, Duration::from_millis(100));
            // The task waits in the kernel (an io-wq thread, or a blocking
            // thread) while the only worker sleeps in the driver.
            p.block_on(p.spawn(super::write(path, "late")))
                .unwrap()
                .unwrap();
            assert_eq!(read.join().unwrap(), b"late");
        });
    }
}

#[test]
fn an_operation_in_flight_holds_a_paused_clock() {
    for io_uring in [true, false] {
        watchdog("a paused clock beside a file operation", 30, move || {
            let p = pool(io_uring, true);
            let path = fifo(&format!("paused-{io_uring}"));
            let read = reader(&path, Duration::from_millis(100));
            p.block_on(async move {
                let write = crate::free_fns::spawn(super::write(path, "x"));
                let done = crate::time::timeout(Duration::from_secs(3600), write).await;
                done.expect("the clock jumped while the write was in flight")
                    .unwrap()
                    .unwrap();
            });
            assert_eq!(read.join().unwrap(), b"x");
        });
    }
}
