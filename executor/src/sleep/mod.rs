//! The sleep manager: when idle workers fall asleep and who wakes them.
//!
//! This is Rayon's protocol (RFC 0005, `rayon-core/src/sleep`), adapted to an
//! async pool. The full description, with the proof sketch for the two
//! seq-cst fences, is in `README.md` beside this file
//! (`executor/src/sleep/README.md`); names there are names here.
//!
//! # Invariants
//!
//! * A worker is counted `inactive` from `start_looking` to `work_found`, and
//!   `sleeping` from its successful `try_add_sleeping_thread` until the thread
//!   that wakes it (`wake_specific_thread`) takes it off. The sleeper never
//!   decrements `sleeping` itself, except when its final injector check finds
//!   work before it blocked.
//! * `SleepState::is_blocked` is true exactly while its worker is committed to
//!   sleep and not yet woken; it only changes under that worker's lock.
//! * A job posted from a worker (`new_internal_jobs`) may be overlooked by a
//!   worker falling asleep: the poster is awake and runs it. A job posted from
//!   outside (`new_injected_jobs`) is never overlooked: the fence before the
//!   poster reads the counters and the fence after the sleeper increments them
//!   guarantee that one of the two sees the other.
//! * One new job wakes at most one sleeper, and none when enough workers are
//!   awake and idle. Finding work wakes nobody.

use crate::counters::{AtomicCounters, JobsEventCounter};
use crate::deadlock::DeadlockDetector;
use crate::latch::CoreLatch;
use crate::metrics::WorkerStats;
use crate::sync::{fence, yield_now, Condvar, Mutex, MutexGuard, Ordering};
use crossbeam_utils::CachePadded;

/// Rounds of fruitless search (each followed by a `thread::yield_now`)
/// before a worker announces itself sleepy. Rayon and Blitz use 32; measured
/// side by side (`compare`, 2 workers), 2 rounds cut the CPU an idle search
/// burns (bursty: 0.98x -> 0.85x of tokio's CPU; spawn_many_local 0.61x ->
/// 0.5x of its wall time) and cost nothing measurable elsewhere, wake
/// latency included: a posted job wakes a sleeper anyway.
#[cfg(not(loom))]
const ROUNDS_UNTIL_SLEEPY: u32 = 2;
/// Under loom, a round is a preemption point: keep the model small.
#[cfg(loom)]
const ROUNDS_UNTIL_SLEEPY: u32 = 1;

/// After announcing itself sleepy, one more round of search, then sleep.
const ROUNDS_UNTIL_SLEEPING: u32 = ROUNDS_UNTIL_SLEEPY + 1;

/// A lock, a condvar and the is-blocked flag: what one thread sleeps on.
#[derive(Debug)]
pub(crate) struct SleepState {
    /// True while the owner is committed to sleep and nobody woke it yet.
    is_blocked: Mutex<bool>,
    condvar: Condvar,
}

