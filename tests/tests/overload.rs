//! Under overload: `Builder::max_tasks` refuses spawns past the limit with a
//! `SpawnError` (or `spawn`'s panic), frees a place however a task ends and
//! counts every refusal; `Builder::max_blocking_queue` refuses closures that
//! would wait behind a full queue with a rejected `JoinError`, and runs
//! every closure it accepted.

use futures::channel::oneshot;
use pool::Builder;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tests::{wait_for, watchdog};

#[test]
fn max_tasks_zero_is_invalid_input_naming_the_setter() {
    let err = Builder::new().max_tasks(0).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("max_tasks"), "{err}");
}

#[test]
fn spawns_past_max_tasks_are_refused_and_places_free_however_tasks_end() {
    watchdog("max_tasks", 30, || {
        let p = Builder::new()
            .worker_threads(2)
            .max_tasks(3)
            .build()
            .unwrap();
        p.block_on(async {
            // Three live tasks: one completes, one panics, one is aborted.
            let (done_tx, done_rx) = oneshot::channel::<()>();
            let (panic_tx, panic_rx) = oneshot::channel::<()>();
            let completes = pool::try_spawn(async move { done_rx.await.unwrap() }).unwrap();
            let panics = pool::try_spawn(async move {
                panic_rx.await.unwrap();
                panic!("planned");
            })
            .unwrap();
            let aborted = pool::try_spawn(std::future::pending::<()>()).unwrap();

            // A fourth is refused, with the limit and its value named.
            let err = pool::try_spawn(async {}).unwrap_err();
            assert_eq!(err.max_tasks(), 3);
            let shown = err.to_string();
            assert!(shown.contains("max_tasks = 3"), "{shown}");
            // task::Builder: try_spawn gives the SpawnError, spawn an
            // io::Error that carries it.
            let err = pool::task::Builder::new()
                .name("shed")
                .try_spawn(async {})
                .unwrap_err();
            assert_eq!(err.max_tasks(), 3);
            let io = pool::task::Builder::new().spawn(async {}).unwrap_err();
            let inner = io
                .get_ref()
                .and_then(|e| e.downcast_ref::<pool::SpawnError>());
            assert_eq!(inner.map(pool::SpawnError::max_tasks), Some(3), "{io}");
            // pool::spawn panics, naming the limit and its value.
            let panic = std::panic::catch_unwind(|| drop(pool::spawn(async {}))).unwrap_err();
            let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
            assert!(
                message.contains("max_tasks") && message.contains('3'),
                "{message}"
            );
            assert!(message.contains("try_spawn"), "{message}");
            assert_eq!(pool::Handle::current().metrics().rejected_spawns, 4);

            // Each way of ending frees one place.
            done_tx.send(()).unwrap();
            completes.await.unwrap();
            let refill =
                pool::try_spawn(std::future::pending::<()>()).expect("a completed task's place");
            assert!(pool::try_spawn(async {}).is_err());
            panic_tx.send(()).unwrap();
            assert!(panics.await.unwrap_err().is_panic());
            let refill2 =
                pool::try_spawn(std::future::pending::<()>()).expect("a panicked task's place");
            aborted.abort();
            assert!(aborted.await.unwrap_err().is_cancelled());
            let last = pool::try_spawn(async { 7 }).expect("an aborted task's place");
            assert_eq!(last.await.unwrap(), 7);
            refill.abort();
            refill2.abort();
            let _ = (refill.await, refill2.await);
        });
        assert_eq!(p.metrics().rejected_spawns, 5);
    });
}

#[test]
fn local_tasks_take_places_and_block_on_does_not() {
    watchdog("max_tasks: local tasks", 30, || {
        let p = Builder::new()
            .worker_threads(1)
            .max_tasks(2)
            .build()
            .unwrap();
        // block_on's own future is not a task: both places are left.
        let refused = p.block_on(async {
            pool::try_spawn(async {
                // A local task takes the second place...
                let local = pool::spawn_local(std::future::pending::<()>());
                // ...so nothing more is accepted: try_spawn refuses,
                // task::Builder::spawn_local returns the error...
                assert!(pool::try_spawn(async {}).is_err());
                let err = pool::task::Builder::new()
                    .spawn_local(async {})
                    .map(drop)
                    .unwrap_err();
                assert!(err.to_string().contains("max_tasks = 2"), "{err}");
                // ...and spawn_local panics, naming the limit.
                let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    drop(pool::spawn_local(async {}))
                }))
                .unwrap_err();
                let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
                local.abort();
                let _ = local.await;
                message
            })
            .unwrap()
            .await
            .unwrap()
        });
        assert!(refused.contains("max_tasks = 2"), "{refused}");
        assert_eq!(p.metrics().rejected_spawns, 3);
    });
}

