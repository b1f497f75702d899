//! A worker's task slot (its LIFO slot, or its deferred task) taken by its
//! owner or by the watcher
//! (`../scheduler/slot.rs`, `../scheduler/watcher.rs`): the task runs exactly once, and when the watcher takes
//! it, its injection wakes the sleeping worker, which then finds it. And the
//! watcher's parking: a worker woken from its sleep (to poll, in a pool
//! with a stall handler) never leaves the watcher parked.

use super::sleep::{after_earlier_work, assert_counters_at_rest, idle_until, Outcome, Queue};
use crate::scheduler::slot::TaskSlot;
use crate::sleep::latch::CoreLatch;
use crate::sleep::manager::SleepManager;
use loom::sync::Arc;
use loom::thread;

#[test]
fn a_lifo_task_taken_by_the_watcher_wakes_a_sleeper_and_runs_once() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("watcher_lifo_rescue", &N, || {
        let sleep = Arc::new(SleepManager::new(2, None, None, None));
        after_earlier_work(&sleep);
        let injector = Arc::new(Queue::new());
        let slot = Arc::new(TaskSlot::<()>::new());
        let (runnable, task) = async_task::spawn(async {}, |_| {});
        task.detach();
        // Worker 0 put the task in its slot and is in a long poll.
        assert!(slot.put(runnable).is_none());
        let latch = Arc::new(CoreLatch::new()); // worker 1's
        let sleeper = {
            let (sleep, injector, latch) = (sleep.clone(), injector.clone(), latch.clone());
            thread::spawn(move || idle_until(&sleep, 1, &latch, &[], &injector))
        };
        // The watcher: take the task and inject it (the watcher's `rescue`).
        let watcher = {
            let (sleep, injector, slot) = (sleep.clone(), injector.clone(), slot.clone());
            thread::spawn(move || match slot.take() {
                Some(runnable) => {
                    drop(runnable); // stands in the injector: `injector` marks it
                    injector.push();
                    sleep.new_injected_jobs(1);
                    true
                }
                None => false,
            })
        };
        // Worker 0's poll returns: its next search takes its slot.
        let owner_took_it = slot.take().is_some();
        let watcher_took_it = watcher.join().unwrap();
        assert!(
            owner_took_it != watcher_took_it,
            "the task was taken {} times",
            u8::from(owner_took_it) + u8::from(watcher_took_it)
        );
        if owner_took_it && latch.set() {
            // Nothing for worker 1: the pool shuts down.
            sleep.wake_specific_thread(1);
        }
        // A lost injection leaves worker 1 asleep forever: loom's deadlock.
        let outcome = sleeper.join().unwrap();
        assert_eq!(
            outcome == Outcome::Job,
            watcher_took_it,
            "worker 1 ended with {outcome:?}"
        );
        assert_counters_at_rest(&sleep);
    });
}

#[test]
fn a_worker_woken_from_its_sleep_finds_the_watcher_looking() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("watcher_unpark_on_wake", &N, || {
        // A pool with a stall handler: a wake of a sleeping worker unparks
        // the watcher (`SleepManager::watching_wakes`).
        let sleep = Arc::new(SleepManager::new(1, None, None, None).watching_wakes());
        after_earlier_work(&sleep);
        let injector = Arc::new(Queue::new());
        let latch = Arc::new(CoreLatch::new());
        // The worker idles (perhaps to sleep) until the injected job; then it
        // polls, and needs the watcher looking.
        let worker = {
            let (sleep, injector, latch) = (sleep.clone(), injector.clone(), latch.clone());
            thread::spawn(move || idle_until(&sleep, 0, &latch, &[], &injector))
        };
        // The watcher parks while every worker sleeps (`watcher::run`).
        let watcher = {
            let sleep = sleep.clone();
            thread::spawn(move || {
                if sleep.all_asleep() {
                    assert!(sleep.watcher().park_while(|| sleep.all_asleep()).is_some());
                }
            })
        };
        // The poster: its wake of the sleeper, if it sleeps, unparks the
        // watcher too.
        injector.push();
        sleep.new_injected_jobs(1);
        assert_eq!(worker.join().unwrap(), Outcome::Job);
        // The worker is active: a watcher still parked now would stay parked
        // through its poll. Nothing else unparks it: loom reports a deadlock.
        watcher.join().unwrap();
        assert_counters_at_rest(&sleep);
    });
}
