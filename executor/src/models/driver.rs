//! The sleep protocol with one sleeper blocked in the I/O driver (a stand-in
//! with the driver's `Park` contract, `park.rs`): the models of `sleep.rs`
//! (an injected job, shutdown, two sleepers) run again with a driver, and
//! readiness racing a post loses neither and counts the sleeper woken once;
//! enabling the driver (a pool's first socket) never misses a sleeper, and
//! neither does a busy worker's poll without blocking.

use super::park::{Forward, StandInDriver};
use super::sleep::{
    after_earlier_work, assert_counters_at_rest, idle_until, idle_until_job, injected_job_model,
    shutdown_model, two_sleepers_model, Outcome, Queue,
};
use crate::sleep::latch::CoreLatch;
use crate::sleep::manager::SleepManager;
use crate::sleep::park::Park;
use loom::sync::Arc;
use loom::thread;
use std::task::Waker;

/// A `SleepManager` whose first sleeper blocks in a stand-in driver, as in a pool
/// that has used I/O; and that driver, to deliver readiness.
pub(super) fn with_driver(workers: usize) -> (Arc<SleepManager>, Arc<StandInDriver>) {
    let (sleep, driver) = with_driver_disabled(workers);
    // As after the pool's first socket or timer.
    sleep.enable_driver();
    (sleep, driver)
}

/// As a new pool: the driver is there, but sleepers use their condvars until
/// the first socket or timer enables it.
fn with_driver_disabled(workers: usize) -> (Arc<SleepManager>, Arc<StandInDriver>) {
    let driver = Arc::new(StandInDriver::default());
    let park: std::sync::Arc<dyn Park> = std::sync::Arc::new(Forward(driver.clone()));
    (
        Arc::new(SleepManager::new(workers, None, Some(park), None)),
        driver,
    )
}

/// The teeth check runs this model too, with each fence removed.
#[test]
fn injected_job_while_the_worker_falls_asleep_in_the_driver_is_never_lost() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_injected_jec_odd", &N, || {
        injected_job_model(with_driver(1).0, true)
    });
}

#[test]
fn injected_job_onto_a_fresh_pool_wakes_the_driver_sleeper() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_injected_jec_even", &N, || {
        injected_job_model(with_driver(1).0, false)
    });
}

#[test]
fn readiness_racing_a_post_loses_neither_and_counts_the_sleeper_once() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_readiness_and_post", &N, || {
        let (sleep, driver) = with_driver(1);
        after_earlier_work(&sleep);
        let injector = Arc::new(Queue::new());
        let worker = {
            let (sleep, injector) = (sleep.clone(), injector.clone());
            thread::spawn(move || idle_until_job(&sleep, &CoreLatch::new(), &injector))
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
    super::model("driver_shutdown", &N, || shutdown_model(with_driver(1).0));
}

#[test]
fn two_sleepers_one_in_the_driver_one_injected_job_wakes_at_most_one() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_two_workers_one_job", &N, || {
        two_sleepers_model(with_driver(2).0)
    });
}

/// The pool's first socket (`SleepManager::enable_driver`) races a worker falling
/// asleep on its condvar; readiness then comes for that socket. If enabling
/// missed the sleeper, nobody would be in the driver to see the readiness:
/// loom's deadlock.
#[test]
fn enabling_the_driver_never_leaves_readiness_unwatched() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_enable_vs_sleep", &N, || {
        let (sleep, driver) = with_driver_disabled(1);
        readiness_reaches_a_sleeper(&sleep, &driver, 0, || {
            sleep.enable_driver();
        });
    });
}

/// Worker `index` idles while `race` runs; then readiness comes, and the
/// worker must end its idle period with it (loom's deadlock if nobody is
/// in the driver to see it).
fn readiness_reaches_a_sleeper(
    sleep: &Arc<SleepManager>,
    driver: &StandInDriver,
    index: usize,
    race: impl FnOnce(),
) {
    let worker = {
        let sleep = sleep.clone();
        thread::spawn(move || idle_until(&sleep, index, &CoreLatch::new(), &[], &Queue::new()))
    };
    race();
    driver.deliver(Waker::noop().clone());
    assert_eq!(worker.join().unwrap(), Outcome::Ready);
    assert_counters_at_rest(sleep);
}

/// A worker falls asleep while a busy worker holds the driver for a poll
/// without blocking (`WorkerThread::poll_driver`); readiness then comes.
/// If the sleeper found the driver held, blocked on its condvar, and the
/// holder's release did not wake it (`SleepManager::driver_released`), nobody
/// would be in the driver to see the readiness: loom's deadlock. The
/// teeth check removes the missing sleeper's fence (#6).
#[test]
fn a_busy_workers_poll_never_leaves_readiness_unwatched() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("driver_busy_poll_vs_sleep", &N, || {
        let (sleep, driver) = with_driver(2);
        readiness_reaches_a_sleeper(&sleep, &driver, 1, || {
            // Worker 0, busy: a poll without blocking that finds nothing.
            if driver.try_acquire() {
                driver.release();
                sleep.driver_released();
            }
        });
    });
}
