//! Counters of what a pool did, and their snapshot, [`Metrics`].
//!
//! # Invariants
//!
//! * Each worker counts into its own cache-padded [`WorkerStats`] and is the
//!   only thread that writes it: an increment is a relaxed load and a relaxed
//!   store (`bump_owned`), no locked instruction, no shared cache line.
//! * Threads that are not workers of the pool count into one shared
//!   `WorkerStats` with `fetch_add` (`bump_shared`): those events (spawns and
//!   wakes from outside) already cost a cross-thread handoff.
//! * Counters are statistics, never protocol state: `Relaxed` is enough, and
//!   a snapshot taken while the pool runs is a sum of recent values, not an
//!   atomic cut.
//! * Sleeps, and the sleeps in the I/O driver that the driver ended itself,
//!   are counted by the sleep manager (`SleepState`), which adds them in
//!   (`Registry::metrics`); every other wakeup is counted here, by the
//!   thread that woke the sleeper.

use crate::task::TaskId;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a worker was polling before a nested poll (`WorkerStats::begin_poll`).
#[derive(Clone, Copy)]
pub(crate) struct OuterPoll(u64);

/// A snapshot of a pool's counters, summed over its workers when
/// [`Pool::metrics`](crate::Pool::metrics) or
/// [`Handle::metrics`](crate::Handle::metrics) is called.
///
/// All counts are totals since the pool was built.
///
/// # Examples
///
/// ```
/// let pool = pool::Builder::new().worker_threads(2).build().unwrap();
/// pool.block_on(pool.spawn(async {})).unwrap();
/// let m = pool.metrics();
/// assert_eq!(m.workers, 2);
/// assert_eq!(m.spawned, 1);
/// assert!(m.polls >= 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Worker threads of the pool.
    pub workers: usize,
    /// Tasks spawned onto this pool.
    pub spawned: u64,
    /// Task polls by workers.
    pub polls: u64,
    /// Tasks a worker took from another worker's deque.
    pub steals: u64,
    /// Tasks that entered through the global injector (spawned or woken by a
    /// thread that is not a worker of this pool).
    pub injected: u64,
    /// Times a worker went to sleep (on its condvar, or in the I/O driver).
    pub sleeps: u64,
    /// Times a thread signalled a sleeping worker to wake.
    pub wakeups: u64,
    /// Times a busy worker polled the I/O driver without blocking (every
    /// few dozen searches, while the pool has sockets or timers). Sleeps in
    /// the driver count as `sleeps`.
    pub driver_polls: u64,
    /// Tasks the watcher took out of the LIFO slot of a worker whose poll
    /// ran long, so that a sleeping worker could run them.
    pub rescued: u64,
    /// Fork-join jobs a worker ran from a job deque: a `join`'s second half
    /// that another worker stole (or that its owner ran while it waited),
    /// and `scope` spawns. A second half popped back and run inline by its
    /// own `join` is not counted.
    pub jobs: u64,
    /// Polls the stall detector reported (see
    /// [`Builder::on_stall`](crate::Builder::on_stall)).
    pub stalls: u64,
    /// Times the deadlock handler was called (see
    /// [`Builder::deadlock_handler`](crate::Builder::deadlock_handler)).
    pub deadlocks: u64,
    /// Blocking threads alive now (see [`spawn_blocking`](crate::spawn_blocking)).
    /// Unlike the others, this is a gauge, not a total.
    pub blocking_threads: usize,
}

/// The counters of one worker (or of all outside threads together).
#[derive(Debug, Default)]
pub(crate) struct WorkerStats {
    pub(crate) spawned: AtomicU64,
    pub(crate) polls: AtomicU64,
    pub(crate) steals: AtomicU64,
    pub(crate) injected: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    pub(crate) driver_polls: AtomicU64,
    pub(crate) rescued: AtomicU64,
    pub(crate) jobs: AtomicU64,
    pub(crate) stalls: AtomicU64,
    /// Not a counter: the task this worker is polling (its id, 0 for
    /// none), for `task_id`, the dump and the stall detector. Here so that
    /// it shares the cache line that `polls` already dirties.
    running: AtomicU64,
}

impl WorkerStats {
    /// A poll of task `id` begins on this worker (which owns these stats).
    /// Returns what it was polling before (a `block_on` inside a task runs
    /// other tasks), for `end_poll`.
    ///
    /// Release on the store, Acquire on the watcher's load (`current_poll`):
    /// a watcher that sees the new id sees this poll's count.
    #[inline]
    pub(crate) fn begin_poll(&self, id: TaskId) -> OuterPoll {
        self.bump_owned(|s| &s.polls, 1);
        let outer = OuterPoll(self.running.load(Ordering::Relaxed));
        self.running.store(id.as_u64(), Ordering::Release);
        outer
    }

    /// The poll begun by `begin_poll` ended.
    #[inline]
    pub(crate) fn end_poll(&self, outer: OuterPoll) {
        self.running.store(outer.0, Ordering::Release);
    }

    /// The task being polled now, if any.
    pub(crate) fn running_task(&self) -> Option<TaskId> {
        TaskId::from_u64(self.running.load(Ordering::Acquire))
    }

    /// The poll count and the task being polled.
    pub(crate) fn current_poll(&self) -> (u64, Option<TaskId>) {
        let task = self.running_task();
        (self.polls.load(Ordering::Relaxed), task)
    }

    /// Add `n` to a counter only this thread writes.
    #[inline]
    pub(crate) fn bump_owned(&self, counter: impl Fn(&Self) -> &AtomicU64, n: u64) {
        let c = counter(self);
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }

    /// Add `n` to a counter that several threads write.
    #[inline]
    pub(crate) fn bump_shared(&self, counter: impl Fn(&Self) -> &AtomicU64, n: u64) {
        counter(self).fetch_add(n, Ordering::Relaxed);
    }

    /// Add this block's counters into `m`.
    pub(crate) fn add_to(&self, m: &mut Metrics) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        m.spawned += get(&self.spawned);
        m.polls += get(&self.polls);
        m.steals += get(&self.steals);
        m.injected += get(&self.injected);
        m.wakeups += get(&self.wakeups);
        m.driver_polls += get(&self.driver_polls);
        m.rescued += get(&self.rescued);
        m.jobs += get(&self.jobs);
        m.stalls += get(&self.stalls);
    }
}
