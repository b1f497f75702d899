//! `TaskId`: a task's id, unique among all tasks of all pools of the
//! process.
//!
//! # Invariants
//!
//! * An id is never handed out twice in one process: ids come from one
//!   global counter, in blocks of `ID_BLOCK` that each worker and each
//!   outside thread takes for itself (so that threads spawning at once do
//!   not share a cache line per spawn). Ids are therefore unique, but
//!   ordered by spawn time only within one thread.
//! * A seeded pool reserves one large block for itself (`reserve`) and
//!   hands its ids out in spawn order, so that the same schedule numbers
//!   its tasks the same way relative to the block's start.
//! * An id is below 2^48 (a task header packs it with its spawn site); the
//!   2^48th spawn of a process panics rather than repeat one.

use std::cell::Cell;
use std::fmt;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Ids stay below this (a task header keeps an id in 48 bits).
const MAX_ID: u64 = 1 << 48;

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

    /// Reserve `n` ids for one owner (a seeded pool): the first of them.
    pub(crate) fn reserve(n: u64) -> u64 {
        NEXT_ID.fetch_add(n, Ordering::Relaxed)
    }

    /// An id from a block `reserve` returned.
    pub(crate) fn from_reserved(n: u64) -> TaskId {
        TaskId::checked(n)
    }

    #[inline]
    fn checked(n: u64) -> TaskId {
        // A task header keeps the id in 48 bits (`TaskHeader`'s `id_high` and `id_low`): 2.8e14
        // spawns, nine years of a million spawns a second.
        assert!(
            n < MAX_ID,
            "pool: this process has spawned 2^48 tasks, and task ids are 48 bits"
        );
        TaskId(NonZeroU64::new(n).expect("task ids start at 1"))
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
