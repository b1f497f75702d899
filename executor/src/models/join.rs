//! `join`'s stack job: its owner pushes it, runs the first half, then pops
//! it back, or, if a thief took it, waits for its latch (running other work,
//! sleeping through the protocol); the thief runs it and sets the owner's
//! latch, waking the owner if it sleeps. (`join/mod.rs`: the owner's
//! `WorkerThread::wait_until` is `idle_until` here, the thief's search the
//! same; the latch is the real `CoreLatch` that `SpinLatch` wraps.)

use super::sleep::{assert_counters_at_rest, idle_until, without_driver, Outcome, Queue};
use crate::sleep::latch::CoreLatch;
use crate::sync::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

#[test]
fn a_stack_job_runs_once_popped_back_or_stolen_and_its_owner_always_returns() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("join_stack_job", &N, || {
        let sleep = without_driver(2);
        let deque = Arc::new(Queue::new()); // the owner's job deque
        let injector = Arc::new(Queue::new()); // empty: jobs never go there
        let job_latch = Arc::new(CoreLatch::new()); // the StackJob's SpinLatch
        let runs = Arc::new(AtomicUsize::new(0));
        let thief_latch = Arc::new(CoreLatch::new()); // worker 1's terminate
        let thief = {
            let (sleep, deque, injector, job_latch, runs, thief_latch) = (
                sleep.clone(),
                deque.clone(),
                injector.clone(),
                job_latch.clone(),
                runs.clone(),
                thief_latch.clone(),
            );
            thread::spawn(move || {
                if idle_until(&sleep, 1, &thief_latch, &[&deque], &injector) == Outcome::Job {
                    // `StackJob::execute`: the result, then `SpinLatch::set`.
                    runs.fetch_add(1, Ordering::Relaxed);
                    if job_latch.set() {
                        sleep.wake_specific_thread(0);
                    }
                }
            })
        };
        // This thread is worker 0, the owner: push, post, run `a`, pop back.
        deque.push();
        sleep.new_internal_jobs(1);
        if deque.take() {
            runs.fetch_add(1, Ordering::Relaxed); // run inline
        } else {
            // Stolen: wait for the latch; the thief's set ends the wait.
            assert_eq!(
                idle_until(&sleep, 0, &job_latch, &[&deque], &injector),
                Outcome::Stopped
            );
        }
        // The owner returns only once the job ran, and exactly once.
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        // The pool shuts down: stop the thief if it is still searching.
        if thief_latch.set() {
            sleep.wake_specific_thread(1);
        }
        thief.join().unwrap();
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        assert_counters_at_rest(&sleep);
    });
}
