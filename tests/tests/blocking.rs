//! `spawn_blocking`: elastic threads beside the workers, capped, FIFO beyond
//! the cap, idle ones exit, and shutdown does not start queued closures.

use pool::Builder;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};
use tests::{pool, wait_for, watchdog, DropCounter};

#[test]
fn sixty_four_sleeping_closures_run_concurrently() {
    watchdog("blocking_concurrency", 30, || {
        let p = pool(2);
        let start = Instant::now();
        let handles: Vec<_> = (0..64)
            .map(|i| {
                p.spawn_blocking(move || {
                    std::thread::sleep(Duration::from_millis(50));
                    i
                })
            })
            .collect();
        let sum: u32 = handles.into_iter().map(|h| p.block_on(h).unwrap()).sum();
        let took = start.elapsed();
        assert_eq!(sum, 63 * 64 / 2);
        // In series they would take 64 x 50 ms = 3.2 s.
        assert!(took < Duration::from_millis(1_000), "took {took:?}");
        assert!(p.metrics().blocking_threads >= 2, "{:?}", p.metrics());
    });
}

#[test]
fn a_blocking_closure_never_runs_on_a_worker() {
    watchdog("blocking_thread_names", 10, || {
        let p = Builder::new()
            .worker_threads(2)
            .thread_name("app")
            .build()
            .unwrap();
        let names = p.block_on(async {
            let mut names = Vec::new();
            for _ in 0..20 {
                let name =
                    pool::spawn_blocking(|| std::thread::current().name().map(str::to_owned))
                        .await
                        .unwrap()
                        .unwrap();
                names.push(name);
            }
            // Spawned from inside a task too: still a blocking thread.
            let from_task = pool::spawn(async {
                pool::spawn_blocking(|| std::thread::current().name().map(str::to_owned))
                    .await
                    .unwrap()
                    .unwrap()
            });
            names.push(from_task.await.unwrap());
            names
        });
        for name in names {
            assert!(name.starts_with("app-blocking-"), "ran on {name}");
        }
    });
}

#[test]
fn the_cap_holds_and_queued_closures_run_in_fifo_order() {
    watchdog("blocking_cap", 20, || {
        let p = Builder::new()
            .worker_threads(1)
            .max_blocking_threads(3)
            .build()
            .unwrap();
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..24)
            .map(|_| {
                let (running, most) = (running.clone(), most.clone());
                p.spawn_blocking(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(5));
                    running.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for h in handles {
            p.block_on(h).unwrap();
        }
        assert_eq!(
            most.load(Ordering::SeqCst),
            3,
            "at most 3 at once, and 3 used"
        );
        assert!(p.metrics().blocking_threads <= 3);

        // With one thread, the order of submission is the order of running.
        let p = Builder::new()
            .worker_threads(1)
            .max_blocking_threads(1)
            .build()
            .unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..20)
            .map(|i| {
                let order = order.clone();
                p.spawn_blocking(move || order.lock().unwrap().push(i))
            })
            .collect();
        for h in handles {
            p.block_on(h).unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..20).collect::<Vec<_>>());
    });
}

#[test]
fn idle_blocking_threads_exit_after_the_keep_alive() {
    watchdog("blocking_keep_alive", 20, || {
        let p = Builder::new()
            .worker_threads(1)
            .blocking_keep_alive(Duration::from_millis(100))
            .build()
            .unwrap();
        let hs: Vec<_> = (0..4)
            .map(|_| p.spawn_blocking(|| std::thread::sleep(Duration::from_millis(20))))
            .collect();
        for h in hs {
            p.block_on(h).unwrap();
        }
        assert!(p.metrics().blocking_threads >= 1);
        let idle_since = Instant::now();
        wait_for("blocking threads exited", Duration::from_secs(5), || {
            p.metrics().blocking_threads == 0
        });
        assert!(
            idle_since.elapsed() >= Duration::from_millis(50),
            "exited before the keep-alive"
        );
        // And a new closure starts a new thread.
        assert_eq!(p.block_on(p.spawn_blocking(|| 5)).unwrap(), 5);
    });
}

