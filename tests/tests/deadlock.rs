//! Deadlock detection: `mark_blocked` / `mark_unblocked` and the handler.

use pool::Builder;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;
use tests::{wait_until_asleep, watchdog};

#[test]
fn a_blocked_lone_worker_calls_the_handler_which_unblocks_it() {
    watchdog("deadlock_one_worker", 10, || {
        let (tx, rx) = mpsc::channel::<&'static str>();
        let tx = Mutex::new(tx);
        let p = Builder::new()
            .worker_threads(1)
            .deadlock_handler(move || {
                let _ = tx.lock().unwrap().send("from the handler");
            })
            .build()
            .unwrap();
        let got = p
            .block_on(p.spawn(async move {
                pool::mark_blocked();
                let got = rx.recv().unwrap(); // only the handler sends
                pool::mark_unblocked();
                got
            }))
            .unwrap();
        assert_eq!(got, "from the handler");
        assert!(p.metrics().deadlocks >= 1, "{:?}", p.metrics());
    });
}

#[test]
fn the_handler_fires_only_once_the_other_workers_sleep() {
    watchdog("deadlock_two_workers", 10, || {
        let calls = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel::<()>();
        let tx = Mutex::new(tx);
        let c = calls.clone();
        let p = Builder::new()
            .worker_threads(2)
            .deadlock_handler(move || {
                c.fetch_add(1, Ordering::SeqCst);
                let _ = tx.lock().unwrap().send(());
            })
            .build()
            .unwrap();
        let h = p.spawn(async move {
            pool::mark_blocked();
            rx.recv().unwrap();
            pool::mark_unblocked();
        });
        // The blocked worker waits until the other worker falls asleep: then
        // nobody is active and the handler fires.
        p.block_on(h).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(p.metrics().deadlocks, 1);
    });
}

/// A pool whose deadlock handler only counts its calls.
fn counting_pool(workers: usize) -> (pool::Pool, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let p = Builder::new()
        .worker_threads(workers)
        .deadlock_handler(move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    (p, calls)
}

#[test]
fn an_idle_pool_never_calls_the_handler() {
    watchdog("deadlock_idle", 10, || {
        let (p, calls) = counting_pool(2);
        wait_until_asleep(&p);
        p.block_on(p.spawn(async {})).unwrap();
        wait_until_asleep(&p);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert_eq!(p.metrics().deadlocks, 0);
    });
}

#[test]
fn a_task_that_panics_while_marked_does_not_leave_its_worker_blocked() {
    watchdog("deadlock_mark_reset", 10, || {
        let (p, calls) = counting_pool(2);
        wait_until_asleep(&p);
        let err = p
            .block_on(p.spawn(async {
                pool::mark_blocked();
                panic!("gave up while blocked");
            }))
            .unwrap_err();
        assert!(err.is_panic());
        // The other worker slept, so marking fired the handler once.
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // The task is gone, and so is its mark: the pool sleeps and wakes
        // as usual, and idleness is not a deadlock.
        for round in 0..3 {
            wait_until_asleep(&p);
            assert_eq!(p.block_on(p.spawn(async move { round })).unwrap(), round);
        }
        wait_until_asleep(&p);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn marking_outside_a_worker_is_a_no_op() {
    pool::mark_blocked();
    pool::mark_blocked(); // would be a double mark on a worker
    pool::mark_unblocked();
}

#[test]
fn the_handler_calling_mark_blocked_panics_with_a_clear_message() {
    watchdog("deadlock_handler_misuse", 10, || {
        let p = Builder::new()
            .worker_threads(1)
            .deadlock_handler(pool::mark_unblocked)
            .build()
            .unwrap();
        let err = p
            .block_on(p.spawn(async {
                pool::mark_blocked();
            }))
            .unwrap_err();
        assert!(err.is_panic());
        let msg = err.to_string();
        assert!(
            msg.contains("pool::mark_unblocked() called from the deadlock handler"),
            "{msg}"
        );
        // The state lock was released: the pool still works.
        assert_eq!(p.block_on(p.spawn(async { 1 })).unwrap(), 1);
    });
}

#[test]
fn marking_twice_is_a_clear_panic() {
    watchdog("deadlock_double_mark", 10, || {
        let p = Builder::new()
            .worker_threads(2)
            .deadlock_handler(|| {})
            .build()
            .unwrap();
        let err = p
            .block_on(p.spawn(async {
                pool::mark_blocked();
                pool::mark_blocked();
            }))
            .unwrap_err();
        assert!(
            err.to_string().contains("mark_blocked() called twice"),
            "{err}"
        );
    });
}

#[test]
fn a_marked_worker_that_waits_in_block_on_is_still_counted_once() {
    watchdog("deadlock_marked_block_on", 10, || {
        let (tx, rx) = futures::channel::oneshot::channel::<u32>();
        let tx = Mutex::new(Some(tx));
        let p = Builder::new()
            .worker_threads(1)
            .deadlock_handler(move || {
                if let Some(tx) = tx.lock().unwrap().take() {
                    // Answer late, so the marked worker falls asleep in its
                    // block_on first.
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(30));
                        let _ = tx.send(9);
                    });
                }
            })
            .build()
            .unwrap();
        let got = p
            .block_on(p.spawn(async move {
                pool::mark_blocked(); // the handler fires: nothing else is active
                let v = pool::block_on(rx).unwrap(); // the worker may sleep in here
                pool::mark_unblocked();
                v
            }))
            .unwrap();
        assert_eq!(got, 9);
        wait_until_asleep(&p);
        assert_eq!(p.block_on(p.spawn(async { 1 })).unwrap(), 1);
        assert_eq!(p.metrics().deadlocks, 1);
    });
}
