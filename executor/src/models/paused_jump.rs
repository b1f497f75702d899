//! The jump of a paused clock (`sleep/activity.rs`, `io/driver.rs`): the
//! driver's sleeper jumps to the earliest timer only when the pool's
//! activity reads zero, and the `end` that brings it to zero unparks it.
//!
//! The stand-in driver here keeps a paused clock and its timers under one
//! lock, as the timer store does: its `park` jumps (and fires the earliest
//! timers) if the pool `is_quiet`, else blocks until an unpark, and its
//! `pool_quiet` unparks it. The real `SleepManager` and `Activity` do the rest.
//!
//! Two properties, each with a teeth check in `scripts/loom`:
//!
//! * no jump is missed: a sleeper that decided not to jump (a blocking
//!   closure held the clock) is unparked when the closure ends, and jumps
//!   (`POOL_LOOM_TOOTH=skip_quiet_unpark` drops that unpark: loom must find
//!   the sleeper blocked for ever);
//! * no jump is early: a job injected by a `block_on` thread that then
//!   sleeps runs before the clock jumps, on two workers that idle and fall
//!   asleep meanwhile (`POOL_LOOM_TOOTH=sleeper_adds_itself` has a woken
//!   worker add itself back to the activity when it runs, instead of its
//!   waker under its lock: loom must find the job run after the jump).
//!
//! And a timer registered before the jump is never passed: the jump takes
//! the earliest deadline under the lock the insert takes.

use super::park::Forward;
use super::sleep::{idle_until, Outcome, Queue};
use crate::sleep::latch::CoreLatch;
use crate::sleep::manager::SleepManager;
use crate::sleep::park::Park;
use crate::sync::{AtomicBool, AtomicUsize, Condvar, Mutex, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::task::Waker;

#[derive(Debug, Default)]
struct State {
    unparked: bool,
    /// The paused clock's time.
    now: usize,
    timers: Vec<usize>,
    /// Deadlines fired, in firing order.
    fired: Vec<usize>,
}

/// A driver with a paused clock and no sources (so the poll without
/// blocking that precedes a jump finds nothing).
#[derive(Debug, Default)]
struct StandInClock {
    held: AtomicBool,
    state: Mutex<State>,
    condvar: Condvar,
}

impl StandInClock {
    fn insert(&self, deadline: usize) {
        self.state.lock().timers.push(deadline);
        // An earlier timer unparks the sleeper, as `Timers::insert` does.
        self.unpark();
    }

    fn now(&self) -> usize {
        self.state.lock().now
    }

    fn fired(&self) -> Vec<usize> {
        self.state.lock().fired.clone()
    }
}

impl Park for StandInClock {
    fn try_acquire(&self) -> bool {
        self.held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    fn park(&self, wakers: &mut Vec<Waker>, is_quiet: &dyn Fn() -> bool) {
        let mut state = self.state.lock();
        loop {
            // `Timers::jump_if_quiet`: under the lock, the earliest deadline.
            if let Some(first) = state.timers.iter().copied().min() {
                if is_quiet() {
                    state.now = state.now.max(first);
                    let now = state.now;
                    let (due, later): (Vec<_>, Vec<_>) =
                        state.timers.iter().partition(|&&d| d <= now);
                    state.timers = later;
                    state.fired.extend(due);
                    wakers.push(Waker::noop().clone());
                    return;
                }
            }
            if state.unparked {
                state.unparked = false;
                return;
            }
            state = self.condvar.wait(state);
        }
    }

    fn release(&self) {
        self.held.store(false, Ordering::Release);
    }

    fn unpark(&self) {
        self.state.lock().unparked = true;
        self.condvar.notify_one();
    }

    /// The clock is always paused here.
    fn pool_quiet(&self) {
        self.unpark();
    }
}

/// A pool of `workers` whose driver (enabled) has a paused clock.
fn paused_pool(workers: usize) -> (Arc<SleepManager>, Arc<StandInClock>) {
    let clock = Arc::new(StandInClock::default());
    let park: std::sync::Arc<dyn Park> = std::sync::Arc::new(Forward(clock.clone()));
    let sleep = Arc::new(SleepManager::new(workers, None, Some(park), None));
    sleep.enable_driver();
    (sleep, clock)
}

/// The teeth check runs this model without the quiet report's unpark.
#[test]
fn a_sleeper_that_did_not_jump_jumps_when_the_last_blocking_closure_ends() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("clock_quiet_unpark", &N, || {
        let (sleep, clock) = paused_pool(1);
        clock.insert(100);
        // A blocking closure, queued by earlier work, holds the clock.
        sleep.hold();
        let worker = {
            let sleep = sleep.clone();
            thread::spawn(move || {
                // Never set, never fed: only the jumps end its idle periods,
                // two of them: to the timer inserted below, then to 100.
                let latch = CoreLatch::new();
                let injector = Queue::new();
                for _ in 0..2 {
                    assert_eq!(
                        idle_until(&sleep, 0, &latch, &[], &injector),
                        Outcome::Ready
                    );
                }
            })
        };
        // Registered before the closure ends: the clock must not pass it.
        clock.insert(50);
        // The closure ends, waking nobody: the sleeper must still jump.
        sleep.release_hold();
        worker.join().unwrap();
        assert_eq!(clock.fired(), [50, 100], "timers fired in deadline order");
        assert_eq!(clock.now(), 100);
    });
}

/// The teeth check runs this model with a woken worker adding itself back
/// to the activity. Three threads that idle and post: at most two
/// preemptions (about 50 000 interleavings, seconds; three take many
/// minutes), which is where the teeth check finds the early jump.
#[test]
fn a_job_injected_before_its_poster_slept_runs_before_the_clock_jumps() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model_bounded("clock_no_early_jump", &N, 2, || {
        let (sleep, clock) = paused_pool(2);
        clock.insert(100);
        let injector = Arc::new(Queue::new());
        // The clock's time when the job ran; MAX until it did.
        let job_at = Arc::new(AtomicUsize::new(usize::MAX));
        let latches = Arc::new([CoreLatch::new(), CoreLatch::new()]);
        // This thread is a `Pool::block_on` thread, polling its future.
        sleep.hold();
        let workers: Vec<_> = (0..2)
            .map(|index| {
                let (sleep, clock, injector, job_at, latches) = (
                    sleep.clone(),
                    clock.clone(),
                    injector.clone(),
                    job_at.clone(),
                    latches.clone(),
                );
                thread::spawn(move || loop {
                    match idle_until(&sleep, index, &latches[index], &[], &injector) {
                        Outcome::Job => job_at.store(clock.now(), Ordering::SeqCst),
                        Outcome::Ready => {}
                        Outcome::Stopped => return,
                    }
                })
            })
            .collect();
        // Its future spawns a task (an injected job), then it sleeps.
        injector.push();
        sleep.new_injected_jobs(1);
        sleep.release_hold();
        // Wait until the job ran and the timer fired, then stop the workers.
        while job_at.load(Ordering::SeqCst) == usize::MAX || clock.now() != 100 {
            thread::yield_now();
        }
        for (index, latch) in latches.iter().enumerate() {
            latch.set();
            sleep.wake_specific_thread(index);
        }
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(
            job_at.load(Ordering::SeqCst),
            0,
            "the job ran after the clock jumped"
        );
    });
}
