//! `Handle::enter`: a thread the pool does not own makes a pool current.
//!
//! Its own test binary: every test checks that the global pool never
//! starts, which is process-wide state.

use pool::Handle;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;
use tests::watchdog;

fn pool_of(workers: usize, name: &str) -> pool::Pool {
    pool::Builder::new()
        .worker_threads(workers)
        .thread_name(name)
        .build()
        .unwrap()
}

/// The name of the thread that ran a task spawned with `pool::spawn` here.
fn spawned_on() -> String {
    let task = pool::spawn(async { std::thread::current().name().unwrap().to_owned() });
    pool::block_on(task).unwrap()
}

#[test]
fn a_plain_thread_spawns_onto_the_entered_pool_not_the_global_one() {
    watchdog("enter: plain thread", 20, || {
        let p = pool_of(1, "entered");
        let handle = p.handle();
        std::thread::spawn(move || {
            let guard = handle.enter();
            assert!(spawned_on().starts_with("entered-"));
            assert_eq!(Handle::current().metrics().workers, 1);
            // Sockets and timers made here belong to the entered pool too:
            // a sleep made on this thread completes with no global pool.
            pool::block_on(pool::time::sleep(Duration::from_millis(5)));
            drop(guard);
            assert!(
                Handle::try_current().is_none(),
                "after the guard, nothing is current (the global pool is not started)"
            );
        })
        .join()
        .unwrap();
        assert!(
            Handle::try_current().is_none(),
            "the global pool never started"
        );
    });
}

#[test]
fn guards_nest_and_each_restores_the_pool_it_replaced() {
    watchdog("enter: nesting", 20, || {
        let a = pool_of(1, "outer");
        let b = pool_of(1, "inner");
        let (ha, hb) = (a.handle(), b.handle());
        std::thread::spawn(move || {
            let outer = ha.enter();
            assert!(spawned_on().starts_with("outer-"));
            {
                let _inner = hb.enter();
                assert!(spawned_on().starts_with("inner-"));
            }
            assert!(spawned_on().starts_with("outer-"));
            drop(outer);
            assert!(Handle::try_current().is_none());
        })
        .join()
        .unwrap();
    });
}

#[test]
fn a_pool_block_on_inside_a_guard_sees_its_own_pool_then_the_guards_again() {
    watchdog("enter: block_on inside", 20, || {
        let a = pool_of(1, "guarded");
        let b = pool_of(1, "blocking");
        let _entered = a.handle().enter();
        let inside = b.block_on(async { spawned_on() });
        assert!(inside.starts_with("blocking-"), "{inside}");
        assert!(spawned_on().starts_with("guarded-"));
    });
}

#[test]
fn a_guard_dropped_out_of_order_panics_with_a_message_and_leaves_memory_valid() {
    watchdog("enter: out of order", 20, || {
        let a = pool_of(1, "first");
        let b = pool_of(1, "second");
        let (ha, hb) = (a.handle(), b.handle());
        std::thread::spawn(move || {
            let first = ha.enter();
            let second = hb.enter();
            let panic = catch_unwind(AssertUnwindSafe(|| drop(first))).unwrap_err();
            let message = panic.downcast_ref::<&str>().copied().unwrap_or_default();
            assert!(message.contains("reverse order"), "{message}");
            // The inner guard still works, and restores the first pool,
            // whose slot the misplaced drop left alive.
            assert!(spawned_on().starts_with("second-"));
            drop(second);
            drop(hb);
            drop(ha);
            assert!(spawned_on().starts_with("first-"));
        })
        .join()
        .unwrap();
    });
}
