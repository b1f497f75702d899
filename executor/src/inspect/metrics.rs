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
//!   (`snapshot::metrics`); every other wakeup is counted here, by the
//!   thread that woke the sleeper.
//! * Busy time is read from the clock (`BusyClock`) twice per busy period,
//!   where a worker finds work after an idle search or a sleep and where
//!   its search for more fails (`WorkerThread::wait_until`), never per
//!   poll. The period under way is kept as its start
//!   (`busy_since`), so a snapshot counts a worker that has been busy for
//!   an hour without waiting for it to idle.
//! * Alive tasks are not a counter of their own: `spawned` minus `ended`,
//!   each bumped by the thread where it happens (a task's future is dropped
//!   where it last ran, or by a shutdown).

use super::poll_times::PollTimes;
use crate::task::id::TaskId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
    /// ran long (or a task a worker deferred after its budget made it
    /// yield, when the worker was held up a while before running it), so
    /// that a sleeping worker could run them.
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
    /// Tasks spawned (`spawn`, `spawn_local`) and not yet completed,
    /// cancelled or dropped, now: a gauge. `spawn_blocking` closures are
    /// not counted here (see `blocking_threads` and `blocking_queue_depth`).
    pub alive_tasks: usize,
    /// Tasks waiting in the pool's shared queue (the injector: spawned or
    /// woken by threads that are not its workers), now: a gauge.
    pub injector_depth: usize,
    /// `spawn_blocking` closures waiting for a blocking thread, now: a
    /// gauge.
    pub blocking_queue_depth: usize,
    /// Time the workers spent running tasks and jobs, summed over the
    /// workers: from the moment a worker finds work until its search for
    /// more fails (searching between two tasks included; searching rounds
    /// and sleeps when out of work not). At most the pool's age times its
    /// workers; `busy` over that is the pool's utilization. With
    /// `tokio-compat`, the time a worker's tokio runtime spends running
    /// tokio's tasks while the worker is otherwise idle (asleep in it)
    /// counts too; those tasks are the runtime's, not the pool's, and are
    /// not in `spawned`, `polls` or `alive_tasks`.
    pub busy: Duration,
    /// Polls that ended with the cooperative budget spent (the task was
    /// made to yield: see [`consume_budget`](crate::consume_budget)).
    pub forced_yields: u64,
    /// Readiness events the I/O driver delivered to sockets and other
    /// sources (its own wake-ups and timers not counted).
    pub io_events: u64,
    /// Which engine runs the pool's file operations ([`crate::fs`]):
    /// `None` until the first one chose.
    pub fs_engine: Option<FsEngine>,
    /// File operations completed on the pool's io_urings.
    pub fs_ring_ops: u64,
    /// File operations run on the blocking threads (batched; not counted
    /// in `blocking_queue_depth`).
    pub fs_blocking_ops: u64,
    /// Spawns refused because the pool had
    /// [`Builder::max_tasks`](crate::Builder::max_tasks) live tasks (each a
    /// [`SpawnError`](crate::SpawnError) or a panic its caller saw).
    pub rejected_spawns: u64,
    /// `spawn_blocking` closures refused because the blocking queue was
    /// full ([`Builder::max_blocking_queue`](crate::Builder::max_blocking_queue):
    /// each a [`JoinError`](crate::JoinError) whose `is_rejected()` is true).
    pub rejected_blocking: u64,
    /// Accepts of the pool's listeners that failed for want of file
    /// descriptors (`EMFILE`, `ENFILE`), each answering the connection at
    /// the head of the backlog with a reset
    /// ([`TcpListener::accept`](crate::net::TcpListener::accept)).
    pub accept_errors: u64,
    /// Tasks ready to run and not yet polled, now: a gauge. The injector's
    /// (`injector_depth`) and every worker's own queue
    /// ([`WorkerMetrics::local_queue_depth`]), summed.
    pub queued_tasks: usize,
    /// The load signal for admission control: how long a task woken now
    /// would wait before a worker polls it. Measured on sampled tasks, from
    /// the schedule (a wake, a yield, a spawn) to the start of the poll, and
    /// smoothed (each sample moves it an eighth of the way); while a sample
    /// waits longer than that, its wait so far. Zero once the pool has run
    /// nothing for 100 ms. [`Handle::schedule_delay`](crate::Handle::schedule_delay)
    /// reads it alone, for a check per request.
    pub schedule_delay: Duration,
}

