//! Spawning and joining: values, nesting, many tasks, panics, abort, detach,
//! fairness.

use pool::Builder;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tests::{pool, watchdog, DropCounter};

#[test]
fn spawned_task_returns_its_value() {
    watchdog("spawned_task_returns_its_value", 10, || {
        let p = pool(2);
        let h = p.spawn(async { String::from("value") });
        assert_eq!(p.block_on(h).unwrap(), "value");
    });
}

#[test]
fn tasks_run_on_worker_threads_with_their_names() {
    watchdog("tasks_run_on_worker_threads", 10, || {
        let p = Builder::new()
            .worker_threads(2)
            .thread_name("named")
            .build()
            .unwrap();
        let name = p
            .block_on(p.spawn(async { std::thread::current().name().map(str::to_owned) }))
            .unwrap()
            .unwrap();
        assert!(name == "named-0" || name == "named-1", "ran on {name}");
    });
}

#[test]
fn nested_spawns_go_to_the_same_pool_and_join() {
    watchdog("nested_spawns", 10, || {
        let p = pool(2);
        let depth_sum = p.block_on(async {
            pool::spawn(async {
                let inner = pool::spawn(async {
                    let innermost = pool::spawn(async { 3 });
                    innermost.await.unwrap() + 2
                });
                inner.await.unwrap() + 1
            })
            .await
            .unwrap()
        });
        assert_eq!(depth_sum, 6);
        assert_eq!(
            p.metrics().spawned,
            3,
            "all three spawns counted on this pool"
        );
    });
}

#[test]
fn ten_thousand_tasks_all_complete_with_their_values() {
    watchdog("ten_thousand_tasks", 30, || {
        let p = pool(2);
        let sum = p.block_on(async {
            let handles: Vec<_> = (0..10_000u64)
                .map(|i| pool::spawn(async move { i }))
                .collect();
            let mut sum = 0;
            for h in handles {
                sum += h.await.unwrap();
            }
            sum
        });
        assert_eq!(sum, 10_000 * 9_999 / 2);
        let m = p.metrics();
        assert_eq!(m.spawned, 10_000);
        assert!(m.polls >= 10_000, "every task polled at least once: {m:?}");
    });
}

#[test]
fn ten_thousand_tasks_spawned_from_outside_all_complete() {
    watchdog("ten_thousand_outside", 30, || {
        let p = pool(2);
        let handles: Vec<_> = (0..10_000u64)
            .map(|i| p.spawn(async move { i * 2 }))
            .collect();
        let sum: u64 = handles.into_iter().map(|h| p.block_on(h).unwrap()).sum();
        assert_eq!(sum, 10_000 * 9_999);
        assert_eq!(
            p.metrics().injected,
            10_000,
            "outside spawns enter through the injector"
        );
    });
}

#[test]
fn a_panicking_task_gives_a_panic_error_and_the_worker_goes_on() {
    watchdog("panicking_task", 10, || {
        let p = pool(1);
        let err = p
            .block_on(p.spawn(async { panic!("task failed on purpose") }))
            .unwrap_err();
        assert!(err.is_panic());
        assert!(!err.is_cancelled());
        assert_eq!(err.to_string(), "task panicked: task failed on purpose");
        let payload = err.into_panic();
        assert_eq!(
            *payload.downcast_ref::<&str>().unwrap(),
            "task failed on purpose"
        );
        // The single worker survived and runs the next task.
        assert_eq!(p.block_on(p.spawn(async { 5 })).unwrap(), 5);
    });
}

#[test]
fn a_panic_with_a_non_string_payload_is_still_a_panic() {
    watchdog("non_string_panic", 10, || {
        let p = pool(1);
        let err = p
            .block_on(p.spawn(async { std::panic::panic_any(17u32) }))
            .unwrap_err();
        assert!(err.is_panic());
        assert_eq!(err.to_string(), "task panicked");
        assert_eq!(*err.into_panic().downcast::<u32>().unwrap(), 17);
    });
}

#[test]
#[should_panic(expected = "cancelled task")]
fn into_panic_on_a_cancelled_error_panics_with_a_clear_message() {
    let p = pool(1);
    let h = p.spawn(std::future::pending::<()>());
    h.abort();
    let err = p.block_on(h).unwrap_err();
    let _ = err.into_panic();
}

