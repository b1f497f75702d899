//! `spawn_local`: `!Send` tasks pinned to the worker that spawned them,
//! woken from any thread, run in turn with the deque's tasks, cancelled on
//! their own thread at shutdown, and refused off a worker.

use futures::channel::oneshot;
use pool::JoinSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;
use tests::{pool, watchdog};

#[test]
fn a_local_task_holding_an_rc_woken_from_another_thread_runs_on_its_own_worker() {
    watchdog("local ping-pong with an outside thread", 30, || {
        let pool = pool(2);
        let (ping_tx, ping_rx) = std::sync::mpsc::channel::<oneshot::Sender<ThreadId>>();
        let outside = thread::spawn(move || {
            // Each round: wait a little so the worker falls asleep, then
            // wake the local task from this thread.
            let mut rounds = 0;
            while let Ok(reply) = ping_rx.recv() {
                if rounds % 10 == 0 {
                    thread::sleep(Duration::from_millis(2));
                }
                let _ = reply.send(thread::current().id());
                rounds += 1;
            }
            rounds
        });
        let homes = pool.block_on(pool.spawn(async move {
            pool::spawn_local(async move {
                let not_send = Rc::new(());
                let home = thread::current().id();
                for _ in 0..500 {
                    let (tx, rx) = oneshot::channel();
                    ping_tx.send(tx).unwrap();
                    let waker_thread = rx.await.unwrap();
                    assert_ne!(waker_thread, home);
                    assert_eq!(thread::current().id(), home, "moved off its worker");
                }
                drop(not_send);
                home
            })
            .await
            .unwrap()
        }));
        assert!(homes.is_ok());
        assert_eq!(outside.join().unwrap(), 500);
    });
}

#[test]
fn off_a_worker_spawn_local_panics_with_a_message_that_says_what_to_do() {
    let panic = std::panic::catch_unwind(|| {
        drop(pool::spawn_local(async {}));
    })
    .unwrap_err();
    let msg = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(msg.contains("off a worker thread"), "{msg}");
    assert!(msg.contains("Pool::block_on"), "{msg}");

    // In Pool::block_on's future on an outside thread, too.
    let pool = pool(1);
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.block_on(async {
            drop(pool::spawn_local(async {}));
        })
    }));
    assert!(panic.is_err());
}

/// Records the thread it is dropped on; not `Send`.
struct DropsOn(Arc<Mutex<Vec<ThreadId>>>, #[allow(dead_code)] Rc<()>);

impl Drop for DropsOn {
    fn drop(&mut self) {
        self.0.lock().unwrap().push(thread::current().id());
    }
}

#[test]
fn at_shutdown_local_tasks_are_cancelled_on_their_own_worker() {
    watchdog("local tasks at shutdown", 30, || {
        let pool = pool(2);
        let dropped_on = Arc::new(Mutex::new(Vec::new()));
        let (homes, handles) = {
            let dropped_on = dropped_on.clone();
            pool.block_on(pool.spawn(async move {
                let mut handles = Vec::new();
                for _ in 0..20 {
                    let d = DropsOn(dropped_on.clone(), Rc::new(()));
                    handles.push(pool::spawn_local(async move {
                        let _d = d;
                        std::future::pending::<u8>().await
                    }));
                }
                (thread::current().id(), handles)
            }))
            .unwrap()
        };
        // Let them all poll once (park on `pending`).
        thread::sleep(Duration::from_millis(20));
        drop(pool);
        let dropped_on = dropped_on.lock().unwrap();
        assert_eq!(dropped_on.len(), 20, "every local future dropped once");
        assert!(
            dropped_on.iter().all(|t| *t == homes),
            "dropped off its worker"
        );
        for h in handles {
            assert!(futures::executor::block_on(h).unwrap_err().is_cancelled());
        }
    });
}

#[test]
fn local_tasks_and_the_deque_take_turns_on_one_worker() {
    watchdog("local and deque fairness", 30, || {
        let pool = pool(1);
        let ran = Arc::new(AtomicBool::new(false));
        let yields_before = pool
            .block_on(pool::spawn({
                let ran = ran.clone();
                async move {
                    let local = pool::spawn_local({
                        let ran = ran.clone();
                        async move {
                            let mut n = 0u32;
                            while !ran.load(Ordering::SeqCst) && n < 100_000 {
                                pool::yield_now().await;
                                n += 1;
                            }
                            n
                        }
                    });
                    pool::spawn(async move { ran.store(true, Ordering::SeqCst) });
                    local.await.unwrap()
                }
            }))
            .unwrap();
        assert!(ran.load(Ordering::SeqCst));
        // A few yields; more if the watcher moved the spawned task to the
        // injector (a slow machine's "long" poll), which a worker looks at
        // every 61st search. Without the turns it would wait all 100 000.
        assert!(
            yields_before <= 130,
            "the deque's task waited {yields_before} yields"
        );
    });
}

#[test]
fn a_local_join_handle_is_awaited_from_another_worker_and_a_join_set_takes_local_members() {
    watchdog("local handles elsewhere", 30, || {
        let pool = pool(2);
        let (handle, home) = pool
            .block_on(pool::spawn(async {
                let h = pool::spawn_local(async {
                    pool::time::sleep(Duration::from_millis(5)).await;
                    thread::current().id()
                });
                (h, thread::current().id())
            }))
            .unwrap();
        // Awaited from the test thread: the output is Send.
        assert_eq!(pool.block_on(handle).unwrap(), home);

        let sum = pool
            .block_on(pool::spawn(async {
                let mut set = JoinSet::new();
                for i in 0..10u32 {
                    let rc = Rc::new(i);
                    set.spawn_local(async move {
                        pool::yield_now().await;
                        *rc
                    });
                }
                set.join_all().await.into_iter().sum::<u32>()
            }))
            .unwrap();
        assert_eq!(sum, 45);
    });
}

#[test]
fn a_local_task_woken_from_another_thread_runs_while_another_local_task_yields_in_a_loop() {
    // The yielding task always leaves the worker's local queue non-empty:
    // the task woken elsewhere (its inbox) must still get its turn, or the
    // yielder spins for ever waiting for it.
    watchdog("a woken local task behind a yielding one", 10, || {
        let pool = pool(2);
        let (tx, rx) = oneshot::channel::<u32>();
        let got = pool.block_on(pool.spawn(async move {
            let (yielder, waiter) = {
                let done = Rc::new(std::cell::Cell::new(false));
                let yielder = {
                    let done = Rc::clone(&done);
                    pool::spawn_local(async move {
                        let mut yields = 0u64;
                        while !done.get() {
                            pool::yield_now().await;
                            yields += 1;
                        }
                        yields
                    })
                };
                let waiter = pool::spawn_local(async move {
                    let got = rx.await.unwrap();
                    done.set(true);
                    got
                });
                (yielder, waiter)
            };
            // Woken by a thread outside the pool, once the yielder runs.
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(20));
                tx.send(7).unwrap();
            });
            let got = waiter.await.unwrap();
            assert!(yielder.await.unwrap() > 0);
            got
        }));
        assert_eq!(got.unwrap(), 7);
    });
}