/// A snapshot of one worker's counters: see
/// [`Pool::worker_metrics`](crate::Pool::worker_metrics).
///
/// All counts are totals since the pool was built, but
/// `local_queue_depth`. In a quiescent pool the workers' `busy` and
/// `polls` add up to the pool's [`Metrics`].
///
/// # Examples
///
/// ```
/// let pool = pool::Builder::new().worker_threads(2).build().unwrap();
/// pool.block_on(pool.spawn(async {})).unwrap();
/// let workers = pool.worker_metrics();
/// assert_eq!(workers.len(), 2);
/// assert_eq!(workers.iter().map(|w| w.polls).sum::<u64>(), pool.metrics().polls);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerMetrics {
    /// Time this worker spent running tasks and jobs (see
    /// [`Metrics::busy`]).
    pub busy: Duration,
    /// Task polls by this worker.
    pub polls: u64,
    /// Tasks this worker took from another worker's deque.
    pub steals: u64,
    /// Times this worker went to sleep.
    pub sleeps: u64,
    /// Times this worker woke from a sleep (woken by another thread, or by
    /// its I/O driver's events and timers).
    pub wakeups: u64,
    /// Tasks queued on this worker now (its deque and its next-task slot;
    /// others may steal them): a gauge.
    pub local_queue_depth: usize,
}

