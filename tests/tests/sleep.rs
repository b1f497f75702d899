//! The sleep protocol seen through `Metrics`: idle workers fall asleep, one
//! new task wakes at most one worker, and no posted work is ever lost.
//! (Idle CPU is measured in `idle_cpu.rs`, a process of its own.)

use std::time::Duration;
use tests::{pool, wait_until_asleep, watchdog};

#[test]
fn an_idle_pool_falls_asleep() {
    watchdog("idle_pool_sleeps", 20, || {
        let p = pool(4);
        wait_until_asleep(&p);
        // Nothing was posted, so nothing woke a worker: each fell asleep
        // once and stayed asleep (a worker that woke spuriously, or woke
        // another, would count a wakeup and sleep again).
        let m = p.metrics();
        assert_eq!((m.sleeps, m.wakeups), (4, 0), "{m:?}");
        // Work from outside wakes workers; after it they all sleep again.
        p.block_on(async {
            let hs: Vec<_> = (0..100).map(|i| pool::spawn(async move { i })).collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        wait_until_asleep(&p);
        let after = p.metrics();
        assert!(
            after.wakeups > m.wakeups && after.sleeps > m.sleeps,
            "100 spawns onto a sleeping pool woke nobody: {m:?} -> {after:?}"
        );
    });
}

#[test]
fn one_spawn_onto_a_sleeping_pool_wakes_exactly_one_worker() {
    watchdog("one_spawn_one_wakeup", 20, || {
        let p = pool(4);
        for round in 0..20 {
            wait_until_asleep(&p);
            let before = p.metrics();
            let h = p.spawn(async { 1 });
            assert_eq!(p.block_on(h).unwrap(), 1);
            wait_until_asleep(&p);
            let after = p.metrics();
            assert_eq!(
                after.wakeups - before.wakeups,
                1,
                "round {round}: one task must wake exactly one of four sleeping workers"
            );
        }
    });
}

#[test]
fn a_spawn_from_a_worker_onto_a_sleeping_pool_wakes_at_most_one() {
    watchdog("internal_spawn_wakeups", 20, || {
        let p = pool(4);
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let parent = p.spawn(async move {
            rx.await.unwrap();
            // This worker is awake and busy; the three others sleep.
            pool::spawn(async {}).await.unwrap();
        });
        wait_until_asleep(&p);
        let before = p.metrics();
        tx.send(()).unwrap();
        p.block_on(parent).unwrap();
        wait_until_asleep(&p);
        let woken = p.metrics().wakeups - before.wakeups;
        // One wake for the parent (woken from outside), at most one for the
        // child it spawned.
        assert!(
            (1..=2).contains(&woken),
            "woke {woken} workers for two tasks"
        );
    });
}

#[test]
fn work_posted_while_workers_fall_asleep_is_never_lost() {
    watchdog("no_lost_wakeup", 60, || {
        let p = pool(2);
        for round in 0..300 {
            // Vary the idle gap so the spawn lands in every phase of the
            // idle loop: searching, sleepy, falling asleep, asleep.
            let gap = Duration::from_micros((round % 30) * 7);
            std::thread::sleep(gap);
            let h = p.spawn(async move { round });
            let got = tests::watchdog(&format!("round {round}"), 5, {
                let h = h;
                move || pool::block_on(h).unwrap()
            });
            assert_eq!(got, round);
        }
    });
}