#[test]
fn a_panicking_closure_gives_a_panic_error() {
    watchdog("blocking_panic", 10, || {
        let p = pool(1);
        let err = p
            .block_on(p.spawn_blocking(|| panic!("blocking failed")))
            .unwrap_err();
        assert!(err.is_panic());
        assert_eq!(err.to_string(), "task panicked: blocking failed");
        // The blocking thread survived (or was replaced): more work runs.
        assert_eq!(p.block_on(p.spawn_blocking(|| 1)).unwrap(), 1);
    });
}

#[test]
fn shutdown_cancels_queued_closures_and_waits_for_running_ones_up_to_the_timeout() {
    watchdog("blocking_shutdown", 20, || {
        let p = Builder::new()
            .worker_threads(1)
            .max_blocking_threads(1)
            .build()
            .unwrap();
        let started = Arc::new(Barrier::new(2));
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let s = started.clone();
        let running = p.spawn_blocking(move || {
            s.wait();
            let _ = release_rx.recv(); // held until the test releases it
            "finished"
        });
        started.wait();
        let ran = Arc::new(AtomicUsize::new(0));
        let drops = DropCounter::new();
        let queued: Vec<_> = (0..5)
            .map(|_| {
                let ran = ran.clone();
                let t = drops.track();
                p.spawn_blocking(move || {
                    let _t = t;
                    ran.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        let start = Instant::now();
        p.shutdown_timeout(Duration::from_millis(100));
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(100) && took < Duration::from_secs(5),
            "{took:?}"
        );
        assert_eq!(
            ran.load(Ordering::SeqCst),
            0,
            "queued closures must not start"
        );
        assert_eq!(drops.drops(), 5, "each queued closure dropped once");
        for h in queued {
            assert!(pool::block_on(h).unwrap_err().is_cancelled());
        }
        release_tx.send(()).unwrap();
        assert_eq!(
            pool::block_on(running).unwrap(),
            "finished",
            "the running one completes"
        );
    });
}

#[test]
fn dropping_a_pool_waits_for_running_closures() {
    watchdog("blocking_drop_waits", 20, || {
        let p = pool(1);
        let done = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(Barrier::new(2));
        let (d, s) = (done.clone(), started.clone());
        drop(p.spawn_blocking(move || {
            s.wait();
            std::thread::sleep(Duration::from_millis(50));
            d.fetch_add(1, Ordering::SeqCst);
        }));
        started.wait();
        drop(p);
        assert_eq!(
            done.load(Ordering::SeqCst),
            1,
            "drop returned before the closure finished"
        );
    });
}

#[test]
fn spawn_blocking_after_shutdown_is_cancelled() {
    watchdog("blocking_after_shutdown", 10, || {
        let p = pool(1);
        let h = p.handle();
        drop(p);
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let handle = h.spawn_blocking(move || r.fetch_add(1, Ordering::SeqCst));
        assert!(pool::block_on(handle).unwrap_err().is_cancelled());
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn abort_cancels_a_queued_closure() {
    watchdog("blocking_abort", 10, || {
        let p = Builder::new()
            .worker_threads(1)
            .max_blocking_threads(1)
            .build()
            .unwrap();
        let (tx, rx) = mpsc::channel::<()>();
        let busy = p.spawn_blocking(move || rx.recv().unwrap());
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let queued = p.spawn_blocking(move || r.fetch_add(1, Ordering::SeqCst));
        queued.abort();
        tx.send(()).unwrap();
        p.block_on(busy).unwrap();
        assert!(p.block_on(queued).unwrap_err().is_cancelled());
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn zero_max_blocking_threads_is_an_invalid_input_error() {
    let err = Builder::new().max_blocking_threads(0).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        err.to_string()
            .starts_with("max_blocking_threads must be at least 1"),
        "{err}"
    );
}

#[test]
fn free_spawn_inside_a_blocking_closure_goes_to_its_pool() {
    watchdog("blocking_current_pool", 10, || {
        let p = pool(3);
        let workers = p
            .block_on(p.spawn_blocking(|| pool::Handle::current().metrics().workers))
            .unwrap();
        assert_eq!(workers, 3);
    });
}
