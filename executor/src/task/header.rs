//! `TaskHeader`: the per-task metadata that async-task keeps in the task's
//! allocation, and how to find it from the task's waker.
//!
//! # Invariants
//!
//! * The header lives as long as the task's allocation, so the `Arc` in it
//!   keeps the owning pool alive for every reader of the header. (A schedule
//!   function must not rely on it after handing the runnable on: see
//!   `scheduler/spawn.rs`, `schedule_task`.)
//! * The header's slot is set once, before the task is first scheduled, so
//!   every later reader (the future's drop, `abort`) sees it.
//! * `activity` is written only by the thread that schedules, polls or drops
//!   the task's future, which async-task serializes: relaxed loads and
//!   stores, never a read-modify-write. Anyone may read it (the dump).
//! * Every task's header lies at one fixed distance from its waker's data
//!   pointer (`note_waker` checks it at every spawn), so the registry of
//!   live tasks keeps one waker per task and finds the header from it.

use super::id::TaskId;
use super::owned::{OwnedTasks, Slot};
use super::schedule::{Schedule, Scheduler};
use super::site;
use std::panic::Location;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Waker;

/// The top bit of `TaskHeader::state`: the task was aborted.
const ABORTED: u64 = 1 << 63;
/// A `spawn_blocking` closure's task.
const BLOCKING: u64 = 1 << 62;
/// A `spawn_local` task: pinned to the worker that spawned it.
const LOCAL: u64 = 1 << 61;
const FLAGS: u64 = ABORTED | BLOCKING | LOCAL;
/// The slot bits of a task that is not registered (yet, or ever).
const UNREGISTERED: u64 = !FLAGS;

/// `TaskHeader::activity`: bit 0 is `SCHEDULED`, bit 1 `DONE` (the future
/// was dropped: the task is not live, though its registry entry may wait
/// for a removal batch, `owned.rs`), bits 2..32 the polls (saturating),
/// bits 32..64 the spawn time (`clock::coarse_ticks`).
const SCHEDULED: u64 = 1;
const DONE: u64 = 1 << 1;
const POLL_SHIFT: u32 = 2;
const POLLS_MAX: u64 = (1 << 30) - 1;
const BORN_SHIFT: u32 = 32;
/// `TaskHeader::ident`: the spawn site's index in the low bits, the id above
/// (`TaskId`s stay below 2^48).
const SITE_BITS: u32 = 16;

/// What runs a task, kept in its header's flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskKind {
    /// A future on the workers (`spawn`).
    Async,
    /// A closure on the blocking threads (`spawn_blocking`).
    Blocking,
    /// A `!Send` future pinned to the worker that spawned it (`spawn_local`).
    Local,
}

/// The per-task metadata, stored in the task's allocation: 32 bytes.
pub(crate) struct TaskHeader {
    /// The pool that owns the task (the scheduler's `Registry`).
    owner: Arc<Scheduler>,
    /// Where the task's waker is registered (`Slot::pack`, whose top three
    /// bits are always clear), or `UNREGISTERED`; set once, before the first
    /// run. Its top bits are flags: `ABORTED` (set by `JoinHandle::abort`:
    /// the next poll ends the task), `BLOCKING` and `LOCAL`. One word for
    /// all keeps every task 8 bytes smaller.
    state: AtomicU64,
    /// The task's id (`TaskId`, below 2^48) in the top 48 bits, its spawn
    /// site's index (`site::index_of`) in the low 16: written at spawn,
    /// never changed.
    ident: u64,
    /// Spawn time, poll count, whether the task is queued and whether its
    /// future was dropped (see the constants). Written only by the thread
    /// that schedules, polls or drops the task's future, which async-task
    /// serializes (a schedule happens before the run it leads to, a wake
    /// during a run schedules after it), so a relaxed load and store
    /// suffice, no read-modify-write; the dump reads it from anywhere.
    activity: AtomicU64,
}

impl TaskHeader {
    /// The header of a task of `owner`, spawned at `spawned_at` at the
    /// coarse time `born` (`CoarseClock::now`).
    #[inline]
    pub(crate) fn new(
        owner: Arc<Scheduler>,
        id: TaskId,
        spawned_at: &'static Location<'static>,
        kind: TaskKind,
        born: u32,
    ) -> TaskHeader {
        let flags = match kind {
            TaskKind::Async => 0,
            TaskKind::Blocking => BLOCKING,
            TaskKind::Local => LOCAL,
        };
        TaskHeader {
            owner,
            state: AtomicU64::new(UNREGISTERED | flags),
            ident: id.as_u64() << SITE_BITS | u64::from(site::index_of(spawned_at)),
            activity: AtomicU64::new(u64::from(born) << BORN_SHIFT),
        }
    }

