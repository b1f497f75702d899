//! Seeing inside a pool: task ids and spawn locations, the live-task dump,
//! the stall detector and the worker timeline. See `README.md` here for
//! what each costs and how to read a timeline.
//!
//! # Invariants
//!
//! * A [`TaskId`] is never handed out twice in one process: ids come from
//!   one global counter, taken by each thread in blocks of `ID_BLOCK` (so
//!   that spawning threads do not share a cache line per spawn); ids are
//!   therefore unique, but only ordered by spawn time within one thread.
//! * `CURRENT_TASK` names the task whose future this thread is polling,
//!   for exactly the length of that poll (`TaskFuture::poll` sets it and
//!   puts back the previous value, so nested polls, a `block_on` inside a
//!   task, restore the outer task's id).
//! * Nothing here is part of the sleep protocol: every atomic is a
//!   statistic or a record, read with `Relaxed` (a stale value shows an
//!   older state of the pool, never a wrong one for a moment that existed).

pub(crate) mod dump;
pub(crate) mod stall;
pub(crate) mod timeline;

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

/// Ids a thread takes from the global counter at once.
const ID_BLOCK: u64 = 1024;

impl TaskId {
    /// A fresh id.
    #[inline]
    pub(crate) fn next() -> TaskId {
        static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);
        thread_local! {
            /// The next id of this thread's block, and the block's end.
            static BLOCK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
        }
        BLOCK.with(|block| {
            let (mut next, mut end) = block.get();
            if next == end {
                // Relaxed: only uniqueness matters, which the atomic
                // read-modify-write gives in any ordering.
                next = NEXT_BLOCK.fetch_add(ID_BLOCK, Ordering::Relaxed);
                end = next + ID_BLOCK;
            }
            block.set((next + 1, end));
            TaskId(NonZeroU64::new(next).expect("task ids start at 1"))
        })
    }

    /// The id as a number (never 0).
    pub(crate) fn as_u64(self) -> u64 {
        self.0.get()
    }

    /// The id whose number is `n`, if `n` is not 0 (a worker's "running
    /// nothing").
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
    CURRENT_TASK.with(Cell::get)
}

/// Make `id` the current task for the length of `f` (one poll).
#[inline]
pub(crate) fn with_current_task<R>(id: TaskId, f: impl FnOnce() -> R) -> R {
    let outer = CURRENT_TASK.with(|c| c.replace(Some(id)));
    let r = f();
    CURRENT_TASK.with(|c| c.set(outer));
    r
}

/// A coarse monotonic clock for task ages: milliseconds since the first
/// reading in this process, from `CLOCK_MONOTONIC_COARSE` on Linux (about
/// 5 ns a reading, the kernel tick's resolution: 1-10 ms), else `Instant`.
pub(crate) fn coarse_now_ms() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `clock_gettime` writes one `timespec`, which `ts` is.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
        let ms = ts.tv_sec as u64 * 1_000 + ts.tv_nsec as u64 / 1_000_000;
        static EPOCH: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        ms.saturating_sub(*EPOCH.get_or_init(|| ms))
    }
    #[cfg(not(target_os = "linux"))]
    {
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        EPOCH
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_millis() as u64
    }
}
