//! A worker's search for work: the order it looks in, its steals, and the
//! periodic duties of a search (the injector first now and then, a poll of
//! the I/O driver).
//!
//! # Invariants
//!
//! * Search order: every `INJECTOR_INTERVAL`-th search looks at the
//!   injector first, so a busy worker does not starve outside spawns, and
//!   every `DRIVER_INTERVAL`-th search polls the I/O driver first (without
//!   blocking), so a busy pool does not starve I/O and timers. Then: the
//!   newest job of its own fork-join job deque (`join/`), the LIFO slot (at
//!   most `MAX_LIFO_POLLS` times in a row), its own deque, then the other
//!   workers from a random start (each victim's oldest job, the biggest
//!   piece of a recursion, as in Rayon; else half of its tasks), then the
//!   injector, then its deferred task (`scheduler/slot.rs`: a task its
//!   budget made yield with nothing else queued). A join's push counts as a search for both intervals (`push_tick`, without the tokio queue's look).
//! * Tasks made ready by a driver poll of this worker (busy, or asleep in
//!   the driver) go onto its own deque and are posted as internal jobs after
//!   the poll: the worker is awake then, and runs them if nobody steals them.
//! * The rest of a stolen batch is posted once the worker runs (`post_stolen`):
//!   the tickles of those tasks may have counted on it while it was idle.

use super::worker_thread::{Work, WorkerThread};
use crate::inspect::timeline::{driver_arg, Kind};
use crate::scheduler::io_driver::IoDriver;
use crate::sleep::park::Park;
use crate::task::header::Runnable;
use crossbeam_deque::Steal;
use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::task::Waker;

/// Every this many searches, a worker takes from the injector before its own
/// deque. Tokio uses 31 to 61; a prime keeps it from locking step with
/// periodic workloads.
const INJECTOR_INTERVAL: u32 = 61;

/// Every this many searches, a busy worker polls the I/O driver without
/// blocking (if the pool has sockets or timers and no other thread holds
/// the driver), so that readiness is seen while every worker is busy.
/// Tokio uses 61 as well. Measured with `http_load --only pool,tokio
/// --variants work,hello` at 17, 61 and 251: req/s within 1.07x-1.24x of
/// tokio for all three, no trend above the noise (docs/BENCHMARKS-HISTORY.md).
const DRIVER_INTERVAL: u32 = 61;

/// Every this many searches (`tokio-compat`), a worker looks whether tasks
/// wait in its tokio runtime's queue (scheduled by pool tasks or other
/// threads) and gives it a turn if so. On every search, that one load cost
/// yield_many 0.91x -> 1.07x of tokio's wall time; a tokio task scheduled
/// from a pool task waits for at most this many of the worker's tasks.
#[cfg(feature = "tokio-compat")]
const TOKIO_QUEUE_INTERVAL: u32 = 8;

/// Runs in a row from the LIFO slot before its task goes behind the deque
/// instead (tokio uses 3).
const MAX_LIFO_POLLS: u32 = 3;

impl WorkerThread {
    /// The LIFO slot's task, unless it has run `MAX_LIFO_POLLS` times in a
    /// row: then it goes behind the deque, so a pair of tasks waking each
    /// other cannot starve the rest.
    ///
    /// With the deque empty there is nothing to starve: the task would be
    /// the next one popped anyway, so it runs now, and nobody is woken for a
    /// task that this worker is about to run.
    fn take_lifo(&self) -> Option<Runnable> {
        let runnable = self.info().lifo.take()?;
        let polls = self.lifo_polls.get();
        if polls < MAX_LIFO_POLLS {
            self.lifo_polls.set(polls + 1);
            return Some(runnable);
        }
        self.lifo_polls.set(0);
        if self.worker.is_empty() {
            return Some(runnable);
        }
        self.push_stealable(runnable);
        None
    }

    /// Wake what a driver poll made ready. This pool's tasks land on this
    /// worker's deque (`schedule_local`), a warm thread for the connection,
    /// and are posted together as internal jobs: a sleeper is woken only if
    /// no awake worker is idle to steal them.
    /// Returns how many of them were this pool's tasks.
    pub(crate) fn wake_ready(&self, wakers: &mut Vec<Waker>) -> usize {
        if wakers.is_empty() {
            return 0;
        }
        self.io_batch.set(Some(0));
        for waker in wakers.drain(..) {
            waker.wake();
        }
        let n = self.io_batch.take().unwrap_or(0);
        if n > 0 {
            self.count_wakeups(self.registry.sleep_manager().new_internal_jobs(n));
        }
        n
    }

