//! `block_on`: on plain threads, on workers (no deadlock even with one
//! worker), nested, and which pool is current.

use futures::channel::{mpsc as fmpsc, oneshot};
use futures::{SinkExt, StreamExt};
use pool::Handle;
use std::time::Duration;
use tests::{pool, wait_until_asleep, watchdog};

#[test]
fn block_on_a_plain_future_on_a_plain_thread() {
    watchdog("plain_block_on", 10, || {
        assert_eq!(pool::block_on(async { 2 + 2 }), 4);
    });
}

#[test]
fn block_on_wakes_when_another_thread_completes_its_future() {
    watchdog("cross_thread_wake", 10, || {
        let (tx, rx) = oneshot::channel();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.send(8).unwrap();
        });
        assert_eq!(pool::block_on(rx).unwrap(), 8);
        t.join().unwrap();
    });
}

#[test]
fn block_on_inside_a_task_on_a_one_worker_pool_runs_the_task_it_waits_for() {
    watchdog("block_on_in_task_one_worker", 10, || {
        let p = pool(1);
        let out = p.block_on(p.spawn(async {
            // The awaited task lands on this same worker's deque: the only
            // way it runs is the worker running it while it blocks.
            let inner = pool::spawn(async { 40 });
            pool::block_on(inner).unwrap() + 2
        }));
        assert_eq!(out.unwrap(), 42);
    });
}

#[test]
fn block_on_inside_a_task_on_one_worker_runs_outside_spawns_too() {
    watchdog("block_on_in_task_injected", 10, || {
        let p = pool(1);
        let handle = p.handle();
        let (tx, rx) = oneshot::channel::<u32>();
        let waiter = p.spawn(async move { pool::block_on(rx).unwrap() });
        // Wait until the worker sleeps inside that block_on, then spawn from
        // outside the task that completes it: the spawn must wake the worker.
        wait_until_asleep(&p);
        drop(handle.spawn(async move { tx.send(7).unwrap() }));
        assert_eq!(p.block_on(waiter).unwrap(), 7);
    });
}

#[test]
fn nested_block_on_on_one_thread_does_not_lose_the_outer_wake() {
    watchdog("nested_block_on", 10, || {
        let (outer_tx, outer_rx) = oneshot::channel::<u32>();
        let (inner_tx, inner_rx) = oneshot::channel::<u32>();
        let t = std::thread::spawn(move || {
            // Complete the outer future first, while the inner block_on runs.
            outer_tx.send(1).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            inner_tx.send(2).unwrap();
        });
        let v = pool::block_on(async move {
            let inner = pool::block_on(inner_rx).unwrap();
            outer_rx.await.unwrap() + inner
        });
        assert_eq!(v, 3);
        t.join().unwrap();
    });
}

#[test]
fn pool_block_on_makes_its_pool_current() {
    watchdog("pool_block_on_current", 10, || {
        let p = pool(3);
        assert_eq!(p.block_on(async { Handle::current().metrics().workers }), 3);
        let (a, b) = p.block_on(async {
            let h = pool::spawn(async { Handle::current().metrics().workers });
            (
                h.await.unwrap(),
                Handle::try_current().unwrap().metrics().workers,
            )
        });
        assert_eq!((a, b), (3, 3));
    });
}

#[test]
fn pool_block_on_on_another_pools_worker_spawns_onto_the_entered_pool() {
    watchdog("entered_inside_other_worker", 10, || {
        let outer = pool(1);
        let inner = std::sync::Arc::new(pool(2));
        let inner2 = inner.clone();
        let (entered, worker) = outer
            .block_on(outer.spawn(async move {
                // On a worker of `outer`, `inner` is entered while its future
                // is polled: a free spawn there goes to `inner`.
                let h = inner2.block_on(async {
                    pool::spawn(async { Handle::current().metrics().workers }).await
                });
                // Outside that block_on, the worker's own pool is current.
                let worker = Handle::current().metrics().workers;
                (h.unwrap(), worker)
            }))
            .unwrap();
        assert_eq!((entered, worker), (2, 1));
        assert_eq!(inner.metrics().spawned, 1);
    });
}

#[test]
fn a_future_woken_many_times_wakes_no_worker() {
    watchdog("block_on_wakes_no_worker", 20, || {
        let p = pool(2);
        wait_until_asleep(&p);
        let before = p.metrics();
        let (mut tx, mut rx) = fmpsc::channel::<u32>(1);
        let t = std::thread::spawn(move || {
            pool::block_on(async move {
                for i in 0..1_000 {
                    tx.send(i).await.unwrap();
                }
            })
        });
        // Each message wakes this thread's latch; none may touch the pool.
        let sum = pool::block_on(async move {
            let mut sum = 0;
            while let Some(i) = rx.next().await {
                sum += i;
            }
            sum
        });
        t.join().unwrap();
        assert_eq!(sum, 999 * 1_000 / 2);
        let after = p.metrics();
        assert_eq!(
            after.wakeups, before.wakeups,
            "a block_on wake woke a worker"
        );
        assert_eq!(after.sleeps, before.sleeps, "workers stayed asleep");
    });
}

#[test]
fn block_on_on_a_worker_is_woken_by_its_latch_from_outside() {
    watchdog("worker_latch_wake", 10, || {
        let p = pool(2);
        let (tx, rx) = oneshot::channel::<u32>();
        let waiter = p.spawn(async move { pool::block_on(rx).unwrap() });
        wait_until_asleep(&p);
        let before = p.metrics();
        tx.send(5).unwrap();
        assert_eq!(p.block_on(waiter).unwrap(), 5);
        let woken = p.metrics().wakeups - before.wakeups;
        assert_eq!(woken, 1, "exactly the blocked worker was woken");
    });
}