    /// The task's id.
    #[inline]
    pub(crate) fn id(&self) -> TaskId {
        TaskId::from_u64(self.ident >> SITE_BITS).expect("a task id is never 0")
    }

    /// Where the task was spawned.
    pub(crate) fn spawned_at(&self) -> &'static Location<'static> {
        site::location(self.ident as u16)
    }

    /// The pool that owns the task.
    #[inline]
    pub(crate) fn owner(&self) -> &Arc<Scheduler> {
        &self.owner
    }

    /// Record where the task is registered. `Release` pairs with the
    /// `Acquire` of `slot`; the task is not yet scheduled, so no other thread
    /// can read it before the runnable's hand-off anyway.
    pub(crate) fn set_slot(&self, slot: Slot) {
        let packed = slot.pack();
        debug_assert_eq!(packed & FLAGS, 0);
        // A load and a store, not a read-modify-write: no other thread
        // writes this word before the spawn returns the handle (`abort`
        // needs the handle; the dump, which may already see the task
        // through the registry, only reads), so the only flag set is the
        // kind, which this keeps.
        let old = self.state.load(Ordering::Relaxed);
        debug_assert_eq!(old & !FLAGS, UNREGISTERED, "task registered twice");
        self.state.store(packed | (old & FLAGS), Ordering::Release);
    }

    pub(super) fn slot(&self) -> Option<Slot> {
        match self.state.load(Ordering::Acquire) & !FLAGS {
            UNREGISTERED => None,
            word => Some(Slot::unpack(word)),
        }
    }

    pub(super) fn is_aborted(&self) -> bool {
        self.state.load(Ordering::Acquire) & ABORTED != 0
    }

    pub(crate) fn abort(&self) {
        self.state.fetch_or(ABORTED, Ordering::Release);
    }

    /// True for a live task of the workers: not finished, not a blocking
    /// closure (the dump lists these).
    pub(crate) fn is_live_task(&self) -> bool {
        self.state.load(Ordering::Relaxed) & BLOCKING == 0
            && self.activity.load(Ordering::Relaxed) & DONE == 0
    }

    /// A `spawn_local` task.
    pub(crate) fn is_local(&self) -> bool {
        self.state.load(Ordering::Relaxed) & LOCAL != 0
    }

    /// The future is gone: it completed, panicked or was cancelled.
    pub(super) fn is_done(&self) -> bool {
        self.activity.load(Ordering::Relaxed) & DONE != 0
    }

    /// A waker of this task, while it is registered as live (an
    /// `AbortHandle`'s hold on it); `None` once its future is gone, or if
    /// it never was registered.
    pub(super) fn live_waker(&self) -> Option<Waker> {
        let waker = self.owner.live_tasks().waker(self.slot()?)?;
        // SAFETY: every registered waker was checked by `note_waker`
        // (`Registry::spawn_raw`), and the clone keeps its task alive while
        // the header is read. The slot may since have been reused by another
        // task: the comparison below says whether it is still ours (our
        // caller keeps this header alive, so no other task's header can be
        // at its address).
        let found = unsafe { header_of(&waker) };
        std::ptr::eq(found, self).then_some(waker)
    }

    /// The header of the task `waker` wakes, for a waker that `live_waker`
    /// returned.
    pub(super) fn of_live_waker(waker: &Waker) -> &TaskHeader {
        // SAFETY: `live_waker` returned it, so `note_waker` checked it, and
        // the caller's borrow of it keeps the task alive.
        unsafe { header_of(waker) }
    }

    /// The future was dropped (see `DONE`).
    pub(super) fn mark_done(&self) {
        let a = self.activity.load(Ordering::Relaxed);
        self.activity.store(a | DONE, Ordering::Relaxed);
    }

    /// The task was handed to a queue (its schedule function ran).
    #[inline]
    pub(crate) fn mark_scheduled(&self) {
        let a = self.activity.load(Ordering::Relaxed);
        self.activity.store(a | SCHEDULED, Ordering::Relaxed);
    }

    /// A poll begins: no longer queued, one poll more.
    #[inline]
    pub(super) fn begin_poll(&self) {
        let a = self.activity.load(Ordering::Relaxed);
        let polls = if (a >> POLL_SHIFT) & POLLS_MAX == POLLS_MAX {
            0
        } else {
            1 << POLL_SHIFT
        };
        self.activity
            .store((a & !SCHEDULED) + polls, Ordering::Relaxed);
    }

