//! The LIFO slot taken by its owner or by the watcher (`../lifo.rs`,
//! `../watcher.rs`): the task runs exactly once, and when the watcher takes
//! it, its injection wakes the sleeping worker, which then finds it.

use super::sleep::{after_earlier_work, assert_counters_at_rest, idle_until, Outcome, Queue};
use crate::latch::CoreLatch;
use crate::lifo::LifoSlot;
use crate::sleep::Sleep;
use loom::sync::Arc;
use loom::thread;

#[test]
fn a_lifo_task_taken_by_the_watcher_wakes_a_sleeper_and_runs_once() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("watcher_lifo_rescue", &N, || {
        let sleep = Arc::new(Sleep::new(2, None, None, None));
        after_earlier_work(&sleep);
        let injector = Arc::new(Queue::new());
        let slot = Arc::new(LifoSlot::<()>::new());
        let (runnable, task) = async_task::spawn(async {}, |_| {});
        task.detach();
        // Worker 0 put the task in its slot and is in a long poll.
        assert!(slot.put(runnable).is_none());
        let latch = Arc::new(CoreLatch::new()); // worker 1's
        let sleeper = {
            let (sleep, injector, latch) = (sleep.clone(), injector.clone(), latch.clone());
            thread::spawn(move || idle_until(&sleep, 1, &latch, &[], &injector))
        };
        // The watcher: take the task and inject it (`Registry::rescue`).
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
