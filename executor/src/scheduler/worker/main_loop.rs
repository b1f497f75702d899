//! A worker's loop: `main_loop`, the body of a worker thread, and
//! `wait_until`, the whole state machine of a worker (see
//! `docs/ARCHITECTURE.md`, "Worker states"): *active* (a busy period runs
//! what the searches find), *idle* (searching in rounds, counted
//! inactive), *sleepy* (announced in the JEC, one search left) and
//! *sleeping* (blocked on its condvar, in the I/O driver or in its guest
//! runtime, counted sleeping). The main loop is `wait_until(terminate
//! latch)`, and a `block_on` on a worker thread is `wait_until(its own
//! latch)`.

use super::worker_thread::{Work, WorkerThread};
use crate::context::pool_cells;
use crate::inspect::metrics::{BusyClock, WorkerStats};
use crate::inspect::timeline::{driver_arg, Kind};
use crate::join::job_ref::JobRef;
use crate::scheduler::io_driver::IoDriver;
use crate::scheduler::registry::Registry;
use crate::sleep::latch::CoreLatch;
use crate::sleep::manager::Round;
use crate::task::header::Runnable;
use crossbeam_deque::Worker;
use std::sync::Arc;

/// Extra search rounds (each followed by a `thread::yield_now`) of a worker
/// that ran or pushed fork-join jobs, before the sleep protocol's own two:
/// 2 + 30 is Rayon's 32, so a stream of joins finds its workers awake.
/// Workers that only run async tasks never spin them.
const JOB_SPIN_ROUNDS: u32 = 30;

impl WorkerThread {
    /// A busy period: run `found`, then what the searches find, until a
    /// search finds nothing or `latch` is set. On a worker with a tokio
    /// runtime (`tokio-compat`) not inside it already, the period runs
    /// inside the runtime (`WorkerRuntime::run_busy`), so that a
    /// `tokio::spawn` or a wake of a tokio task by a pool task is a push
    /// onto the runtime's own queue, as on tokio's own workers, not a
    /// remote schedule (a lock and a write to its eventfd: 3.2 us of CPU
    /// per spawn against tokio's 0.7 in `ecosystem --only library_spawn`).
    fn run_busy(&self, found: &mut Option<Work>, latch: &CoreLatch) {
        #[cfg(feature = "tokio-compat")]
        if let Some(guest) = self.guest.as_ref().filter(|h| h.can_enter()) {
            guest.run_busy(|| self.run_tasks(found, latch, || guest.turn_wanted()));
            return;
        }
        self.run_tasks(found, latch, || false);
    }

    /// Run `found`, then what the searches find, until a search finds
    /// nothing, `latch` is set or `stop()`. True if it ran anything.
    #[inline(always)]
    fn run_tasks(
        &self,
        found: &mut Option<Work>,
        latch: &CoreLatch,
        stop: impl Fn() -> bool,
    ) -> bool {
        let mut ran = false;
        if let Some(work) = found.take() {
            self.run(work);
            ran = true;
        }
        while !latch.probe() && !stop() {
            match self.find_work() {
                Some(work) => {
                    self.post_stolen();
                    self.run(work);
                    ran = true;
                }
                None => break,
            }
        }
        ran
    }