    /// Queued (scheduled and not yet polled again), polls so far (they
    /// saturate at 2^30 - 1) and the spawn time (`clock::coarse_ticks`).
    pub(crate) fn activity(&self) -> (bool, u64, u32) {
        let a = self.activity.load(Ordering::Relaxed);
        (
            a & SCHEDULED != 0,
            (a >> POLL_SHIFT) & POLLS_MAX,
            (a >> BORN_SHIFT) as u32,
        )
    }
}

/// How far a task's header lies from its waker's data pointer: the same for
/// every task (the header sits at a fixed place in async-task's allocation),
/// learned from the first spawn, checked at every spawn (`note_waker`).
/// `isize::MIN` until then.
static HEADER_FROM_WAKER: AtomicIsize = AtomicIsize::new(isize::MIN);

/// Check, before a task's waker is registered, that its header can be found
/// from the waker (`header_of`): this lets the registry keep one waker per
/// task, not a waker and a header pointer.
///
/// # Panics
///
/// If async-task ever gave wakers whose data pointer is not at a fixed
/// distance from the header: a dependency upgrade that every spawn reports.
#[inline]
pub(crate) fn note_waker(waker: &Waker, header: &TaskHeader) {
    let distance = (header as *const TaskHeader as isize).wrapping_sub(waker.data() as isize);
    // Relaxed: every thread computes the same value; the first store wins a
    // race with an equal one.
    let known = HEADER_FROM_WAKER.load(Ordering::Relaxed);
    if known != distance {
        assert_eq!(
            known,
            isize::MIN,
            "pool: async-task's waker no longer points at a fixed place in its task \
             (the live-task dump relies on it)"
        );
        HEADER_FROM_WAKER.store(distance, Ordering::Relaxed);
    }
}

/// The header of the task `waker` wakes.
///
/// # Safety
///
/// `waker` was checked by `note_waker` with its task's header, and is alive
/// as long as the returned reference (it holds a reference to the task, so
/// the header lives).
unsafe fn header_of(waker: &Waker) -> &TaskHeader {
    let distance = HEADER_FROM_WAKER.load(Ordering::Relaxed);
    // SAFETY: by the caller's contract `note_waker` saw this very waker with
    // its header at this distance (and stored it, or found it stored), and
    // the task's allocation does not move; the waker keeps it alive.
    unsafe {
        &*(waker.data() as *const u8)
            .wrapping_offset(distance)
            .cast::<TaskHeader>()
    }
}

/// The headers of the live tasks, read through the registry's wakers. (An
/// inherent method of `OwnedTasks` kept here, beside `header_of`, so that
/// the registry needs to know nothing of the header.)
impl OwnedTasks {
    /// Call `f` with the header of every registered task, one shard's lock
    /// at a time (the dump).
    pub(crate) fn for_each_live(&self, mut f: impl FnMut(&TaskHeader)) {
        self.for_each_live_in(None, |header, _| f(header));
    }

    /// Abort every live `spawn_local` task registered in `shard` (a
    /// worker's own shard: its local tasks) and return their wakers, to be
    /// woken outside the shard's lock.
    pub(crate) fn abort_local_tasks_in(&self, shard: usize) -> Vec<Waker> {
        let mut wakers = Vec::new();
        self.for_each_live_in(Some(shard), |header, waker| {
            if header.is_local() && !header.is_done() {
                header.abort();
                wakers.push(waker.clone());
            }
        });
        wakers
    }

    /// `for_each_live` over one shard, or all (`None`), with each waker.
    fn for_each_live_in(&self, shard: Option<usize>, mut f: impl FnMut(&TaskHeader, &Waker)) {
        self.for_each_waker_in(shard, |waker| {
            // SAFETY: every registered waker was checked by `note_waker`
            // before `insert` (`Registry::spawn_raw`), and the registry's
            // entry, held under its shard's lock while `f` runs, keeps it and
            // its task alive while `f` reads the header.
            f(unsafe { header_of(waker) }, waker);
        });
    }
}

/// The task type of this crate: runnable handles carry a [`TaskHeader`].
pub(crate) type Runnable = async_task::Runnable<TaskHeader>;

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn the_header_is_four_words() {
        assert_eq!(std::mem::size_of::<super::TaskHeader>(), 32);
    }
}
