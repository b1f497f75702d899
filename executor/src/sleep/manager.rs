//! `SleepManager`: Rayon's sleep protocol for one pool (`README.md` beside
//! this file: the protocol, its proof sketch, and the hand-over of the I/O
//! driver to a sleeper): the rounds of an idle worker, falling asleep, the
//! tickles of new jobs, waking a specific thread.

use super::activity::Activity;
use super::counters::{AtomicCounters, JobsEventCounter, THREADS_MAX};
use super::deadlock::DeadlockDetector;
use super::latch::CoreLatch;
use super::park::{GuestRuntime, Park};
use super::state::{Blocked, SleepState};
use super::watcher_park::WatcherPark;
use crate::sync::{fence, yield_now, AtomicBool, AtomicUsize, Ordering};
use crate::teeth::{pulled, Tooth};
use crossbeam_utils::CachePadded;
use std::fmt::Debug;
use std::sync::Arc;
use std::task::Waker;

/// Rounds of fruitless search (each followed by a `thread::yield_now`)
/// before a worker announces itself sleepy. Rayon and Blitz use 32; measured
/// side by side (`compare`, 2 workers), 2 rounds cut the CPU an idle search
/// burns (bursty: 0.98x -> 0.85x of tokio's CPU; spawn_many_local 0.61x ->
/// 0.5x of its wall time) and cost nothing measurable elsewhere, wake
/// latency included: a posted job wakes a sleeper anyway.
///
/// The yields themselves are measured as well: on a machine whose CPUs a
/// client shares (`http_load`), a yield hands the client the CPU until it
/// blocks and the worker comes back to the requests it wrote, with no wake
/// between (hello's req/s 1.14-1.27x of tokio's with them, 0.88-0.96x
/// without); the same yields keep a worker runnable, so the kernel does not
/// re-place it at a wake, and they put pool's HTTP work p99 behind tokio's
/// in the runs where the kernel keeps the two workers apart (`docs/
/// BENCHMARKS.md`, "The HTTP work tail").
#[cfg(not(loom))]
const ROUNDS_UNTIL_SLEEPY: u32 = 2;
/// Under loom, a round is a preemption point: keep the model small.
#[cfg(loom)]
const ROUNDS_UNTIL_SLEEPY: u32 = 1;

/// After announcing itself sleepy, one more round of search, then sleep.
const ROUNDS_UNTIL_SLEEPING: u32 = ROUNDS_UNTIL_SLEEPY + 1;

/// What one fruitless round (`SleepManager::no_work_found`) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Round {
    /// Yielded, to search again.
    Searched,
    /// Announced itself sleepy (one search left).
    GotSleepy,
    /// Slept, and was woken (or the driver it slept in brought work).
    Slept,
    /// Meant to sleep but did not: its latch was set, the JEC moved, or the
    /// final injector check found work.
    StayedAwake,
}

/// Told of every wake of a sleeping worker by another thread, under the
/// sleeper's lock (the timeline notes who woke whom).
pub(crate) trait WakeNote: Send + Sync + Debug {
    /// The calling thread is waking worker `index`.
    fn waking(&self, index: usize);
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
pub(crate) struct SleepManager {
    counters: AtomicCounters,
    worker_sleep_states: Box<[CachePadded<SleepState>]>,
    /// Present when the pool has a deadlock handler.
    deadlock: Option<DeadlockDetector>,
    /// The I/O driver that one sleeper blocks in (absent in some models).
    driver: Option<Arc<dyn Park>>,
    /// Where the watcher (`../scheduler/watcher.rs`) waits while every
    /// worker sleeps.
    watcher: WatcherPark,
    /// Set once the pool has used I/O or timers (`enable_driver`); until
    /// then every sleeper blocks on its condvar, so a pool that never does
    /// I/O sleeps and wakes exactly as without a driver. Read by a sleeper
    /// under its own sleep lock; see `enable_driver`.
    driver_enabled: AtomicBool,
    /// A sleeper that found the driver held and blocked without it: its
    /// index + 1, or 0. The holder's release wakes it (`driver_released`),
    /// so that it goes back to sleep in the driver.
    driver_missed: AtomicUsize,
    /// Told of each wake, when the pool is traced (the timeline,
    /// `inspect/timeline.rs`).
    wake_note: Option<Arc<dyn WakeNote>>,
    /// The pool has a stall handler: every wake of a sleeping worker also
    /// makes sure the watcher is looking (`WatcherPark::worker_woke`), since
    /// the woken worker is about to poll.
    watch_wakes: bool,
    /// What of the pool is active (`activity.rs`): a worker leaves it when
    /// it blocks, and is added back by whoever wakes it.
    activity: Activity,
}

impl SleepManager {
    pub(crate) fn new(
        workers: usize,
        deadlock: Option<DeadlockDetector>,
        driver: Option<Arc<dyn Park>>,
        wake_note: Option<Arc<dyn WakeNote>>,
    ) -> SleepManager {
        debug_assert!(workers <= THREADS_MAX);
        SleepManager {
            counters: AtomicCounters::new(),
            worker_sleep_states: (0..workers)
                .map(|_| CachePadded::new(SleepState::new()))
                .collect(),
            deadlock,
            driver,
            watcher: WatcherPark::default(),
            driver_enabled: AtomicBool::new(false),
            driver_missed: AtomicUsize::new(0),
            wake_note,
            watch_wakes: false,
            activity: Activity::new(workers),
        }
    }

