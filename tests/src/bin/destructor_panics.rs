//! Scenarios of user destructors (and other user code the pool calls:
//! thread hooks, the deadlock handler) that panic, one per process run (an
//! abort would kill the process: `tests/tests/destructor_panics.rs` runs
//! each in its own child and fails that test alone). Prints `ok: SCENARIO`
//! when the pool ran on and every check held.
//!
//! ```text
//! destructor_panics detached_outputs|shutdown|abort|handle_dropped|blocking_handle_dropped|completion|hooks|deadlock_handler
//! ```

use pool::Builder;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Counts its drops; panics in `drop` when `panics`.
struct Bomb {
    drops: Arc<AtomicUsize>,
    panics: bool,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.panics {
            panic!("a user destructor panicked (on purpose)");
        }
    }
}

fn bomb(drops: &Arc<AtomicUsize>, panics: bool) -> Bomb {
    Bomb {
        drops: drops.clone(),
        panics,
    }
}

fn pool() -> pool::Pool {
    Builder::new().worker_threads(2).build().unwrap()
}

/// Two tasks that can only finish together, so both workers must be alive
/// to run them.
fn both_workers_run(p: &pool::Pool) {
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let b = barrier.clone();
            p.spawn(async move {
                b.wait();
            })
        })
        .collect();
    for h in handles {
        p.block_on(h).unwrap();
    }
}

fn main() {
    let scenario = std::env::args().nth(1).expect("a scenario name");
    let drops = Arc::new(AtomicUsize::new(0));
    match scenario.as_str() {
        "detached_outputs" => {
            // 200 detached tasks whose output panics when dropped.
            let p = pool();
            for _ in 0..200 {
                let d = drops.clone();
                drop(p.spawn(async move { bomb(&d, true) }));
            }
            while drops.load(Ordering::SeqCst) < 200 {
                std::thread::yield_now();
            }
            // The workers went on.
            assert_eq!(p.block_on(p.spawn(async { 7 })).unwrap(), 7);
        }
        "shutdown" => {
            // 100 pending tasks, 10 of whose futures panic when dropped; the
            // pool is dropped.
            let p = pool();
            let handles: Vec<_> = (0..100)
                .map(|i| {
                    let b = bomb(&drops, i % 10 == 0);
                    p.spawn(async move {
                        let _b = b;
                        std::future::pending::<()>().await
                    })
                })
                .collect();
            drop(p);
            assert_eq!(
                drops.load(Ordering::SeqCst),
                100,
                "each future dropped once"
            );
            let errors: Vec<_> = handles
                .into_iter()
                .map(|h| pool::block_on(h).unwrap_err())
                .collect();
            assert_eq!(errors.iter().filter(|e| e.is_panic()).count(), 10);
            assert_eq!(errors.iter().filter(|e| e.is_cancelled()).count(), 90);
        }
        "abort" => {
            // Pending tasks whose futures panic when dropped, each aborted.
            let p = pool();
            let handles: Vec<_> = (0..20)
                .map(|_| {
                    let b = bomb(&drops, true);
                    p.spawn(async move {
                        let _b = b;
                        std::future::pending::<()>().await
                    })
                })
                .collect();
            for h in &handles {
                h.abort();
            }
            for h in handles {
                assert!(p.block_on(h).unwrap_err().is_panic());
            }
            assert_eq!(drops.load(Ordering::SeqCst), 20);
            assert_eq!(p.block_on(p.spawn(async { 7 })).unwrap(), 7);
        }
        "handle_dropped" | "blocking_handle_dropped" => {
            // A finished task (or blocking closure) whose output panics when
            // dropped; its handle is dropped unread.
            let p = pool();
            let d = drops.clone();
            let h = if scenario == "handle_dropped" {
                p.spawn(async move { bomb(&d, true) })
            } else {
                p.spawn_blocking(move || bomb(&d, true))
            };
            while !h.is_finished() {
                std::thread::yield_now();
            }
            let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(h)));
            assert!(dropped.is_ok(), "dropping a JoinHandle panicked");
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        }
        "completion" => {
            // A future that completes, and panics when dropped afterwards:
            // its handle gives the panic.
            struct ReadyThenBomb(#[allow(dead_code)] Bomb);
            impl std::future::Future for ReadyThenBomb {
                type Output = u32;
                fn poll(
                    self: std::pin::Pin<&mut Self>,
                    _: &mut std::task::Context<'_>,
                ) -> std::task::Poll<u32> {
                    std::task::Poll::Ready(1)
                }
            }
            let p = pool();
            let err = p
                .block_on(p.spawn(ReadyThenBomb(bomb(&drops, true))))
                .unwrap_err();
            assert!(err.is_panic());
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        }
        "hooks" => {
            // Thread start and stop hooks that panic, with payloads that
            // panic when dropped: every worker still runs tasks.
            let (start, stop) = (drops.clone(), drops.clone());
            let p = Builder::new()
                .worker_threads(2)
                .on_thread_start(move || std::panic::panic_any(bomb(&start, true)))
                .on_thread_stop(move || std::panic::panic_any(bomb(&stop, true)))
                .build()
                .unwrap();
            both_workers_run(&p);
            drop(p);
            assert_eq!(drops.load(Ordering::SeqCst), 4, "two starts, two stops");
        }
        "deadlock_handler" => {
            // The deadlock handler panics (payload panicking when dropped)
            // on a worker going to sleep while the other is marked blocked.
            let d = drops.clone();
            let p = Builder::new()
                .worker_threads(2)
                .deadlock_handler(move || std::panic::panic_any(bomb(&d, true)))
                .build()
                .unwrap();
            let (tx, rx) = std::sync::mpsc::channel::<u32>();
            let marked = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let m = marked.clone();
            // A busy task keeps the other worker active until this one is
            // marked, so the handler fires when that worker falls asleep.
            let busy = p.spawn(async move {
                while !m.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
            });
            let blocked = p.spawn(async move {
                pool::mark_blocked();
                marked.store(true, Ordering::SeqCst);
                let v = rx.recv().unwrap();
                pool::mark_unblocked();
                v
            });
            p.block_on(busy).unwrap();
            // The handler's payload dropped (after the panic hook printed
            // it) means the handler ran and its panic was caught.
            while drops.load(Ordering::SeqCst) == 0 {
                std::thread::yield_now();
            }
            assert_eq!(p.metrics().deadlocks, 1);
            tx.send(5).unwrap();
            assert_eq!(p.block_on(blocked).unwrap(), 5);
            assert_eq!(drops.load(Ordering::SeqCst), 1);
            both_workers_run(&p);
        }
        other => panic!("unknown scenario {other:?}"),
    }
    println!("ok: {scenario}");
}