impl SleepState {
    pub(crate) fn new() -> SleepState {
        SleepState {
            is_blocked: Mutex::new(false),
            condvar: Condvar::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, bool> {
        self.is_blocked.lock()
    }

    /// Owner, holding the lock: mark itself blocked and wait until a waker
    /// clears the flag. Spurious condvar wakeups go back to waiting.
    pub(crate) fn block(&self, mut is_blocked: MutexGuard<'_, bool>) {
        debug_assert!(!*is_blocked);
        *is_blocked = true;
        while *is_blocked {
            is_blocked = self.condvar.wait(is_blocked);
        }
    }

    /// `block`, but with the lock released while `before_wait` runs, after
    /// the owner marked itself blocked. A waker that comes in between clears
    /// the flag under the lock and the owner then does not wait: nothing is
    /// lost. (`before_wait` may run user code that wakes this very owner.)
    fn block_after(&self, mut is_blocked: MutexGuard<'_, bool>, before_wait: impl FnOnce()) {
        debug_assert!(!*is_blocked);
        *is_blocked = true;
        drop(is_blocked);
        before_wait();
        let mut is_blocked = self.lock();
        while *is_blocked {
            is_blocked = self.condvar.wait(is_blocked);
        }
    }

    /// Any thread: wake the owner if it is blocked. True if it was.
    pub(crate) fn wake(&self) -> bool {
        self.wake_then(|| ())
    }

    /// Wake the owner if it is blocked and, still holding its lock, run
    /// `on_woken`. True if it was blocked.
    fn wake_then(&self, on_woken: impl FnOnce()) -> bool {
        let mut is_blocked = self.is_blocked.lock();
        if *is_blocked {
            *is_blocked = false;
            self.condvar.notify_one();
            on_woken();
            true
        } else {
            false
        }
    }
}

/// The per-worker progress of one idle period.
#[derive(Debug)]
pub(crate) struct IdleState {
    worker_index: usize,
    /// False while the worker is marked blocked (`mark_blocked`): deadlock
    /// detection already counts it as not active, so its sleep changes
    /// nothing there.
    counts_as_active: bool,
    /// Fruitless search rounds so far in this idle period.
    rounds: u32,
    /// The JEC seen when this worker announced itself sleepy; `DUMMY` before.
    jobs_counter: JobsEventCounter,
}

impl IdleState {
    /// Found work or was woken: start the idle period afresh.
    fn wake_fully(&mut self) {
        self.rounds = 0;
        self.jobs_counter = JobsEventCounter::DUMMY;
    }

    /// Work was posted while sleepy: announce sleepiness again, then search
    /// once more, rather than searching for 32 rounds.
    fn wake_partly(&mut self) {
        self.rounds = ROUNDS_UNTIL_SLEEPY;
        self.jobs_counter = JobsEventCounter::DUMMY;
    }
}

/// The sleep manager of one pool.
#[derive(Debug)]
pub(crate) struct Sleep {
    counters: AtomicCounters,
    worker_sleep_states: Box<[CachePadded<SleepState>]>,
    /// Present when the pool has a deadlock handler.
    deadlock: Option<DeadlockDetector>,
}

impl Sleep {
    pub(crate) fn new(workers: usize, deadlock: Option<DeadlockDetector>) -> Sleep {
        debug_assert!(workers <= crate::counters::THREADS_MAX);
        Sleep {
            counters: AtomicCounters::new(),
            worker_sleep_states: (0..workers)
                .map(|_| CachePadded::new(SleepState::new()))
                .collect(),
            deadlock,
        }
    }

    /// The counters as they are now, for the loom models' final checks.
    #[cfg(all(test, loom))]
    pub(crate) fn counters_for_test(&self) -> crate::counters::Counters {
        self.counters.load(Ordering::SeqCst)
    }

    pub(crate) fn deadlock(&self) -> Option<&DeadlockDetector> {
        self.deadlock.as_ref()
    }

    /// A worker ran out of work and starts searching: it becomes inactive.
    #[inline]
    pub(crate) fn start_looking(&self, worker_index: usize, counts_as_active: bool) -> IdleState {
        self.counters.add_inactive_thread();
        IdleState {
            worker_index,
            counts_as_active,
            rounds: 0,
            jobs_counter: JobsEventCounter::DUMMY,
        }
    }

    /// The searching worker found work (or stops searching): active again.
    /// It wakes nobody: every new job tickles for itself.
    #[inline]
    pub(crate) fn work_found(&self) {
        self.counters.sub_inactive_thread();
    }

    /// One fruitless search round. Yields, gets sleepy, or sleeps on `latch`
    /// (until it is set or new work wakes this worker).
    ///
    /// `has_injected_jobs` is the final check for injected work, made after
    /// the sleeper's seq-cst fence.
    #[inline]
    pub(crate) fn no_work_found(
        &self,
        idle_state: &mut IdleState,
        latch: &CoreLatch,
        stats: &WorkerStats,
        has_injected_jobs: impl FnOnce() -> bool,
    ) {
        if idle_state.rounds < ROUNDS_UNTIL_SLEEPY {
            yield_now();
            idle_state.rounds += 1;
        } else if idle_state.rounds == ROUNDS_UNTIL_SLEEPY {
            idle_state.jobs_counter = self.announce_sleepy();
            idle_state.rounds += 1;
            yield_now();
        } else {
            debug_assert_eq!(idle_state.rounds, ROUNDS_UNTIL_SLEEPING);
            self.sleep(idle_state, latch, stats, has_injected_jobs);
        }
    }

    /// Make the JEC even (if it is odd) and remember its value: if it is the
    /// same when this worker is about to sleep, no work was posted meanwhile.
    #[cold]
    fn announce_sleepy(&self) -> JobsEventCounter {
        self.counters
            .increment_jobs_event_counter_if(JobsEventCounter::is_active)
            .jobs_counter()
    }

    #[cold]
    fn sleep(
        &self,
        idle_state: &mut IdleState,
        latch: &CoreLatch,
        stats: &WorkerStats,
        has_injected_jobs: impl FnOnce() -> bool,
    ) {
        let worker_index = idle_state.worker_index;

        if !latch.get_sleepy() {
            // The latch is set: there is no reason to sleep.
            return;
        }

        let sleep_state = &self.worker_sleep_states[worker_index];
        let is_blocked = sleep_state.lock();

        if !latch.fall_asleep() {
            idle_state.wake_fully();
            return;
        }

        // Commit to sleeping, but only if the JEC has not moved since we got
        // sleepy: a moved JEC means work was posted, so search once more.
        loop {
            let counters = self.counters.load(Ordering::SeqCst);
            if counters.jobs_counter() != idle_state.jobs_counter {
                idle_state.wake_partly();
                latch.wake_up();
                return;
            }
            if self.counters.try_add_sleeping_thread(counters) {
                break;
            }
        }

        // Fence #2 (the sleeper's). It orders our increment of `sleeping`
        // above before the injector read below, and pairs with fence #1 in
        // `new_injected_jobs`, which orders an injector push before the
        // poster's read of the counters. In the single total order of seq-cst
        // fences one comes first: if ours does, the poster sees us sleeping
        // and wakes us; if theirs does, we see their job here. Without both
        // fences each side could read a stale value and the job would sit in
        // the injector while every worker sleeps. See README.md, "Proof
        // sketch".
        #[cfg(not(pool_loom_skip_sleeper_fence))]
        fence(Ordering::SeqCst);

        // The final injector check. Internal jobs need no such check: their
        // poster is an awake worker that will run them itself.
        if has_injected_jobs() {
            self.counters.sub_sleeping_thread();
        } else {
            stats.bump_owned(|s| &s.sleeps, 1);
            match self
                .deadlock
                .as_ref()
                .filter(|_| idle_state.counts_as_active)
            {
                None => sleep_state.block(is_blocked),
                Some(deadlock) => {
                    // The handler may run here, and may post work that wakes
                    // this very worker: so not under its sleep lock.
                    sleep_state.block_after(is_blocked, || deadlock.worker_sleeping());
                    deadlock.worker_awake();
                }
            }
        }

        idle_state.wake_fully();
        latch.wake_up();
    }

    /// Work was pushed onto a worker's own deque. No fence: a sleeper may
    /// overlook it, and then the pushing worker, which is awake, runs it.
    /// Returns the number of workers woken.
    #[inline]
    pub(crate) fn new_internal_jobs(&self, num_jobs: usize) -> usize {
        self.new_jobs(num_jobs)
    }

    /// Work was pushed into the injector. Returns the number of workers woken.
    #[inline]
    pub(crate) fn new_injected_jobs(&self, num_jobs: usize) -> usize {
        // Fence #1 (the poster's): orders the injector push before the read
        // of the counters in `new_jobs`; pairs with fence #2 in `sleep`.
        #[cfg(not(pool_loom_skip_poster_fence))]
        fence(Ordering::SeqCst);
        self.new_jobs(num_jobs)
    }

    /// Rayon's `new_jobs` without its `queue_was_empty` rule (waking a
    /// sleeper whenever the queue already held work): measured, it woke a
    /// second worker for floods of tiny tasks that one worker drains faster
    /// alone (spawn_many_remote 0.43x -> 1.0x of tokio), and bought bursty
    /// no wall time.
    #[inline]
    fn new_jobs(&self, num_jobs: usize) -> usize {
        // Make the JEC odd, so a worker that got sleepy before this post does
        // not fall asleep on a stale snapshot.
        let counters = self
            .counters
            .increment_jobs_event_counter_if(JobsEventCounter::is_sleepy);
        let num_sleepers = counters.sleeping_threads();
        if num_sleepers == 0 {
            return 0;
        }
        // Wake a sleeper only for the jobs the awake-but-idle workers cannot
        // cover, at most one per job.
        let num_awake_but_idle = counters.awake_but_idle_threads();
        if num_awake_but_idle >= num_jobs {
            return 0;
        }
        self.wake_any_threads(usize::min(num_jobs - num_awake_but_idle, num_sleepers))
    }

    #[cold]
    fn wake_any_threads(&self, mut num_to_wake: usize) -> usize {
        let mut woken = 0;
        for index in 0..self.worker_sleep_states.len() {
            if num_to_wake == 0 {
                break;
            }
            if self.wake_specific_thread(index) {
                num_to_wake -= 1;
                woken += 1;
            }
        }
        woken
    }

    /// Wake worker `index` if it is blocked; the waker takes it off the
    /// sleeping count (while holding its lock, so the count never shows a
    /// woken worker as asleep to a later poster). True if it was blocked.
    pub(crate) fn wake_specific_thread(&self, index: usize) -> bool {
        self.worker_sleep_states[index].wake_then(|| self.counters.sub_sleeping_thread())
    }
}
