//! `task_local!`: a value visible to its future and everything it awaits,
//! across awaits and workers, and in no other task.

use pool::Builder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tests::watchdog;

pool::task_local! {
    static REQUEST: u64;
    pub(crate) static NAME: String;
}

#[test]
fn a_scope_is_seen_across_awaits_and_by_nothing_else() {
    watchdog("task-local scopes", 30, || {
        let pool = Builder::new().worker_threads(2).build().unwrap();
        pool.block_on(pool.spawn(async {
            assert!(REQUEST.try_with(|_| ()).is_err(), "unset outside a scope");
            let inner = REQUEST.scope(1, async {
                assert_eq!(REQUEST.get(), 1);
                // Across a timer (the task may resume on the other worker).
                pool::time::sleep(Duration::from_millis(2)).await;
                assert_eq!(REQUEST.get(), 1);
                // A spawned task does not see it.
                let spawned = pool::spawn(async { REQUEST.try_with(|v| *v).ok() });
                assert_eq!(spawned.await.unwrap(), None);
                // A nested scope shadows it, then gives it back.
                let nested = REQUEST.scope(2, async { REQUEST.get() }).await;
                assert_eq!(nested, 2);
                NAME.scope("n".to_string(), async {
                    NAME.with(|n| n.len()) + REQUEST.get() as usize
                })
                .await
            });
            assert_eq!(inner.await, 2);
            assert!(REQUEST.try_with(|_| ()).is_err(), "unset after the scope");
        }))
        .unwrap();
    });
}

#[test]
fn tasks_interleaving_on_one_worker_each_see_their_own_value() {
    watchdog("interleaved task-locals", 30, || {
        let pool = Builder::new().worker_threads(1).build().unwrap();
        let handles: Vec<_> = (0..10u64)
            .map(|i| {
                pool.spawn(REQUEST.scope(i, async move {
                    for _ in 0..50 {
                        pool::yield_now().await; // the others run in between
                        assert_eq!(REQUEST.get(), i);
                    }
                    i
                }))
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(pool.block_on(h).unwrap(), i as u64);
        }
    });
}

/// Sees the task-local when dropped.
struct SeesOnDrop(Arc<AtomicBool>);

impl Drop for SeesOnDrop {
    fn drop(&mut self) {
        self.0.store(
            REQUEST.try_with(|v| *v == 9).unwrap_or(false),
            Ordering::SeqCst,
        );
    }
}

#[test]
fn sync_scope_and_a_future_dropped_inside_its_scope() {
    assert_eq!(REQUEST.sync_scope(5, || REQUEST.get() * 2), 10);
    assert!(REQUEST.try_with(|_| ()).is_err());

    let saw = Arc::new(AtomicBool::new(false));
    let guard = SeesOnDrop(saw.clone());
    let fut = REQUEST.scope(9, async move {
        let _guard = guard;
        std::future::pending::<()>().await
    });
    drop(fut);
    assert!(
        saw.load(Ordering::SeqCst),
        "the future was dropped with its value set"
    );

    let panic = std::panic::catch_unwind(|| REQUEST.with(|_| ())).unwrap_err();
    let msg = panic.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(msg.contains("not set"), "{msg}");
}