#[test]
fn abort_cancels_a_pending_task_and_drops_its_future_once() {
    watchdog("abort_pending", 10, || {
        let p = pool(2);
        let drops = DropCounter::new();
        let tracked = drops.track();
        let h = p.spawn(async move {
            let _keep = tracked;
            std::future::pending::<()>().await;
        });
        h.abort();
        let err = p.block_on(h).unwrap_err();
        assert!(err.is_cancelled(), "{err:?}");
        assert_eq!(err.to_string(), "task was cancelled");
        assert_eq!(drops.drops(), 1);
        drop(p);
        assert_eq!(drops.drops(), 1, "shutdown must not drop it again");
    });
}

#[test]
fn abort_of_a_running_task_takes_effect_at_its_next_poll() {
    watchdog("abort_running", 10, || {
        let p = pool(2);
        let (started_tx, started_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let polls = Arc::new(AtomicUsize::new(0));
        let polls2 = polls.clone();
        let h = p.spawn(async move {
            polls2.fetch_add(1, Ordering::SeqCst);
            started_tx.send(()).unwrap();
            go_rx.recv().unwrap(); // blocks this worker while we abort
            loop {
                polls2.fetch_add(1, Ordering::SeqCst);
                pool::yield_now().await;
            }
        });
        started_rx.recv().unwrap();
        h.abort();
        go_tx.send(()).unwrap();
        assert!(p.block_on(h).unwrap_err().is_cancelled());
        // The first poll ran to its first yield; the re-poll saw the abort.
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn abort_after_completion_keeps_the_output() {
    watchdog("abort_finished", 10, || {
        let p = pool(1);
        let h = p.spawn(async { 9 });
        while !h.is_finished() {
            std::thread::yield_now();
        }
        h.abort();
        assert_eq!(p.block_on(h).unwrap(), 9);
    });
}

#[test]
fn dropping_a_join_handle_detaches_the_task() {
    watchdog("detach", 10, || {
        let p = pool(2);
        let (tx, rx) = mpsc::channel();
        let (go_tx, go_rx) = futures::channel::oneshot::channel::<()>();
        drop(p.spawn(async move {
            go_rx.await.unwrap();
            tx.send("ran after detach").unwrap();
        }));
        go_tx.send(()).unwrap();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            "ran after detach"
        );
    });
}

#[test]
fn is_finished_turns_true_when_the_task_completes() {
    watchdog("is_finished", 10, || {
        let p = pool(1);
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let h = p.spawn(async move { rx.await.unwrap() });
        assert!(!h.is_finished());
        tx.send(()).unwrap();
        p.block_on(async {
            while !h.is_finished() {
                pool::yield_now().await;
            }
        });
        p.block_on(h).unwrap();
    });
}

#[test]
fn a_task_looping_on_yield_now_does_not_starve_another_on_one_worker() {
    watchdog("yield_fairness", 10, || {
        let p = pool(1);
        let stop = Arc::new(AtomicBool::new(false));
        let spinner = {
            let stop = stop.clone();
            p.spawn(async move {
                let mut yields = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    pool::yield_now().await;
                    yields += 1;
                }
                yields
            })
        };
        // Spawned from inside the pool (onto the same worker's deque) and
        // from outside (through the injector): both must get their turn.
        let inner = p.spawn(async move { pool::spawn(async { 1 }).await.unwrap() });
        let outer = p.spawn(async { 2 });
        assert_eq!(p.block_on(inner).unwrap() + p.block_on(outer).unwrap(), 3);
        stop.store(true, Ordering::SeqCst);
        assert!(p.block_on(spinner).unwrap() > 0);
    });
}

#[test]
fn a_busy_worker_still_takes_outside_spawns_from_the_injector() {
    watchdog("injector_not_starved", 10, || {
        let p = pool(1);
        let stop = Arc::new(AtomicBool::new(false));
        // A task that keeps its worker's own deque non-empty forever: it
        // spawns a successor onto the local deque before it finishes.
        fn chain(stop: Arc<AtomicBool>) {
            if !stop.load(Ordering::SeqCst) {
                drop(pool::spawn(async move { chain(stop) }));
            }
        }
        let s = stop.clone();
        drop(p.spawn(async move { chain(s) }));
        let outside = p.spawn(async { "outside" });
        assert_eq!(p.block_on(outside).unwrap(), "outside");
        stop.store(true, Ordering::SeqCst);
    });
}

#[test]
fn handle_spawns_from_another_thread() {
    watchdog("handle_spawn", 10, || {
        let p = pool(2);
        let handle = p.handle();
        let h = std::thread::spawn(move || handle.spawn(async { 11 }))
            .join()
            .unwrap();
        assert_eq!(p.block_on(h).unwrap(), 11);
    });
}

#[test]
fn futures_spawn_trait_runs_tasks_on_the_pool() {
    use futures::task::SpawnExt;
    watchdog("futures_spawn", 10, || {
        let p = pool(2);
        let (tx, rx) = mpsc::channel();
        SpawnExt::spawn(&p.handle(), async move {
            tx.send(std::thread::current().name().map(str::to_owned))
                .unwrap();
        })
        .unwrap();
        let name = rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
        assert!(name.starts_with("pool-worker-"), "{name}");
        let remote = p.handle().spawn_with_handle(async { 4 }).unwrap();
        assert_eq!(p.block_on(remote), 4);
    });
}

#[test]
fn work_is_stolen_by_an_idle_worker() {
    watchdog("steal", 20, || {
        let p = pool(2);
        // One task spawns many blocking-ish tasks onto its own deque; the
        // other worker can only get them by stealing.
        let (tx, rx) = mpsc::channel();
        p.block_on(p.spawn(async move {
            let handles: Vec<_> = (0..64)
                .map(|_| {
                    let tx = tx.clone();
                    pool::spawn(async move {
                        std::thread::sleep(Duration::from_millis(1));
                        tx.send(std::thread::current().id()).unwrap();
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
        }))
        .unwrap();
        let threads: std::collections::HashSet<_> = rx.try_iter().collect();
        assert_eq!(threads.len(), 2, "both workers ran some of the tasks");
        assert!(p.metrics().steals > 0, "{:?}", p.metrics());
    });
}

#[test]
fn two_tasks_waking_each_other_do_not_starve_a_queued_task() {
    use futures::channel::mpsc::unbounded;
    use futures::StreamExt;
    watchdog("lifo_bound", 10, || {
        let p = pool(1);
        let stop = Arc::new(AtomicBool::new(false));
        let (third_tx, third_rx) = mpsc::channel();
        let (a_tx, mut a_rx) = unbounded::<()>();
        let (b_tx, mut b_rx) = unbounded::<()>();
        let s = stop.clone();
        // A and B wake each other forever, each landing in the worker's LIFO
        // slot. On its 10th message A spawns `third`, which B's wake then
        // displaces onto the deque: only the LIFO slot's bound lets it run.
        drop(p.spawn(async move {
            let mut round = 0;
            while a_rx.next().await.is_some() {
                round += 1;
                if round == 10 {
                    // The exchange is under way: B waits for our next send.
                    third_tx.send(pool::spawn(async { "third ran" })).unwrap();
                }
                if s.load(Ordering::SeqCst) || b_tx.unbounded_send(()).is_err() {
                    break;
                }
            }
        }));
        let s = stop.clone();
        let a_tx2 = a_tx.clone();
        drop(p.spawn(async move {
            while b_rx.next().await.is_some() {
                if s.load(Ordering::SeqCst) || a_tx2.unbounded_send(()).is_err() {
                    break;
                }
            }
        }));
        a_tx.unbounded_send(()).unwrap();
        let third = third_rx.recv().unwrap();
        assert_eq!(pool::block_on(third).unwrap(), "third ran");
        stop.store(true, Ordering::SeqCst);
    });
}

#[test]
fn a_task_awaiting_many_handles_is_not_polled_once_per_ended_task() {
    watchdog("joiner_behind_queue", 10, || {
        let p = pool(1);
        const TASKS: u64 = 1_000;
        let before = p.metrics().polls;
        let sum = p
            .block_on(p.spawn(async {
                let handles: Vec<_> = (0..TASKS).map(|i| pool::spawn(async move { i })).collect();
                let mut sum = 0;
                for h in handles {
                    sum += h.await.unwrap();
                }
                sum
            }))
            .unwrap();
        assert_eq!(sum, TASKS * (TASKS - 1) / 2);
        // Each task is polled once; the joiner, woken by the first task
        // that ends, waits behind the other queued ones and then finds them
        // all done. Run next at each wake instead, it would be polled once
        // per ended task: 2 000 polls.
        let polls = p.metrics().polls - before;
        assert!(
            polls <= TASKS + 10,
            "{polls} polls for {TASKS} tasks and their joiner"
        );
    });
}