    /// Have every wake of a sleeping worker unpark the watcher (a pool with
    /// a stall handler; see `watch_wakes`).
    pub(crate) fn watching_wakes(mut self) -> SleepManager {
        self.watch_wakes = true;
        self
    }

    pub(crate) fn watcher(&self) -> &WatcherPark {
        &self.watcher
    }

    /// Is every worker counted sleeping? (The watcher's reason to park.)
    pub(crate) fn all_asleep(&self) -> bool {
        // SeqCst: pairs with the watcher's `parked` flag; see `watcher_park.rs`.
        self.counters.load(Ordering::SeqCst).sleeping_threads() == self.worker_sleep_states.len()
    }

    /// Are at least `n` workers idle (searching) or asleep, that is, out of
    /// any poll? (The global pool's trace at exit waits for it, so that the
    /// poll that let `main` return is recorded.) SeqCst: a worker becomes
    /// inactive after it recorded its last poll, and the caller then reads
    /// the lanes.
    pub(crate) fn inactive_at_least(&self, n: usize) -> bool {
        self.counters.load(Ordering::SeqCst).inactive_threads() >= n
    }

    /// Is some worker idle (searching) or asleep? (The watcher rescues a
    /// task only then.) Relaxed: a hint, read again at the next look.
    pub(crate) fn any_inactive(&self) -> bool {
        self.counters.load(Ordering::Relaxed).inactive_threads() > 0
    }

    /// A worker is off the sleeping count: its waker (or itself: woken by
    /// the driver, or backing out on the final injector check) took it off.
    /// It is about to poll, so in a pool with a stall handler this is also
    /// where the watcher is unparked (`WatcherPark::worker_woke`: after the
    /// decrement, behind its fence). Every path off `sleeping` comes through
    /// here: `models/watcher.rs` found the backing-out one missing when the
    /// unpark lived at the wake sites.
    fn sleeper_left(&self) {
        self.counters.sub_sleeping_thread();
        if self.watch_wakes {
            self.watcher.worker_woke();
        }
    }

    /// Something other than a worker becomes active in the pool (a
    /// blocking closure queued, a `block_on` thread entering or woken):
    /// a paused clock waits for it (`activity.rs`).
    #[inline]
    pub(crate) fn hold(&self) {
        self.activity.begin();
    }

    /// What `hold` counted stops being active; if the pool is quiet now,
    /// the driver is told, so that its sleeper decides again whether a
    /// paused clock may jump.
    #[inline]
    pub(crate) fn release_hold(&self) {
        if self.activity.end() {
            if let Some(driver) = &self.driver {
                driver.pool_quiet();
            }
        }
    }

    /// Is nothing of the pool active? (The paused clock's condition.)
    pub(crate) fn is_quiet(&self) -> bool {
        self.activity.is_quiet()
    }

    /// A blocked worker is woken (by a waker, or by the driver it blocks
    /// in): active again, and off the sleeping count.
    fn blocked_sleeper_left(&self) {
        // Test-only: the woken worker adds itself back when it runs again
        // (in `sleep`), not its waker now: a paused clock may then jump
        // between the wake and the woken worker's run, and
        // `models/paused_jump.rs` must find the job run after the jump.
        if !pulled(Tooth::SleeperAddsItself) {
            self.activity.begin();
        }
        self.sleeper_left();
    }