/// The counters of one worker (or of all outside threads together).
///
/// `repr(C)`, in this order: what every poll writes (`polls`, `running`)
/// comes first, on one cache line; the histogram, written per poll only
/// when on, comes last.
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct WorkerStats {
    pub(crate) polls: AtomicU64,
    /// Not a counter: the task this worker is polling (its id, 0 for
    /// none), for `task_id`, the dump and the stall detector. Here so that
    /// it shares the cache line that `polls` already dirties.
    running: AtomicU64,
    pub(crate) spawned: AtomicU64,
    /// Tasks (not `spawn_blocking` closures) whose future was dropped: the
    /// alive tasks are `spawned` minus these.
    pub(crate) ended: AtomicU64,
    pub(crate) steals: AtomicU64,
    pub(crate) injected: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    pub(crate) driver_polls: AtomicU64,
    pub(crate) rescued: AtomicU64,
    pub(crate) jobs: AtomicU64,
    pub(crate) stalls: AtomicU64,
    pub(crate) forced_yields: AtomicU64,
    /// Busy periods that ended, in nanoseconds (`BusyClock`).
    busy_ns: AtomicU64,
    /// When the busy period under way began, in `BusyClock` nanoseconds
    /// plus one; 0 while the worker is not busy.
    busy_since: AtomicU64,
    /// While the worker sleeps in its tokio runtime (`tokio-compat`): its
    /// runtime's busy time, in nanoseconds, when the sleep began, plus one;
    /// else 0. Tokio's work in that sleep is the worker's busy time too.
    guest_since: AtomicU64,
    /// `Builder::poll_time_histogram`'s counts (untouched when it is off).
    pub(crate) poll_times: PollTimes,
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
        m.forced_yields += get(&self.forced_yields);
    }

    /// Tasks ended (`Metrics::alive_tasks` is the spawned minus the ended,
    /// summed over every block: a task may be spawned by one thread and
    /// end on another).
    pub(crate) fn ended(&self) -> u64 {
        self.ended.load(Ordering::Relaxed)
    }

    /// Owner: a busy period begins now, unless one is under way (a
    /// `block_on` on a worker runs tasks inside a poll).
    #[inline]
    pub(crate) fn busy_begin(&self, clock: &BusyClock) {
        if self.busy_since.load(Ordering::Relaxed) == 0 {
            self.busy_since.store(clock.now() + 1, Ordering::Release);
        }
    }

    /// Owner: the busy period under way, if any, ends now.
    #[inline]
    pub(crate) fn busy_end(&self, clock: &BusyClock) {
        let since = self.busy_since.load(Ordering::Relaxed);
        if since != 0 {
            let spent = (clock.now() + 1).saturating_sub(since);
            self.bump_owned(|s| &s.busy_ns, spent);
            // Release, after the total: a reader that sees the period over
            // (`busy`) sees it in the total.
            self.busy_since.store(0, Ordering::Release);
        }
    }

    /// Owner: add `spent` to the busy time (tokio's work run on this
    /// worker while it was not in a busy period of its own: `tokio_compat/worker_runtime.rs`).
    #[cfg(feature = "tokio-compat")]
    pub(crate) fn add_busy(&self, spent: Duration) {
        if !spent.is_zero() {
            self.bump_owned(|s| &s.busy_ns, spent.as_nanos() as u64);
        }
    }

    /// Owner: a sleep in the worker's tokio runtime begins, whose runtime
    /// has been busy `tokio_busy` so far.
    #[cfg(feature = "tokio-compat")]
    pub(crate) fn guest_sleep_begins(&self, tokio_busy: Duration) {
        self.guest_since
            .store(tokio_busy.as_nanos() as u64 + 1, Ordering::Release);
    }

    /// Owner: that sleep ended, its runtime now busy `tokio_busy` in all:
    /// the difference is the worker's.
    #[cfg(feature = "tokio-compat")]
    pub(crate) fn guest_sleep_ends(&self, tokio_busy: Duration) {
        let since = self.guest_since.load(Ordering::Relaxed);
        if since != 0 {
            let spent = (tokio_busy.as_nanos() as u64 + 1).saturating_sub(since);
            self.bump_owned(|s| &s.busy_ns, spent);
            // Release, after the total: as in `busy_end`.
            self.guest_since.store(0, Ordering::Release);
        }
    }

    /// Is a busy period under way?
    #[inline]
    pub(crate) fn is_busy(&self) -> bool {
        self.busy_since.load(Ordering::Relaxed) != 0
    }

    /// The busy time so far, the period under way included, and the part
    /// of a sleep in the worker's tokio runtime under way (`tokio_busy`: the
    /// runtime's busy time now; never called without `tokio-compat`).
    pub(crate) fn busy(&self, clock: &BusyClock, tokio_busy: impl Fn() -> Duration) -> Duration {
        // The starts, then the total, then the starts again: equal starts
        // mean the total was read within one state (a period or a sleep
        // under way, or none), so the two are not summed twice or missed.
        loop {
            let since = self.busy_since.load(Ordering::Acquire);
            let guest_at = self.guest_since.load(Ordering::Acquire);
            let total = self.busy_ns.load(Ordering::Acquire);
            if self.busy_since.load(Ordering::Acquire) != since
                || self.guest_since.load(Ordering::Acquire) != guest_at
            {
                continue;
            }
            let current = if since == 0 {
                0
            } else {
                (clock.now() + 1).saturating_sub(since)
            };
            let in_guest = if guest_at == 0 {
                0
            } else {
                (tokio_busy().as_nanos() as u64 + 1).saturating_sub(guest_at)
            };
            return Duration::from_nanos(total + current + in_guest);
        }
    }

    /// Polls and steals (for `WorkerMetrics`).
    pub(crate) fn polls_and_steals(&self) -> (u64, u64) {
        (
            self.polls.load(Ordering::Relaxed),
            self.steals.load(Ordering::Relaxed),
        )
    }
}

/// The clock of busy time: nanoseconds since the pool was built, read
/// where a worker's busy period begins and ends (not per poll). `Instant`,
/// not the CPU's tick counter: totals kept in nanoseconds add up exactly
/// (a worker's to the pool's) and stay put while the pool sleeps, and a
/// reading costs about 25 ns twice per period, not per task.
#[derive(Debug)]
pub(crate) struct BusyClock {
    epoch: Instant,
}

impl BusyClock {
    pub(crate) fn new() -> BusyClock {
        BusyClock {
            epoch: Instant::now(),
        }
    }

    /// Nanoseconds since the pool was built.
    #[inline]
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

/// Which engine runs a pool's file operations ([`Metrics::fs_engine`](crate::Metrics::fs_engine)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FsEngine {
    /// The pool's io_uring runs opens, reads, writes, syncs and closes; the
    /// blocking threads run the rest (metadata, directories).
    IoUring,
    /// The blocking threads run every file operation: the kernel gave no
    /// io_uring, or `POOL_FS=blocking`.
    Blocking,
}