    /// Wake what a driver poll of this idle worker made ready (or a sleep
    /// in the driver ended with). With tokio tasks alive in its runtime
    /// (`tokio-compat`) some of the wakers may be theirs: they are woken
    /// inside the runtime, in a turn (`WorkerRuntime::wake_inside`), where a
    /// wake of a tokio task is a push onto its own queue, not a remote
    /// schedule with a write to its eventfd. Returns how many of them were
    /// this pool's tasks.
    pub(super) fn wake_ready_idle(&self, wakers: &mut Vec<Waker>) -> usize {
        #[cfg(feature = "tokio-compat")]
        if let Some(guest) = self
            .guest
            .as_ref()
            .filter(|h| !wakers.is_empty() && h.wakes_inside())
        {
            return guest.wake_inside(|| self.wake_ready(wakers));
        }
        self.wake_ready(wakers)
    }

    /// A poll of the driver without blocking, only if there is something
    /// to poll for and nobody else holds it: by a busy worker now and then,
    /// and by an idle worker before each of its search rounds (`idle`).
    /// True if it found work for this pool.
    ///
    /// A busy worker's release hands the driver to a sleeper that found it
    /// held (`SleepManager::driver_released`; `sleep/README.md`, "the driver
    /// handed over"). An idle worker's does not: it is about to sleep in
    /// the driver itself, or to run what it found, as the driver's own
    /// sleeper does after a wake.
    pub(super) fn poll_driver(&self, idle: bool) -> bool {
        let io = self.registry.driver();
        if !io.has_interest() {
            return false;
        }
        if !io.try_acquire() {
            // Held by another thread (its sleeper, mostly): this worker's
            // own timers are this worker's to fire, under its own lock.
            return self.fire_own_timers(idle);
        }
        let start = self.trace_now();
        let mut wakers = self.io_wakers.take();
        io.poll_now(&mut wakers);
        io.release();
        if !idle {
            self.count_wakeups(self.registry.sleep_manager().driver_released());
        }
        self.stats().bump_owned(|s| &s.driver_polls, 1);
        let found = self.wake_polled(&mut wakers, idle);
        self.io_wakers.set(wakers);
        self.trace(Kind::Driver, start, driver_arg(found, !idle, false));
        found > 0
    }

    /// Wake what a poll of this worker (`idle` or busy) made ready; how
    /// many of them were this pool's tasks.
    #[inline]
    fn wake_polled(&self, wakers: &mut Vec<Waker>, idle: bool) -> usize {
        if idle {
            self.wake_ready_idle(wakers)
        } else {
            self.wake_ready(wakers)
        }
    }

    /// Fire this worker's own due timers (`IoDriver::fire_own_timers`) and
    /// wake their tasks onto its deque; true if there were any.
    fn fire_own_timers(&self, idle: bool) -> bool {
        let mut wakers = self.io_wakers.take();
        self.registry
            .driver()
            .fire_own_timers(self.index, &mut wakers);
        let found = self.wake_polled(&mut wakers, idle);
        self.io_wakers.set(wakers);
        found > 0
    }

    /// A task of this worker was made to yield by its budget: if no
    /// readiness was delivered since its previous such yield (nobody polled
    /// the driver, as when every worker runs an always-ready task), poll it
    /// now, so that what it has ready queues ahead of the yielding task.
    /// Otherwise someone watches the driver (its sleeper, mostly) and this
    /// poll would only compete with them: polled at every forced yield, or
    /// at every one while no worker was idle, the light connections' p99 of
    /// `groups`' fairness (one hot connection) went from 50-80 us to
    /// 400-1000 us.
    pub(super) fn poll_driver_if_unwatched(&self) {
        let io = self.registry.driver();
        if io.io_events() == self.events_seen.get() {
            let _ = self.poll_driver(false);
        }
        self.events_seen.set(io.io_events());
    }

    /// Count one search and do its periodic duties: every
    /// `DRIVER_INTERVAL`-th polls the I/O driver, and (`tokio-compat`)
    /// every `TOKIO_QUEUE_INTERVAL`-th looks at the tokio runtime's queue.
    /// Returns whether this one looks at the injector first (every
    /// `INJECTOR_INTERVAL`-th).
    #[inline(always)]
    pub(super) fn tick(&self) -> bool {
        self.count_tick(true)
    }

    /// `tick` for a push of a join recursion (`push_job`): the same
    /// periodic duties every `DRIVER_INTERVAL`-th and `INJECTOR_INTERVAL`-th,
    /// without the look at the tokio runtime's queue every
    /// `TOKIO_QUEUE_INTERVAL`-th: a pushed job is not a task, and a
    /// recursion's pushes come every few nanoseconds, so a tokio task
    /// scheduled meanwhile waits for at most `DRIVER_INTERVAL` of them
    /// (that look was 2% of a fib recursion's time with `tokio-compat`).
    #[inline(always)]
    pub(super) fn push_tick(&self) -> bool {
        self.count_tick(false)
    }