    /// Run tasks until `latch` is set, sleeping (and counted as sleeping)
    /// when there is nothing to run. New work and `latch` both wake it.
    pub(crate) fn wait_until(&self, latch: &CoreLatch) {
        if let Some(seeded) = self.registry.seeded() {
            // A logical worker: the run steps every worker, this one
            // included, until the latch is set (`seeded/`).
            seeded.wait_until(&|| latch.probe());
            self.post_deferred();
            return;
        }
        let sleep = self.registry.sleep_manager();
        let stats = self.stats();
        let clock = self.registry.busy_clock();
        // Inside a poll (a `block_on` on this worker), the poll's busy
        // period goes on after the wait; else the worker is idle after it.
        let _busy_after = BusyAfter {
            stats,
            clock,
            busy: stats.is_busy(),
        };
        // What an idle search found, to run first when the worker is busy again.
        let mut found = None;
        'active: loop {
            // Active: run what we find. Busy from here until a search fails
            // (`Metrics::busy`).
            stats.busy_begin(clock);
            self.run_busy(&mut found, latch);
            stats.busy_end(clock);
            if latch.probe() {
                self.post_deferred();
                return;
            }
            // Idle: search in rounds, get sleepy, sleep.
            self.went_idle();
            let mut idle_state = sleep.start_looking(self.index, !self.marked_blocked.get());
            // Idle: the driver's sleeper fires this worker's timers until
            // it is busy again (`time/deadlines.rs`).
            self.registry.driver().worker_idle(self.index);
            let mut polled_driver = false;
            // Fork-join comes in streams: after running jobs, search longer
            // before the protocol's rounds, as Rayon's workers do.
            let mut spins = if self.jobs.take_ran() {
                JOB_SPIN_ROUNDS
            } else {
                0
            };
            while !latch.probe() {
                if let Some(work) = self.find_work() {
                    // Posts what it still sees queued, the rest of a stolen
                    // batch included, if workers sleep.
                    let woken = sleep.work_found(|| self.sees_queued_jobs());
                    self.registry.driver().worker_awake(self.index);
                    self.stolen.set(0);
                    self.count_wakeups(woken);
                    found = Some(work);
                    continue 'active;
                }
                // Out of work: readiness the driver holds is the likeliest
                // next work of a server, and a round's `yield_now` cannot
                // see it (a sleep in the driver would), so look there before
                // every round of the protocol (and once before a fork-join
                // worker's spins, a stream of joins' rounds). Once before the
                // first round only, a light connection's ping that came
                // during the rounds waited for them: `groups`' fairness
                // light p50 20.7 us against 16.8 (tokio 16.3).
                if spins == 0 || !polled_driver {
                    polled_driver = true;
                    if self.poll_driver(true) {
                        continue;
                    }
                }
                if spins > 0 {
                    spins -= 1;
                    std::thread::yield_now();
                    continue;
                }
                let mut wakers = self.io_wakers.take();
                let start = self.trace_now();
                let round = sleep.no_work_found(
                    &mut idle_state,
                    latch,
                    || self.registry.has_injected_jobs() || self.has_inbox(),
                    &mut wakers,
                    self.guest(),
                );
                if self.lane.is_traced() && round != Round::Searched {
                    self.lane.round(round, start);
                }
                if round == Round::GotSleepy {
                    // About to sleep: free what other workers handed back
                    // to shards whose inserters are not busy, so that a
                    // pool that sleeps keeps no finished task alive.
                    self.registry.tasks().reclaim_idle();
                }
                // A sleep in the driver may end with I/O or timers ready.
                if !wakers.is_empty() {
                    let start = self.trace_now();
                    let found = self.wake_ready_idle(&mut wakers);
                    self.trace(Kind::Driver, start, driver_arg(found, false, true));
                }
                self.io_wakers.set(wakers);
            }
            let woken = sleep.work_found(|| self.sees_queued_jobs());
            self.registry.driver().worker_awake(self.index);
            self.count_wakeups(woken);
            self.post_deferred();
            return;
        }
    }
}

/// Takes the worker out of the context and tells shutdown it is gone, also
/// when a hook panicked. Declared after the `WorkerThread` in `main_loop`, so
/// it runs before that is dropped and the context's pointer never dangles.
struct ExitGuard(Arc<Registry>);

impl Drop for ExitGuard {
    fn drop(&mut self) {
        pool_cells::leave_worker();
        self.0.shutdown_state().worker_exited();
    }
}

/// Puts a worker's busy time back as `wait_until` found it when the wait
/// ends (by its return or a panic).
struct BusyAfter<'a> {
    stats: &'a WorkerStats,
    clock: &'a BusyClock,
    busy: bool,
}

impl Drop for BusyAfter<'_> {
    fn drop(&mut self) {
        if self.busy {
            self.stats.busy_begin(self.clock);
        } else {
            self.stats.busy_end(self.clock);
        }
    }
}

/// The body of worker thread `index`.
pub(crate) fn main_loop(
    registry: Arc<Registry>,
    index: usize,
    worker: Worker<Runnable>,
    jobs: Worker<JobRef>,
) {
    let this = WorkerThread::new(registry, index, worker, jobs);
    let _exit = ExitGuard(Arc::clone(&this.registry));
    // SAFETY: `this` lives on this frame until after `_exit` (declared
    // after it, so dropped before it) takes it out of the context.
    unsafe { pool_cells::enter_worker(&this) };
    if let Some(timeline) = this.registry.timeline() {
        timeline.enter_thread(Some(index));
    }
    // Its tokio runtime's context (`tokio-compat`), for the thread's life,
    // hooks included.
    #[cfg(feature = "tokio-compat")]
    let _tokio = this.guest.as_ref().map(|h| h.enter());
    this.registry.thread_hooks().run_start();
    this.wait_until(&this.info().terminate);
    this.leave();
    // A hook's panic is caught: the worker goes on (`ThreadHooks`).
    this.registry.thread_hooks().run_stop();
}