    /// The pool registered its first socket or timer: from now on one
    /// sleeper blocks in the driver. Wakes every worker asleep on its
    /// condvar, so that one of them goes back to sleep in the driver.
    ///
    /// No sleeper is missed: a sleeper reads the flag while it holds its
    /// sleep lock, from before it commits until it blocks. If it read
    /// `false`, our lock of its state below comes after its block and wakes
    /// it; if our lock came first, our store happened before it, and the
    /// sleeper, locking after us, reads `true`. Returns the workers woken.
    pub(crate) fn enable_driver(&self) -> usize {
        // Relaxed fast path: once set, the flag never changes.
        if self.driver.is_none() || self.driver_enabled.load(Ordering::Relaxed) {
            return 0;
        }
        if self.driver_enabled.swap(true, Ordering::SeqCst) {
            return 0;
        }
        (0..self.worker_sleep_states.len())
            .filter(|&index| self.wake_thread_if(index, |how| how == Blocked::OnCondvar))
            .count()
    }

    /// Sleeps begun and sleeps the driver ended by itself, summed over the
    /// workers (`Metrics::sleeps`, and a part of `Metrics::wakeups`).
    pub(crate) fn sleep_counts(&self) -> (u64, u64) {
        self.worker_sleep_states
            .iter()
            .map(|s| s.counts())
            .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
    }

    /// Worker `index`'s sleeps begun and sleeps over (`WorkerMetrics`).
    pub(crate) fn worker_sleeps(&self, index: usize) -> (u64, u64) {
        self.worker_sleep_states[index].sleeps_and_wakes()
    }

