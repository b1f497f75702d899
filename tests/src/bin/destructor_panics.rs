//! Scenarios of user destructors that panic, one per process run (an abort
//! would kill the process: `tests/tests/destructor_panics.rs` runs each in
//! its own child and fails that test alone). Prints `ok: SCENARIO` when the
//! pool ran on and every check held.
//!
//! ```text
//! destructor_panics detached_outputs|shutdown|abort|handle_dropped|blocking_handle_dropped|completion
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
        other => panic!("unknown scenario {other:?}"),
    }
    println!("ok: {scenario}");
}
