//! Shutdown: every unfinished future is dropped exactly once, handles say
//! `cancelled`, dropping never hangs on pending tasks, and the timeout bounds
//! the wait for a stuck worker.

use pool::Builder;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};
use tests::{pool, watchdog, DropCounter};

#[test]
fn shutdown_drops_each_pending_future_exactly_once() {
    watchdog("shutdown_drops_pending", 20, || {
        let p = pool(2);
        let drops = DropCounter::new();
        let (senders, handles): (Vec<_>, Vec<_>) = (0..1_000)
            .map(|i| {
                let tracked = drops.track();
                let (tx, rx) = futures::channel::oneshot::channel::<()>();
                // Half wait on a channel whose sender we keep (their waker
                // may fire later), half on nothing that will ever wake them.
                let h = p.spawn(async move {
                    let _keep = tracked;
                    if i % 2 == 0 {
                        let _ = rx.await;
                    } else {
                        std::future::pending::<()>().await;
                    }
                });
                (tx, h)
            })
            .unzip();
        // Let every task reach its first await.
        tests::wait_for("all tasks polled", Duration::from_secs(10), || {
            p.metrics().polls >= 1_000
        });
        assert_eq!(drops.drops(), 0);
        drop(p);
        assert_eq!(drops.drops(), 1_000, "each pending future dropped once");
        for h in handles {
            assert!(pool::block_on(h).unwrap_err().is_cancelled());
        }
        // Waking tasks of a dead pool is harmless and drops nothing twice.
        for tx in senders {
            let _ = tx.send(());
        }
        assert_eq!(drops.drops(), 1_000);
    });
}

#[test]
fn shutdown_drops_tasks_still_queued() {
    watchdog("shutdown_drops_queued", 20, || {
        let p = pool(1);
        let drops = DropCounter::new();
        let (started_tx, started_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        // Keep the only worker busy so the next tasks stay in the queue.
        drop(p.spawn(async move {
            started_tx.send(()).unwrap();
            let _ = release_rx.recv_timeout(Duration::from_millis(200));
        }));
        started_rx.recv().unwrap();
        let handles: Vec<_> = (0..100)
            .map(|_| {
                let t = drops.track();
                p.spawn(async move { drop(t) })
            })
            .collect();
        drop(release_tx);
        drop(p);
        // Each future dropped once, whether it ran (dropping `t` inside) or
        // was dropped unpolled by the shutdown.
        assert_eq!(drops.drops(), 100);
        for h in handles {
            match pool::block_on(h) {
                Ok(()) => {}
                Err(e) => assert!(e.is_cancelled(), "{e:?}"),
            }
        }
    });
}

#[test]
fn dropping_a_pool_whose_tasks_are_all_pending_does_not_hang() {
    watchdog("drop_pending_pool", 10, || {
        for workers in [1, 2, 4] {
            let p = pool(workers);
            for _ in 0..100 {
                drop(p.spawn(std::future::pending::<()>()));
            }
            tests::wait_for("tasks polled", Duration::from_secs(5), || {
                p.metrics().polls >= 100
            });
            drop(p);
        }
    });
}

#[test]
fn spawn_after_shutdown_is_cancelled_at_once() {
    watchdog("spawn_after_shutdown", 10, || {
        let p = pool(1);
        let handle = p.handle();
        drop(p);
        let drops = DropCounter::new();
        let t = drops.track();
        let h = handle.spawn(async move { drop(t) });
        assert_eq!(drops.drops(), 1, "the future is dropped in spawn");
        assert!(h.is_finished());
        assert!(pool::block_on(h).unwrap_err().is_cancelled());
        use futures::task::SpawnExt;
        assert!(SpawnExt::spawn(&handle, async {})
            .unwrap_err()
            .is_shutdown());
    });
}

#[test]
fn shutdown_timeout_bounds_the_wait_for_a_stuck_worker() {
    watchdog("shutdown_timeout", 20, || {
        let p = pool(2);
        let barrier = Arc::new(Barrier::new(2));
        let (tx, rx) = mpsc::channel::<()>();
        let b = barrier.clone();
        drop(p.spawn(async move {
            b.wait();
            let _ = rx.recv(); // stuck until the test ends it
        }));
        let drops = DropCounter::new();
        let t = drops.track();
        let pending = p.spawn(async move {
            let _t = t;
            std::future::pending::<()>().await
        });
        barrier.wait();
        let start = Instant::now();
        p.shutdown_timeout(Duration::from_millis(100));
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(100),
            "returned before the timeout: {took:?}"
        );
        assert!(
            took < Duration::from_secs(5),
            "waited far past the timeout: {took:?}"
        );
        assert_eq!(drops.drops(), 1, "pending tasks are dropped even so");
        assert!(pool::block_on(pending).unwrap_err().is_cancelled());
        drop(tx);
    });
}

