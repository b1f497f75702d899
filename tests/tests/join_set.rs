//! `JoinSet` and `AbortHandle`: completion order, aborts (on drop, all,
//! one), panics as `JoinError`, join_all, shutdown, ten thousand members,
//! and the budget a set spends.

use pool::JoinSet;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tests::{pool, watchdog, DropCounter};

#[test]
fn join_next_returns_members_in_completion_order() {
    watchdog("completion order", 20, || {
        let pool = pool(2);
        pool.block_on(async {
            let mut set = JoinSet::new();
            // Spawned slowest first: each finishes 20 ms after the one below.
            for i in (0..5u64).rev() {
                set.spawn(async move {
                    pool::time::sleep(Duration::from_millis(20 * (i + 1))).await;
                    i
                });
            }
            assert_eq!(set.len(), 5);
            let mut order = Vec::new();
            while let Some(r) = set.join_next().await {
                order.push(r.unwrap());
            }
            assert_eq!(order, [0, 1, 2, 3, 4], "completion order, not spawn order");
            assert!(set.is_empty());
            assert!(set.join_next().await.is_none());
        });
    });
}

#[test]
fn dropping_the_set_aborts_every_member_and_drops_each_future_once() {
    watchdog("drop aborts", 20, || {
        let pool = pool(2);
        let drops = DropCounter::new();
        let started = Arc::new(AtomicUsize::new(0));
        let set = pool.block_on(async {
            let mut set = JoinSet::new();
            for _ in 0..100 {
                let tracked = drops.track();
                let started = started.clone();
                set.spawn(async move {
                    let _tracked = tracked;
                    started.fetch_add(1, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                });
            }
            set
        });
        tests::wait_for("members started", Duration::from_secs(10), || {
            started.load(Ordering::SeqCst) == 100
        });
        assert_eq!(drops.drops(), 0);
        drop(set);
        tests::wait_for("every member dropped", Duration::from_secs(10), || {
            drops.drops() >= 100
        });
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(drops.drops(), 100, "each future dropped exactly once");
        assert_eq!(pool.tasks().len(), 0, "no member is still live");
    });
}

#[test]
fn panics_and_aborts_come_back_as_join_errors() {
    watchdog("panics and aborts", 20, || {
        let pool = pool(2);
        pool.block_on(async {
            let mut set = JoinSet::new();
            set.spawn(async { panic!("member panicked") });
            let stuck = set.spawn(std::future::pending::<()>());
            set.spawn(async {});
            let mut panics = 0;
            let mut cancelled = 0;
            let mut ok = 0;
            stuck.abort();
            while let Some(r) = set.join_next().await {
                match r {
                    Ok(()) => ok += 1,
                    Err(e) if e.is_panic() => {
                        let payload = e.into_panic();
                        assert_eq!(payload.downcast_ref::<&str>(), Some(&"member panicked"));
                        panics += 1;
                    }
                    Err(e) => {
                        assert!(e.is_cancelled());
                        cancelled += 1;
                    }
                }
            }
            assert_eq!((ok, panics, cancelled), (1, 1, 1));
            assert!(stuck.is_finished());
        });
    });
}

#[test]
fn abort_all_keeps_members_until_joined_and_shutdown_empties_the_set() {
    watchdog("abort_all, shutdown", 20, || {
        let pool = pool(2);
        pool.block_on(async {
            let mut set = JoinSet::new();
            for _ in 0..10 {
                set.spawn(std::future::pending::<u8>());
            }
            set.spawn(async { 7u8 });
            // Let the quick one finish before the abort.
            pool::time::sleep(Duration::from_millis(20)).await;
            set.abort_all();
            assert_eq!(set.len(), 11, "aborted members stay until joined");
            let mut results = Vec::new();
            while let Some(r) = set.join_next().await {
                results.push(r.map_err(|e| e.is_cancelled()));
            }
            assert_eq!(results.iter().filter(|r| **r == Err(true)).count(), 10);
            assert_eq!(results.iter().filter(|r| **r == Ok(7)).count(), 1);

            let drops = DropCounter::new();
            for _ in 0..10 {
                let tracked = drops.track();
                set.spawn(async move {
                    let _tracked = tracked;
                    std::future::pending::<u8>().await
                });
            }
            set.shutdown().await;
            assert!(set.is_empty());
            assert_eq!(drops.drops(), 10, "shutdown waited for every future's drop");
        });
    });
}

#[test]
fn join_all_returns_every_output_and_resumes_a_panic() {
    watchdog("join_all", 20, || {
        let pool = pool(2);
        let mut outputs = pool.block_on(async {
            let mut set = JoinSet::new();
            for i in 0..50u32 {
                set.spawn(async move { i });
            }
            set.spawn_blocking(|| 50);
            set.join_all().await
        });
        outputs.sort_unstable();
        assert_eq!(outputs, (0..=50).collect::<Vec<_>>());

        let drops = DropCounter::new();
        let tracked = drops.track();
        let panic = pool.block_on(pool.spawn(async move {
            let mut set = JoinSet::new();
            set.spawn(async move {
                let _tracked = tracked;
                std::future::pending::<()>().await
            });
            set.spawn(async { panic!("the first panic") });
            set.join_all().await;
        }));
        let payload = panic.unwrap_err().into_panic();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"the first panic"));
        tests::wait_for("the other member aborted", Duration::from_secs(10), || {
            drops.drops() == 1
        });
    });
}