#[test]
fn a_full_blocking_queue_rejects_and_every_accepted_closure_runs() {
    watchdog("max_blocking_queue", 30, || {
        let p = Builder::new()
            .worker_threads(1)
            .max_blocking_threads(2)
            .max_blocking_queue(3)
            // pool::fs on the blocking engine: its calls are never refused.
            .io_uring(false)
            .build()
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(std::sync::Mutex::new(release_rx));
        let job = |ran: &Arc<AtomicUsize>, hold: bool| {
            let ran = Arc::clone(ran);
            let release_rx = Arc::clone(&release_rx);
            move || {
                if hold {
                    release_rx.lock().unwrap().recv().unwrap();
                }
                ran.fetch_add(1, Ordering::SeqCst);
            }
        };
        // Both threads busy...
        let running: Vec<_> = (0..2).map(|_| p.spawn_blocking(job(&ran, true))).collect();
        wait_for(
            "both blocking threads to take a closure",
            Duration::from_secs(10),
            || {
                let m = p.metrics();
                m.blocking_threads == 2 && m.blocking_queue_depth == 0
            },
        );
        // ...three closures queue...
        let queued: Vec<_> = (0..3).map(|_| p.spawn_blocking(job(&ran, false))).collect();
        assert_eq!(p.metrics().blocking_queue_depth, 3);
        // ...and the next two are refused at once, never run.
        for _ in 0..2 {
            let err = p.block_on(p.spawn_blocking(job(&ran, false))).unwrap_err();
            assert!(
                err.is_rejected() && !err.is_cancelled() && !err.is_panic(),
                "{err:?}"
            );
            assert!(err.to_string().contains("max_blocking_queue"), "{err}");
        }
        assert_eq!(p.metrics().rejected_blocking, 2);
        // pool::fs's own calls go past the bound.
        let dir = std::env::temp_dir().join(format!("pool-overload-{}", std::process::id()));
        let write = p.spawn(pool::fs::write(dir.clone(), b"accepted"));
        // Every accepted closure runs once the threads are free.
        for _ in 0..2 {
            release_tx.send(()).unwrap();
        }
        for h in running.into_iter().chain(queued) {
            p.block_on(h).unwrap();
        }
        assert_eq!(
            ran.load(Ordering::SeqCst),
            5,
            "the five accepted closures ran"
        );
        p.block_on(write).unwrap().unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(p.metrics().rejected_blocking, 2);
    });
}

#[test]
fn max_blocking_queue_zero_runs_at_once_or_refuses() {
    watchdog("max_blocking_queue(0)", 30, || {
        let p = Builder::new()
            .max_blocking_threads(1)
            .max_blocking_queue(0)
            .build()
            .unwrap();
        // A free thread: accepted.
        assert_eq!(p.block_on(p.spawn_blocking(|| 1)).unwrap(), 1);
        let (tx, rx) = mpsc::channel::<()>();
        let busy = p.spawn_blocking(move || rx.recv().unwrap());
        wait_for(
            "the thread to take the closure",
            Duration::from_secs(10),
            || p.metrics().blocking_queue_depth == 0,
        );
        assert!(p
            .block_on(p.spawn_blocking(|| 2))
            .unwrap_err()
            .is_rejected());
        tx.send(()).unwrap();
        p.block_on(busy).unwrap();
    });
}

/// A closure spawned the moment the last one's result arrives finds its
/// thread still on the way back to the queue: it must count as ready, not
/// busy, or a bound of 0 would refuse a pool with a free thread (and an
/// unbounded pool would start a thread it does not need). An awaiter on a
/// worker sees the result fastest, so it spawns inside that window often.
#[test]
fn back_to_back_closures_find_the_returning_thread_ready() {
    watchdog("back-to-back closures", 60, || {
        let p = Builder::new()
            .worker_threads(2)
            .max_blocking_threads(1)
            .max_blocking_queue(0)
            .build()
            .unwrap();
        let refused = p.block_on(p.spawn(async {
            let mut refused = 0;
            for i in 0..2_000u32 {
                match pool::spawn_blocking(move || i).await {
                    Ok(got) => assert_eq!(got, i),
                    Err(e) if e.is_rejected() => refused += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            refused
        }));
        assert_eq!(
            refused.unwrap(),
            0,
            "closures spawned one after another were refused with a free thread"
        );
        assert_eq!(p.metrics().rejected_blocking, 0);
    });
}
