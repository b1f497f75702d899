//! The sleep protocol with one sleeper blocked in the I/O driver (a stand-in
//! with the driver's `Park` contract, `park.rs`): a post, readiness and
//! shutdown each end its sleep, and none is lost when they race; with two
//! sleepers (one in the driver) one job wakes at most one of them.

use super::park::StandInDriver;
use super::sleep::{after_earlier_work, assert_counters_at_rest, idle_until, Outcome, Queue};
use crate::latch::CoreLatch;
use crate::sleep::{Park, Sleep};
use loom::sync::Arc;
use loom::thread;
use std::task::Waker;

fn sleep_with_driver(workers: usize) -> (Arc<Sleep>, Arc<StandInDriver>) {
    let driver = Arc::new(StandInDriver::default());
    let park: std::sync::Arc<dyn Park> = std::sync::Arc::new(ForwardPark(driver.clone()));
    let sleep = Arc::new(Sleep::new(workers, None, Some(park)));
    // As after the pool's first socket or timer.
    sleep.enable_driver();
    (sleep, driver)
}

/// `Sleep` holds a `std::sync::Arc<dyn Park>`; the model keeps a loom `Arc`
/// to the same stand-in, to deliver readiness.
#[derive(Debug)]
struct ForwardPark(Arc<StandInDriver>);

impl Park for ForwardPark {
    fn try_acquire(&self) -> bool {
        self.0.try_acquire()
    }
    fn park(&self, wakers: &mut Vec<Waker>) {
        self.0.park(wakers)
    }
    fn release(&self) {
        self.0.release()
    }
    fn unpark(&self) {
        self.0.unpark()
    }
}

/// Run idle periods until the worker takes the job (readiness ends a period
/// too; the worker would run that task and look again).
fn until_job(sleep: &Sleep, latch: &CoreLatch, injector: &Queue) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    loop {
        let outcome = idle_until(sleep, 0, latch, &[], injector);
        outcomes.push(outcome);
        if outcome != Outcome::Ready {
            return outcomes;
        }
    }
}

fn injected_job_wakes_the_driver_sleeper_model(earlier_work: bool) {
    let (sleep, _driver) = sleep_with_driver(1);
    if earlier_work {
        after_earlier_work(&sleep);
    }
    let injector = Arc::new(Queue::new());
    let worker = {
        let (sleep, injector) = (sleep.clone(), injector.clone());
        thread::spawn(move || {
            let terminate = CoreLatch::new(); // never set: only the job ends it
            until_job(&sleep, &terminate, &injector)
        })
    };
    injector.push();
    sleep.new_injected_jobs(1);
    // A lost wakeup leaves the worker in `park` forever: loom's deadlock.
    assert_eq!(worker.join().unwrap(), [Outcome::Job]);
    assert_counters_at_rest(&sleep);
}

/// The teeth check runs this model too, with each fence removed.
#[test]
fn injected_job_while_the_worker_falls_asleep_in_the_driver_is_never_lost() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_injected_jec_odd", &N, || {
        injected_job_wakes_the_driver_sleeper_model(true)
    });
}

#[test]
fn injected_job_onto_a_fresh_pool_wakes_the_driver_sleeper() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_injected_jec_even", &N, || {
        injected_job_wakes_the_driver_sleeper_model(false)
    });
}

#[test]
fn readiness_racing_a_post_loses_neither_and_counts_the_sleeper_once() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_readiness_and_post", &N, || {
        let (sleep, driver) = sleep_with_driver(1);
        after_earlier_work(&sleep);
        let injector = Arc::new(Queue::new());
        let worker = {
            let (sleep, injector) = (sleep.clone(), injector.clone());
            thread::spawn(move || until_job(&sleep, &CoreLatch::new(), &injector))
        };
        // The OS reports readiness, then an outside thread injects a job,
        // both racing the worker's fall into the driver.
        driver.deliver(Waker::noop().clone());
        injector.push();
        sleep.new_injected_jobs(1);
        let outcomes = worker.join().unwrap();
        assert_eq!(outcomes.last(), Some(&Outcome::Job), "{outcomes:?}");
        assert!(outcomes.len() <= 2, "one readiness ended {outcomes:?}");
        // A sleeper woken both by readiness and by the post is taken off
        // the sleeping count once: `sleeping` would underflow otherwise.
        assert_counters_at_rest(&sleep);
    });
}

#[test]
fn shutdown_racing_a_worker_falling_asleep_in_the_driver_always_ends_it() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_shutdown", &N, || {
        let (sleep, _driver) = sleep_with_driver(1);
        let terminate = Arc::new(CoreLatch::new());
        let injector = Arc::new(Queue::new());
        let worker = {
            let (sleep, terminate, injector) = (sleep.clone(), terminate.clone(), injector.clone());
            thread::spawn(move || idle_until(&sleep, 0, &terminate, &[], &injector))
        };
        // `Registry::terminate`: set the latch; wake the worker if it sleeps.
        if terminate.set() {
            sleep.wake_specific_thread(0);
        }
        assert_eq!(worker.join().unwrap(), Outcome::Stopped);
        assert_counters_at_rest(&sleep);
    });
}

#[test]
fn two_sleepers_one_in_the_driver_one_injected_job_wakes_at_most_one() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_two_workers_one_job", &N, || {
        let (sleep, _driver) = sleep_with_driver(2);
        after_earlier_work(&sleep);
        let injector = Arc::new(Queue::new());
        let latches = Arc::new([CoreLatch::new(), CoreLatch::new()]);
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let (sleep, injector, latches) = (sleep.clone(), injector.clone(), latches.clone());
                thread::spawn(move || idle_until(&sleep, i, &latches[i], &[], &injector))
            })
            .collect();
        injector.push();
        let woken = sleep.new_injected_jobs(1);
        assert!(woken <= 1, "one job woke {woken} workers");
        while injector.has_job() {
            thread::yield_now();
        }
        for (i, latch) in latches.iter().enumerate() {
            if latch.set() {
                sleep.wake_specific_thread(i);
            }
        }
        let outcomes: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        assert_eq!(
            outcomes.iter().filter(|o| **o == Outcome::Job).count(),
            1,
            "{outcomes:?}"
        );
        assert_counters_at_rest(&sleep);
    });
}