#[test]
fn ten_thousand_members_finish_and_each_id_comes_back_once() {
    watchdog("10 000 members", 60, || {
        let pool = pool(2);
        pool.block_on(async {
            let mut set = JoinSet::new();
            let mut ids = HashSet::new();
            for i in 0..10_000u32 {
                let abort = set.spawn(async move {
                    pool::time::sleep(Duration::from_millis(1 + u64::from(i % 7))).await;
                    i
                });
                assert!(ids.insert(abort.id()), "ids are unique");
            }
            assert_eq!(set.len(), 10_000);
            let mut seen = vec![false; 10_000];
            while let Some(r) = set.join_next().await {
                let i = r.unwrap() as usize;
                assert!(!seen[i], "member {i} joined twice");
                seen[i] = true;
            }
            assert!(seen.iter().all(|s| *s));
        });
    });
}

#[test]
fn abort_handles_from_join_handles_cancel_from_any_thread() {
    watchdog("abort handles", 20, || {
        let pool = pool(2);
        let handle = pool.spawn(std::future::pending::<()>());
        let abort = handle.abort_handle();
        assert_eq!(abort.id(), handle.id());
        assert!(!abort.is_finished());
        let clone = abort.clone();
        std::thread::spawn(move || clone.abort()).join().unwrap();
        assert!(pool.block_on(handle).unwrap_err().is_cancelled());
        tests::wait_for("is_finished", Duration::from_secs(5), || {
            abort.is_finished()
        });
        abort.abort(); // after the end: nothing happens

        // A handle taken after the task ended is finished at once, and
        // aborting it changes nothing.
        let done = pool.spawn(async { 5 });
        while !done.is_finished() {
            std::thread::yield_now();
        }
        let late = done.abort_handle();
        assert!(late.is_finished());
        late.abort();
        assert_eq!(pool.block_on(done).unwrap(), 5);
    });
}

#[test]
fn the_dump_lists_members_by_the_ids_of_their_abort_handles() {
    watchdog("dump", 20, || {
        let pool = pool(2);
        let set_ids = pool.block_on(async {
            let mut set = JoinSet::new();
            let ids: HashSet<_> = (0..5)
                .map(|_| set.spawn(std::future::pending::<()>()).id())
                .collect();
            (set, ids)
        });
        let (set, ids) = set_ids;
        let dumped: HashSet<_> = pool.tasks().iter().map(|t| t.id).collect();
        assert!(ids.is_subset(&dumped), "{ids:?} not in {dumped:?}");
        drop(set);
        tests::wait_for(
            "members gone from the dump",
            Duration::from_secs(10),
            || pool.tasks().iter().all(|t| !ids.contains(&t.id)),
        );
    });
}