    /// The counters as they are now, for the loom models' final checks.
    #[cfg(all(test, loom))]
    pub(crate) fn counters_for_test(&self) -> super::counters::Counters {
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
    /// Returns the number of workers woken.
    ///
    /// While it searched, it was awake and idle, so the tickles of jobs
    /// posted meanwhile may have counted on it and woken nobody; but it may
    /// have found other work, and if that work is long these jobs would wait
    /// while workers sleep. So if workers sleep and `has_queued_jobs` still
    /// sees a queued job, it posts that as one new job (which wakes a sleeper
    /// unless another idle worker is awake to take it). Without sleepers it
    /// costs nothing more than Rayon's decrement.
    #[inline]
    pub(crate) fn work_found(&self, has_queued_jobs: impl FnOnce() -> bool) -> usize {
        if self.counters.sub_inactive_thread() == 0 {
            return 0;
        }
        self.post_uncovered_jobs(has_queued_jobs)
    }

    #[cold]
    fn post_uncovered_jobs(&self, has_queued_jobs: impl FnOnce() -> bool) -> usize {
        // Fence #3 (the finder's). It orders our decrement of `inactive`
        // above before the queue reads below, and pairs with fence #1 of an
        // outside poster (an injector push, then its read of the counters):
        // either the poster sees us active, and wakes a sleeper itself, or
        // we see its job here. Internal posts have no fence #1, so for jobs
        // in workers' deques this is a best effort; their posters are awake.
        if !pulled(Tooth::SkipFinderFence) {
            fence(Ordering::SeqCst);
        }
        if has_queued_jobs() {
            self.new_jobs(1)
        } else {
            0
        }
    }

    /// One fruitless search round. Yields, gets sleepy, or sleeps on `latch`
    /// (until it is set or new work wakes this worker); says which.
    ///
    /// `has_injected_jobs` is the final check for injected work, made after
    /// the sleeper's seq-cst fence. A sleep in the I/O driver that ends with
    /// I/O readiness or due timers leaves their wakers in `wakers`, for the
    /// caller to wake as new work of its own.
    #[inline]
    pub(crate) fn no_work_found(
        &self,
        idle_state: &mut IdleState,
        latch: &CoreLatch,
        has_injected_jobs: impl FnOnce() -> bool,
        wakers: &mut Vec<Waker>,
        guest: Option<&dyn GuestRuntime>,
    ) -> Round {
        if idle_state.rounds < ROUNDS_UNTIL_SLEEPY {
            yield_now();
            idle_state.rounds += 1;
            Round::Searched
        } else if idle_state.rounds == ROUNDS_UNTIL_SLEEPY {
            idle_state.jobs_counter = self.announce_sleepy();
            idle_state.rounds += 1;
            yield_now();
            Round::GotSleepy
        } else {
            debug_assert_eq!(idle_state.rounds, ROUNDS_UNTIL_SLEEPING);
            if self.sleep(idle_state, latch, has_injected_jobs, wakers, guest) {
                Round::Slept
            } else {
                Round::StayedAwake
            }
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

    /// The sleep itself; true if the worker slept (blocked).
    #[cold]
    fn sleep(
        &self,
        idle_state: &mut IdleState,
        latch: &CoreLatch,
        has_injected_jobs: impl FnOnce() -> bool,
        wakers: &mut Vec<Waker>,
        guest: Option<&dyn GuestRuntime>,
    ) -> bool {
        let worker_index = idle_state.worker_index;

        if !latch.get_sleepy() {
            // The latch is set: there is no reason to sleep.
            return false;
        }

        let sleep_state = &self.worker_sleep_states[worker_index];
        let is_blocked = sleep_state.lock();

        if !latch.fall_asleep() {
            idle_state.wake_fully();
            return false;
        }

        // Commit to sleeping, but only if the JEC has not moved since we got
        // sleepy: a moved JEC means work was posted, so search once more.
        loop {
            let counters = self.counters.load(Ordering::SeqCst);
            if counters.jobs_counter() != idle_state.jobs_counter {
                idle_state.wake_partly();
                latch.wake_up();
                return false;
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
        if !pulled(Tooth::SkipSleeperFence) {
            fence(Ordering::SeqCst);
        }

        // The final injector check. Internal jobs need no such check: their
        // poster is an awake worker that will run them itself.
        let slept = !has_injected_jobs();
        if !slept {
            self.sleeper_left();
        } else {
            sleep_state.count_sleep();
            let deadlock = self
                .deadlock
                .as_ref()
                .filter(|_| idle_state.counts_as_active);
            // The handler may run before the wait, and may post work that
            // wakes this very worker: so not under its sleep lock.
            let before_wait = || {
                if let Some(deadlock) = deadlock {
                    deadlock.worker_sleeping();
                }
            };
            // The first sleeper to find the driver free blocks in it; the
            // others on their condvars. Posts wake condvar sleepers first
            // (`wake_any_threads`), so the driver's sleeper is the last
            // worker to be woken: while any worker sleeps, one of them
            // waits for I/O and timers.
            // Read under our sleep lock: see `enable_driver`.
            let driver = self
                .driver
                .as_deref()
                .filter(|_| self.driver_enabled.load(Ordering::SeqCst));
            // A sleeper whose thread hosts a guest runtime sleeps in it, and the
            // driver's sleeper has the guest runtime watch the driver for it.
            let guest = guest.filter(|h| h.can_block());
            let driver = driver.filter(|d| self.acquire_driver(worker_index, *d));
            // No longer active: under our sleep lock, after the final
            // check, so a poster that injected work before it slept was
            // seen above, and one that sees us blocked from now on adds us
            // back when it wakes us (`activity.rs`). If the pool is quiet
            // now, the driver's sleeper decides whether a paused clock may
            // jump: told, unless it is us (we decide after this, and read
            // this end).
            if self.activity.end() && driver.is_none() {
                if let Some(driver) = &self.driver {
                    driver.pool_quiet();
                }
            }
            match (driver, guest) {
                (Some(driver), Some(guest)) => {
                    // As in the driver: it may end the sleep itself.
                    sleep_state.block_in_guest(
                        is_blocked,
                        guest,
                        Some(wakers),
                        before_wait,
                        || self.blocked_sleeper_left(),
                    );
                    driver.release();
                }
                (None, Some(guest)) => {
                    sleep_state.block_in_guest(is_blocked, guest, None, before_wait, || ());
                }
                (Some(driver), None) => {
                    // The driver may end the sleep itself: it counts that as
                    // a wakeup (`self_wakes`), so that sleeps minus wakeups
                    // stays the sleepers.
                    sleep_state.block_in_driver(
                        is_blocked,
                        driver,
                        wakers,
                        before_wait,
                        || self.is_quiet(),
                        || self.blocked_sleeper_left(),
                    );
                    driver.release();
                }
                (None, None) if deadlock.is_none() => sleep_state.block(is_blocked),
                (None, None) => sleep_state.block_after(is_blocked, before_wait),
            }
            if pulled(Tooth::SleeperAddsItself) {
                self.activity.begin();
            }
            if let Some(deadlock) = deadlock {
                deadlock.worker_awake();
            }
            sleep_state.count_woke();
        }

        idle_state.wake_fully();
        latch.wake_up();
        slept
    }

    /// The sleeper `index`, under its sleep lock: become the driver's
    /// holder. If another thread holds it, leave word for that thread's
    /// release (`driver_released`, if it is a busy worker) and try once
    /// more: either this try finds the driver free, or the holder finds the
    /// word and wakes us, so that we go back to sleep in the driver. False
    /// if we sleep without it.
    fn acquire_driver(&self, index: usize, driver: &dyn Park) -> bool {
        if driver.try_acquire() {
            return true;
        }
        // Relaxed: the fence below orders it.
        self.driver_missed.store(index + 1, Ordering::Relaxed);
        // Fence #6 (the missing sleeper's): orders our word above before
        // our second try below; pairs with fence #7 in `driver_released`,
        // which orders the holder's release before its read of the word.
        // If ours comes first, the holder reads our word (or a later one)
        // and wakes a sleeper that missed; if theirs does, our try sees the
        // driver free. See README.md, "the driver handed over".
        if !pulled(Tooth::SkipMissedFence) {
            fence(Ordering::SeqCst);
        }
        if driver.try_acquire() {
            // Taken after all: withdraw the word, unless another sleeper's
            // replaced it. (A word left behind only costs a spurious wake.)
            let _ = self.driver_missed.compare_exchange(
                index + 1,
                0,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            return true;
        }
        false
    }

    /// A busy worker released the driver after a poll without blocking,
    /// and goes back to its tasks: if a sleeper found the driver held
    /// meanwhile and blocked on its condvar (or in its guest runtime), nobody
    /// watches I/O and timers now. Wake it: it searches, and goes back to
    /// sleep in the driver. Returns the workers woken (0 or 1).
    pub(crate) fn driver_released(&self) -> usize {
        // Fence #7 (the releaser's): orders the release before our read of
        // the word; pairs with fence #6 in `acquire_driver`.
        fence(Ordering::SeqCst);
        // Relaxed: after fence #7, so a word that fence #6 ordered before
        // it is visible here.
        if self.driver_missed.load(Ordering::Relaxed) == 0 {
            // No sleeper missed the driver: the usual case.
            return 0;
        }
        match self.driver_missed.swap(0, Ordering::Relaxed) {
            0 => 0,
            // Only if it blocked without the driver. (It may have been woken
            // since, and asleep again: in the driver, it needs no wake; out
            // of it, it missed again and left its word again.)
            missed => usize::from(self.wake_thread_if(missed - 1, |how| how == Blocked::OnCondvar)),
        }
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
        if !pulled(Tooth::SkipPosterFence) {
            fence(Ordering::SeqCst);
        }
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

    /// Wake up to `num_to_wake` sleepers: those on their condvars first, the
    /// one in the driver last, so that I/O stays watched while any worker
    /// sleeps. One pass over the sleepers' locks, and one more lock for the
    /// driver's sleeper only when it must be woken.
    #[cold]
    fn wake_any_threads(&self, mut num_to_wake: usize) -> usize {
        let mut woken = 0;
        // The sleeper in the driver, if this pass saw it: woken only if the
        // condvar sleepers were too few.
        let mut in_driver = None;
        for index in 0..self.worker_sleep_states.len() {
            if num_to_wake == 0 {
                return woken;
            }
            let on_condvar = |how| {
                if how == Blocked::InDriver {
                    in_driver = Some(index);
                }
                how == Blocked::OnCondvar
            };
            if self.wake_thread_if(index, on_condvar) {
                num_to_wake -= 1;
                woken += 1;
            }
        }
        // It may have been woken since we saw it: then it wakes no one.
        if let Some(index) = in_driver.filter(|_| num_to_wake > 0) {
            if self.wake_thread_if(index, |how| how == Blocked::InDriver) {
                woken += 1;
            }
        }
        woken
    }

    /// Wake worker `index` if it is blocked; the waker takes it off the
    /// sleeping count (while holding its lock, so the count never shows a
    /// woken worker as asleep to a later poster). True if it was blocked.
    pub(crate) fn wake_specific_thread(&self, index: usize) -> bool {
        self.wake_thread_if(index, |_| true)
    }

    fn wake_thread_if(&self, index: usize, which: impl FnOnce(Blocked) -> bool) -> bool {
        self.worker_sleep_states[index].wake_then(self.driver.as_deref(), which, || {
            self.blocked_sleeper_left();
            if let Some(note) = &self.wake_note {
                note.waking(index);
            }
        })
    }
}