    /// `tick`, with the tokio queue's look every `TOKIO_QUEUE_INTERVAL`-th
    /// only for a search (`search`).
    #[inline(always)]
    fn count_tick(&self, search: bool) -> bool {
        let tick = self.tick.get().wrapping_add(1);
        self.tick.set(tick);
        let periodic = tick % DRIVER_INTERVAL == 0;
        if periodic {
            let _ = self.poll_driver(false);
        }
        #[cfg(feature = "tokio-compat")]
        if periodic || (search && tick % TOKIO_QUEUE_INTERVAL == 0) {
            self.turn_guest(periodic);
        }
        #[cfg(not(feature = "tokio-compat"))]
        let _ = search;
        tick % INJECTOR_INTERVAL == 0
    }

    /// One search, in the order of the module invariants.
    pub(crate) fn find_work(&self) -> Option<Work> {
        if self.tick() {
            if let Some(r) = self.steal_injected() {
                self.lifo_polls.set(0);
                return Some(Work::Task(r));
            }
        }
        if let Some(job) = self.jobs.pop() {
            return Some(Work::Job(job));
        }
        if let Some(r) = self.take_lifo() {
            return Some(Work::Task(r));
        }
        self.lifo_polls.set(0);
        if let Some(r) = self.pop_own() {
            return Some(Work::Task(r));
        }
        self.steal_from_workers()
            .or_else(|| self.steal_injected().map(Work::Task))
            .or_else(|| self.info().deferred.take().map(Work::Task))
    }

    /// Steal from another worker, trying each once from a random start, and
    /// again while some steal reported contention: its oldest fork-join job
    /// (the biggest piece of work, as in Rayon), else half of its tasks.
    fn steal_from_workers(&self) -> Option<Work> {
        let workers = self.registry.workers();
        let n = workers.len();
        if n <= 1 {
            return None;
        }
        let start = self.rng.next_usize(n);
        loop {
            let mut retry = false;
            for victim in (start..n).chain(0..start) {
                if victim == self.index {
                    continue;
                }
                let jobs = &workers[victim].job_stealer;
                if !jobs.is_empty() {
                    match jobs.steal() {
                        Steal::Success(job) => return Some(Work::Job(job)),
                        Steal::Retry => retry = true,
                        Steal::Empty => {}
                    }
                } else {
                    // Ask it to offer a `join` half (`join/lazy_jobs.rs`), once:
                    // the load keeps a worker with no joins from having its
                    // line written at every search. Relaxed: a hint.
                    let wants = &workers[victim].wants_jobs;
                    if !wants.load(Ordering::Relaxed) {
                        wants.store(true, Ordering::Relaxed);
                    }
                }
                match workers[victim].stealer.steal_batch_and_pop(&self.worker) {
                    Steal::Success(r) => {
                        // Our deque was empty before the steal (we search it
                        // first), so its length is the rest of the batch.
                        let rest = self.worker.len();
                        self.stolen.set(rest);
                        self.stats().bump_owned(|s| &s.steals, 1 + rest as u64);
                        self.lane
                            .instant(Kind::Steal, (victim as u64) << 32 | (1 + rest as u64));
                        return Some(Work::Task(r));
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    pub(super) fn steal_injected(&self) -> Option<Runnable> {
        let before = self.worker.len();
        let r = steal_one(|| self.registry.injector().steal_batch_and_pop(&self.worker))?;
        let rest = self.worker.len().saturating_sub(before);
        self.stolen.set(rest);
        self.lane.instant(Kind::Injector, 1 + rest as u64);
        Some(r)
    }

    /// Post the rest of a stolen batch as new internal jobs, once this
    /// worker is active again. Their own tickles may have counted on this
    /// worker (idle and awake, it covered them) and not woken a sleeper; now
    /// that it runs one of them, nobody covers the rest. Without this post,
    /// a poll that blocks or runs long strands them in this deque while
    /// other workers sleep.
    #[inline]
    pub(crate) fn post_stolen(&self) {
        let rest = self.stolen.replace(0);
        if rest > 0 {
            self.count_wakeups(self.registry.sleep_manager().new_internal_jobs(rest));
        }
    }

    /// Whether a job waits where any worker could take it: the injector or
    /// a worker's deque (this one's included).
    #[cold]
    pub(super) fn sees_queued_jobs(&self) -> bool {
        self.registry.has_injected_jobs()
            || self
                .registry
                .workers()
                .iter()
                .any(|w| !w.stealer.is_empty() || !w.job_stealer.is_empty())
    }
}

/// xorshift64*: a tiny generator for the start of each steal sweep.
pub(crate) struct XorShift64Star {
    state: Cell<u64>,
}

impl XorShift64Star {
    pub(crate) fn new(seed: u64) -> Self {
        // Spread small seeds over the state space; the state must not be 0.
        let s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        XorShift64Star {
            state: Cell::new(s),
        }
    }

    pub(crate) fn next(&self) -> u64 {
        let mut x = self.state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n`.
    pub(crate) fn next_usize(&self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Retry a steal until it gives a task or reports the queue empty.
pub(crate) fn steal_one<T>(mut steal: impl FnMut() -> Steal<T>) -> Option<T> {
    loop {
        match steal() {
            Steal::Success(t) => return Some(t),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}
