//! Seeing inside a pool: task ids and spawn locations, the live-task dump,
//! the stall detector and the worker timeline. See `README.md` here for
//! what each costs and how to read a timeline.
//!
//! # Invariants
//!
//! * A [`TaskId`] is never handed out twice in one process: ids come from
//!   one global counter, in blocks of `ID_BLOCK` that each worker and each
//!   outside thread takes for itself (so that threads spawning at once do
//!   not share a cache line per spawn). Ids are therefore unique, but
//!   ordered by spawn time only within one thread.
//! * The current task (`task_id`) is, on a worker, the one its stats name
//!   as running (`WorkerStats::begin_poll`, which a nested poll restores);
//!   on a blocking thread, `CURRENT_TASK`, set around each closure. Workers
//!   pay no thread-local access per poll for it.
//! * A task's age comes from `coarse_ticks`, kept in 32 bits of 1/256 s:
//!   exact to the kernel's tick (1-10 ms), taken modulo 194 days. A spawn
//!   reads it from its pool's `CoarseClock`, which the watcher publishes at
//!   every look while it runs (at most a look, 1 ms, behind; the watcher
//!   runs whenever a worker spawned locally) and withdraws before it parks;
//!   with nothing published, the spawn reads the clock itself. (A clock
//!   read per spawn cost spawn_many_local 10% of its time.)
//! * Nothing here is part of the sleep protocol: every atomic is a
//!   statistic or a record, read with `Relaxed` (a stale value shows an
//!   older state of the pool, never a wrong one for a moment that existed).

pub(crate) mod dump;
pub(crate) mod stall;
pub(crate) mod timeline;

use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::fmt;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

pub use dump::{TaskDump, TaskInfo, TaskState};
pub use stall::Stall;

/// A task's id: unique among all tasks of all pools of this process.
///
/// Ids are taken from a counter by each thread in blocks, so they are
/// unique but not in spawn order across threads. `Display` shows the
/// number.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let handle = pool.spawn(async { pool::task_id() });
/// let id = handle.id();
/// assert_eq!(pool.block_on(handle).unwrap(), Some(id));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(NonZeroU64);

/// Ids a worker takes from the global counter at once.
const ID_BLOCK: u64 = 1024;

/// The next id not handed out yet (ids start at 1).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl TaskId {
    /// A fresh id from a block of ids (`block`: the next id and the block's
    /// end, kept by a worker or an outside thread), so that threads
    /// spawning at once do not share a cache line per spawn.
    #[inline]
    pub(crate) fn next_in(block: &Cell<(u64, u64)>) -> TaskId {
        let (mut next, mut end) = block.get();
        if next == end {
            next = NEXT_ID.fetch_add(ID_BLOCK, Ordering::Relaxed);
            end = next + ID_BLOCK;
        }
        block.set((next + 1, end));
        TaskId::checked(next)
    }

    #[inline]
    fn checked(n: u64) -> TaskId {
        TaskId(NonZeroU64::new(n).expect("task ids start at 1 and do not wrap"))
    }

    /// The id as a number (never 0).
    #[inline]
    pub(crate) fn as_u64(self) -> u64 {
        self.0.get()
    }

    /// The id whose number is `n`, if `n` is not 0 (a worker's "running
    /// nothing").
    #[inline]
    pub(crate) fn from_u64(n: u64) -> Option<TaskId> {
        NonZeroU64::new(n).map(TaskId)
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

thread_local! {
    static CURRENT_TASK: Cell<Option<TaskId>> = const { Cell::new(None) };
}

/// The id of the task being polled on this thread, if any.
///
/// `None` outside tasks: on a plain thread, in the future of a
/// [`block_on`](crate::block_on) (which is not a task), in a fork-join
/// job. Inside a [`spawn_blocking`](crate::spawn_blocking) closure it is
/// that blocking task's id.
///
/// # Examples
///
/// ```
/// assert_eq!(pool::task_id(), None);
/// let pool = pool::Pool::new().unwrap();
/// let h = pool.spawn(async { pool::task_id() });
/// let id = h.id();
/// assert_eq!(pool.block_on(h).unwrap(), Some(id));
/// ```
pub fn task_id() -> Option<TaskId> {
    match crate::worker::WorkerThread::current() {
        Some(worker) => worker.stats().running_task(),
        None => CURRENT_TASK.with(Cell::get),
    }
}

/// Make `id` the current task of this (blocking) thread for the length of
/// `f`: one closure.
pub(crate) fn with_current_task<R>(id: TaskId, f: impl FnOnce() -> R) -> R {
    let outer = CURRENT_TASK.with(|c| c.replace(Some(id)));
    let r = f();
    CURRENT_TASK.with(|c| c.set(outer));
    r
}

/// Ticks of a coarse monotonic clock, for task ages: 1/256 s
/// (`COARSE_TICK_NS`), modulo 2^32 (194 days), from
/// `CLOCK_MONOTONIC_COARSE` on Linux (the kernel tick's resolution, 1-10
/// ms; a few nanoseconds a reading, no division), else `Instant`.
#[inline]
pub(crate) fn coarse_ticks() -> u32 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `clock_gettime` writes one `timespec`, which `ts` is.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
        // tv_nsec * 256 / 10^9 without a division: 1099 / 2^32 is 256 / 10^9
        // to 0.05%, and stays below 256 for tv_nsec < 10^9.
        ((ts.tv_sec as u64) << 8 | (ts.tv_nsec as u64 * 1099) >> 32) as u32
    }
    #[cfg(not(target_os = "linux"))]
    {
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let elapsed = EPOCH.get_or_init(std::time::Instant::now).elapsed();
        (elapsed.as_secs() << 8 | u64::from(elapsed.subsec_nanos()) * 1099 >> 32) as u32
    }
}

/// A pool's clock for task ages: `coarse_ticks` as its watcher last
/// published it while the pool was busy (so a spawn costs one relaxed load,
/// no clock read), else read afresh. Bit 0 of the word says "published".
#[derive(Debug, Default)]
pub(crate) struct CoarseClock {
    word: CachePadded<AtomicU64>,
}

impl CoarseClock {
    /// `coarse_ticks`, at most one watcher look (1 ms) old.
    #[inline(always)]
    pub(crate) fn now(&self) -> u32 {
        // Relaxed: a statistic (see the module invariants).
        let word = self.word.load(Ordering::Relaxed);
        if word & 1 != 0 {
            (word >> 1) as u32
        } else {
            coarse_ticks()
        }
    }

    /// Watcher, at each look while any worker is awake.
    pub(crate) fn publish(&self) {
        self.word
            .store(u64::from(coarse_ticks()) << 1 | 1, Ordering::Relaxed);
    }

    /// Watcher, before it parks or returns: spawns read the clock again.
    pub(crate) fn withdraw(&self) {
        self.word.store(0, Ordering::Relaxed);
    }
}

/// The length of one `coarse_ticks` tick, 1/256 s, in nanoseconds.
pub(crate) const COARSE_TICK_NS: u64 = 1_000_000_000 / 256;