#[test]
fn thread_hooks_run_once_per_worker() {
    watchdog("thread_hooks", 10, || {
        let started = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(AtomicUsize::new(0));
        let (s, t) = (started.clone(), stopped.clone());
        let p = Builder::new()
            .worker_threads(3)
            .on_thread_start(move || {
                assert!(std::thread::current()
                    .name()
                    .unwrap()
                    .starts_with("pool-worker-"));
                s.fetch_add(1, Ordering::SeqCst);
            })
            .on_thread_stop(move || {
                t.fetch_add(1, Ordering::SeqCst);
            })
            .build()
            .unwrap();
        p.block_on(p.spawn(async {})).unwrap();
        drop(p);
        assert_eq!(started.load(Ordering::SeqCst), 3);
        assert_eq!(
            stopped.load(Ordering::SeqCst),
            3,
            "joined before drop returns"
        );
    });
}

/// The hooks run on every thread that runs the user's code, which can ask
/// what it is: each worker by its index, a blocking thread, a tokio
/// blocking thread; never the watcher. Every start has its stop: the
/// pool's own threads' by the time the pool's drop returns, a tokio
/// blocking thread's as it ends (shutdown does not wait for those).
#[test]
fn thread_hooks_run_on_blocking_threads_and_know_their_kind() {
    use pool::ThreadKind;
    use std::sync::Mutex;
    watchdog("thread_hooks_kinds", 10, || {
        let started = Arc::new(Mutex::new(Vec::new()));
        let stopped = Arc::new(Mutex::new(Vec::new()));
        let (s, t) = (started.clone(), stopped.clone());
        let p = Builder::new()
            .worker_threads(2)
            .on_thread_start(move || s.lock().unwrap().push(ThreadKind::current()))
            .on_thread_stop(move || t.lock().unwrap().push(ThreadKind::current()))
            .build()
            .unwrap();
        let kinds = p.block_on(p.spawn(async {
            let inside = ThreadKind::current();
            let blocking = pool::spawn_blocking(ThreadKind::current).await.unwrap();
            let tokio_blocking = tokio::task::spawn_blocking(ThreadKind::current)
                .await
                .unwrap();
            (inside, blocking, tokio_blocking)
        }));
        let (inside, blocking, tokio_blocking) = kinds.unwrap();
        assert!(
            matches!(inside, Some(ThreadKind::Worker(0 | 1))),
            "{inside:?}"
        );
        assert_eq!(blocking, Some(ThreadKind::Blocking(0)));
        assert_eq!(tokio_blocking, Some(ThreadKind::TokioBlocking));
        assert_eq!(
            ThreadKind::current(),
            None,
            "the test's thread is no pool's"
        );
        drop(p);
        let own = stopped.lock().unwrap().clone();
        let own: Vec<_> = own
            .into_iter()
            .filter(|k| *k != Some(ThreadKind::TokioBlocking))
            .collect();
        assert_eq!(
            own.len(),
            3,
            "the pool's own threads stopped before drop returned: {own:?}"
        );
        let sorted = |v: &Mutex<Vec<Option<ThreadKind>>>| {
            let mut v: Vec<String> = v.lock().unwrap().iter().map(|k| format!("{k:?}")).collect();
            v.sort();
            v
        };
        let expected = [
            "Some(Blocking(0))",
            "Some(TokioBlocking)",
            "Some(Worker(0))",
            "Some(Worker(1))",
        ];
        assert_eq!(
            sorted(&started),
            expected,
            "one start per thread, none on the watcher"
        );
        let tokio_stopped = || {
            let kinds = stopped.lock().unwrap();
            kinds.contains(&Some(ThreadKind::TokioBlocking))
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !tokio_stopped() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            sorted(&stopped),
            expected,
            "one stop per thread that started"
        );
    });
}

#[test]
fn a_pool_dropped_inside_its_own_task_does_not_deadlock() {
    watchdog("drop_inside_own_task", 10, || {
        let p = Arc::new(pool(2));
        let (tx, rx) = mpsc::channel();
        let inner = p.clone();
        drop(p.spawn(async move {
            // Wait until the outside reference is gone, then drop the last.
            while Arc::strong_count(&inner) > 1 {
                std::thread::yield_now();
            }
            drop(inner);
            tx.send(()).unwrap();
        }));
        drop(p);
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the task that dropped its pool returned");
    });
}

#[test]
fn pools_created_and_dropped_in_a_loop() {
    watchdog("pool_churn", 30, || {
        for i in 0..50 {
            let p = pool(1 + i % 3);
            let v = p.block_on(async move {
                let hs: Vec<_> = (0..10).map(|j| pool::spawn(async move { j })).collect();
                let mut s = 0;
                for h in hs {
                    s += h.await.unwrap();
                }
                s
            });
            assert_eq!(v, 45);
        }
    });
}
