//! A `spawn_local` task woken on another thread (`sleep/inbox.rs`): the
//! poster pushes into its worker's inbox and wakes that worker if it
//! sleeps (`SleepManager::post_home`); the worker searches its inbox, and looks at
//! it once more in its final check before it blocks. Whatever the
//! interleaving, the worker gets the task, on its condvar and in the
//! driver, and a second worker that sleeps too is not woken for it.
//!
//! Teeth: `POOL_LOOM_TOOTH=skip_inbox_check` leaves the inbox out of the
//! final check, and loom must find the worker asleep with a task in its
//! inbox (a deadlock); `scripts/loom` checks it.

use super::driver::with_driver;
use super::sleep::{assert_counters_at_rest, without_driver};
use crate::sleep::inbox::Inbox;
use crate::sleep::latch::CoreLatch;
use crate::sleep::manager::SleepManager;
use crate::teeth::{pulled, Tooth};
use loom::sync::Arc;
use loom::thread;

/// The idle phase of `WorkerThread::wait_until` for worker `index`, whose
/// inbox is `inbox`: search it, count a fruitless round, get sleepy, sleep.
/// Returns what it took, or `None` if its latch was set.
fn idle_until_inbox(
    sleep: &SleepManager,
    index: usize,
    latch: &CoreLatch,
    inbox: &Inbox<u32>,
) -> Option<u32> {
    let mut idle_state = sleep.start_looking(index, true);
    let mut wakers = Vec::new();
    let mut taken = Vec::new();
    while !latch.probe() {
        inbox.take_into(&mut taken);
        if let Some(item) = taken.pop() {
            sleep.work_found(|| false);
            return Some(item);
        }
        // The final check of the real worker: the injector (empty here),
        // then its inbox.
        sleep.no_work_found(
            &mut idle_state,
            latch,
            || !pulled(Tooth::SkipInboxCheck) && inbox.has_items(),
            &mut wakers,
            None,
        );
        // The driver's sleep brings no readiness here (nobody delivers it).
        assert!(wakers.is_empty());
    }
    sleep.work_found(|| false);
    None
}

/// Worker 0 idles; this thread (another worker's task, or an outside
/// thread) posts a task to its inbox. With `second_sleeper`, worker 1 idles
/// too: the post wakes worker 0 by name, never "some sleeper", and worker 1
/// is stopped by its latch at the end.
fn local_wake_model(sleep: Arc<SleepManager>, second_sleeper: bool) {
    let inbox = Arc::new(Inbox::new());
    let home = {
        let (sleep, inbox) = (sleep.clone(), inbox.clone());
        thread::spawn(move || {
            let terminate = CoreLatch::new(); // never set: only the task ends it
            idle_until_inbox(&sleep, 0, &terminate, &inbox)
        })
    };
    let other = second_sleeper.then(|| {
        let sleep = sleep.clone();
        let latch = Arc::new(CoreLatch::new());
        let worker = {
            let latch = latch.clone();
            thread::spawn(move || {
                let empty = Inbox::new();
                idle_until_inbox(&sleep, 1, &latch, &empty)
            })
        };
        (worker, latch)
    });
    let woken = sleep.post_home(0, &inbox, 7).expect("the inbox is open");
    // If the post were lost, worker 0 would sleep forever: loom reports a
    // deadlock.
    assert_eq!(home.join().unwrap(), Some(7), "worker 0 ran the task");
    if let Some((worker, latch)) = other {
        // Worker 1 was never woken for it: only its latch ends its idling.
        if latch.set() {
            sleep.wake_specific_thread(1);
        }
        assert_eq!(worker.join().unwrap(), None);
    }
    let _ = woken;
    assert_counters_at_rest(&sleep);
}

/// The teeth check: `scripts/loom` runs this model without the inbox in the
/// final check and requires loom to report the deadlock.
#[test]
fn a_local_task_woken_from_another_thread_reaches_its_sleeping_worker() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("inbox_condvar", &N, || {
        local_wake_model(without_driver(1), false)
    });
}

#[test]
fn a_local_task_woken_from_another_thread_reaches_its_worker_in_the_driver() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("inbox_driver", &N, || {
        local_wake_model(with_driver(1).0, false)
    });
}

#[test]
fn a_local_wake_reaches_its_own_worker_while_another_sleeps() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("inbox_two_sleepers", &N, || {
        local_wake_model(without_driver(2), true)
    });
}
