//! `TaskHeader`: the per-task metadata that async-task keeps in the task's
//! allocation, and how to find it from the task's waker.
//!
//! # Invariants
//!
//! * The header lives as long as the task's allocation and holds one share
//!   of the owning pool (`share.rs`: taken at spawn, given back by its
//!   drop, mostly through its worker's cache), so the pool is alive for
//!   every reader of the header. (A schedule function must not rely on it
//!   after handing the runnable on: see `scheduler/spawn.rs`,
//!   `schedule_task`.)
//! * The header's slot is set once, before the task is first scheduled, so
//!   every later reader (the future's drop, `abort`) sees it.
//! * `activity` is written only by the thread that schedules, polls or drops
//!   the task's future, which async-task serializes: relaxed loads and
//!   stores, never a read-modify-write. Anyone may read it (the dump).
//! * Every task's header lies at one fixed distance from its waker's data
//!   pointer (`TaskWaker::new` checks its site word's at every spawn), so
//!   the table of live tasks finds the header from the waker it keeps.
//! * The site word (kind and spawn site) is complete before the task is
//!   first registered or scheduled (`register_waker`), and names a site
//!   whose vtable is the task's wakers' own: the table keeps the task's
//!   waker as its data pointer alone and finds the vtable through this word
//!   (`waker.rs`).
//! * The header is 28 bytes aligned to 4 (its one 8-byte field, `owner`, is
//!   `Align4`; the id is split in 32 + 16 bits): async-task puts it after
//!   three words of its own and, with its `std` feature, before a `bool`;
//!   28 + 1 fits the 32 bytes that a header of 32 would have needed alone,
//!   so the task is 8 bytes smaller than with an 8-aligned header. No
//!   reference to the 8-byte field is ever taken (the compiler forbids it):
//!   it is read by value.

use super::id::TaskId;
use super::owned::{LiveSlot, OwnedTasks};
use super::schedule::{Registry, Schedule};
use super::site;
use super::wait_board::{WaitCopy, WaitScratch};
use super::waits::Wait;
use super::waker::{site_word_distance, TaskWaker};
use std::cell::RefCell;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, AtomicU32, Ordering};
use std::sync::Arc;
use std::task::Waker;

/// `TaskHeader::state`: the top bit says the task was aborted, the next
/// that it has a name (`task/names.rs`), the other 30 hold its spawn time
/// (`clock::coarse_ticks` halved: 1/128 s, modulo 97 days).
const ABORTED: u32 = 1 << 31;
const NAMED: u32 = 1 << 30;
const BORN: u32 = NAMED - 1;

/// `TaskHeader::activity`: bit 0 is `SCHEDULED`, bit 1 `DONE` (the future
/// was dropped: the task is not live, though its table entry may wait
/// for a removal batch, `owned.rs`), bit 2 `REJECTED` (a `spawn_blocking`
/// closure the full blocking queue refused: its cancel is a `JoinError`
/// that says so), bits 3..32 the polls (saturating).
const SCHEDULED: u32 = 1;
const DONE: u32 = 1 << 1;
const REJECTED: u32 = 1 << 2;
const POLL_SHIFT: u32 = 3;
const POLLS_MAX: u32 = (1 << 29) - 1;

/// `TaskHeader::site`: the task's kind in the top two bits, its spawn site's
/// index (`site::index_of`) in the low 14 (`site::INDEX_MASK`).
const BLOCKING: u16 = 1 << 14;
const LOCAL: u16 = 2 << 14;

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

/// A `Copy` value kept at 4-byte alignment, read by value (`get`).
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
struct Align4<T: Copy>(T);

impl<T: Copy> Align4<T> {
    #[inline(always)]
    fn get(self) -> T {
        self.0
    }
}

/// The per-task metadata, stored in the task's allocation: 28 bytes,
/// aligned to 4.
pub(crate) struct TaskHeader {
    /// The pool that owns the task (the scheduler's `Registry`, inside its
    /// `Arc`), of which the header holds one share (`share.rs`), given back
    /// by `drop`.
    owner: Align4<NonNull<Registry>>,
    /// The task's id (below 2^48): its top 32 bits here, its low 16 in
    /// `id_low`. Written at spawn, never changed.
    id_high: u32,
    id_low: u16,
    /// The task's kind and its site (see the constants): the kind written
    /// at spawn, the site once its waker is known (`register_waker`),
    /// before any other thread sees the header; never changed after. An
    /// atomic only so that it may be written through `&self`; relaxed loads
    /// and stores suffice (the hand-off of the runnable orders them). Its
    /// distance from the waker's data pointer is fixed (`waker.rs`).
    site: AtomicU16,
    /// Where the task's waker is registered (`OwnedTasks::pack`), or
    /// `OwnedTasks::UNREGISTERED`; set once, before the first run.
    slot: AtomicU32,
    /// `ABORTED` (set by `JoinHandle::abort` from any thread: the next poll
    /// ends the task), `NAMED` and the spawn time, which never change.
    state: AtomicU32,
    /// Whether the task is queued, whether its future was dropped, and its
    /// polls (see the constants). Written only by the thread that schedules,
    /// polls or drops the task's future, which async-task serializes (a
    /// schedule happens before the run it leads to, a wake during a run
    /// schedules after it), so a relaxed load and store suffice, no
    /// read-modify-write; the dump reads it from anywhere.
    activity: AtomicU32,
}

// SAFETY: the only field that is not `Send + Sync` by itself is `owner`, a
// share of an `Arc<Registry>`, which is `Send + Sync` because the
// scheduler is (a share may be given back from any thread); the header
// never hands out `&mut` to it.
unsafe impl Send for TaskHeader {}
// SAFETY: as above; every field that changes is an atomic.
unsafe impl Sync for TaskHeader {}

impl TaskHeader {
    /// The header of a task of the pool at `owner`, spawned at the coarse
    /// time `born` (`CoarseClock::now`), `named` if its pool's names hold
    /// its name from before its first schedule until its future drops
    /// (`names.rs`). Its site is set by `register_waker`.
    ///
    /// # Safety
    ///
    /// `owner` points into a live `Arc<Registry>`, and the caller took one
    /// share of that pool for this header (`share.rs`), which the header's
    /// drop gives back.
    #[inline]
    pub(crate) unsafe fn new(
        owner: NonNull<Registry>,
        id: TaskId,
        kind: TaskKind,
        born: u32,
        named: bool,
    ) -> TaskHeader {
        let kind = match kind {
            TaskKind::Async => 0,
            TaskKind::Blocking => BLOCKING,
            TaskKind::Local => LOCAL,
        };
        TaskHeader {
            owner: Align4(owner),
            id_high: (id.as_u64() >> 16) as u32,
            id_low: id.as_u64() as u16,
            site: AtomicU16::new(kind | site::OVERFLOW),
            slot: AtomicU32::new(OwnedTasks::UNREGISTERED),
            state: AtomicU32::new((born >> 1) & BORN | if named { NAMED } else { 0 }),
            activity: AtomicU32::new(0),
        }
    }

    /// The task's id.
    #[inline]
    pub(crate) fn id(&self) -> TaskId {
        TaskId::from_u64(u64::from(self.id_high) << 16 | u64::from(self.id_low))
            .expect("a task id is never 0")
    }

    /// The kind and site word (see the constants).
    #[inline]
    fn site_word(&self) -> u16 {
        self.site.load(Ordering::Relaxed)
    }

    /// The index of the task's spawn site (`site.rs`): where its
    /// `JoinHandle` was made, for the task that awaits it
    /// (`waits.rs`).
    pub(crate) fn spawn_site(&self) -> u16 {
        self.site_word() & site::INDEX_MASK
    }

    /// Where the task was spawned.
    pub(crate) fn spawned_at(&self) -> &'static Location<'static> {
        site::location(self.site_word() & site::INDEX_MASK)
    }

    /// Record the task's spawn site, `at` and the vtable of `waker`, and
    /// turn `waker` into the one-word waker the table keeps.
    ///
    /// # Safety
    ///
    /// `waker` wakes this header's task, and no other thread has seen the
    /// header yet (its runnable was never scheduled).
    ///
    /// # Panics
    ///
    /// If async-task ever gave wakers whose data pointer is not at a fixed
    /// distance from the header (see `TaskWaker::new`).
    #[inline]
    pub(crate) unsafe fn register_waker(
        &self,
        waker: Waker,
        at: &'static Location<'static>,
    ) -> TaskWaker {
        let index = site::index_of(at, waker.vtable());
        self.site.store(
            self.site_word() & !site::INDEX_MASK | index,
            Ordering::Relaxed,
        );
        // SAFETY: `site` is a field of this header, which lives in the
        // allocation of the task `waker` wakes (our caller's contract) for as
        // long as the task does, and is never changed again.
        unsafe { TaskWaker::new(waker, &self.site) }
    }

    /// The pool that owns the task.
    #[inline]
    pub(crate) fn owner(&self) -> &Registry {
        // SAFETY: the header holds a share of this pool until it is
        // dropped, which keeps the pool's `Arc` alive (`share.rs`), and
        // `&self` borrows the header.
        unsafe { self.owner.get().as_ref() }
    }

    /// A new reference to the pool that owns the task, which outlives the
    /// task (see `schedule_task`).
    #[inline]
    pub(crate) fn owner_arc(&self) -> Arc<Registry> {
        let ptr = self.owner.get().as_ptr().cast_const();
        // SAFETY: `ptr` points into the pool's `Arc` (`new`'s contract), and
        // the header's share keeps that `Arc` alive; the increment is the
        // count the returned `Arc` gives back.
        unsafe {
            Arc::increment_strong_count(ptr);
            Arc::from_raw(ptr)
        }
    }

    /// Record where the task is registered. `Release` pairs with the
    /// `Acquire` of `slot`; the task is not yet scheduled, so no other thread
    /// can read it before the runnable's hand-off anyway.
    pub(crate) fn set_slot(&self, slot: LiveSlot) {
        let packed = self.owner().live_tasks().pack(slot);
        debug_assert_eq!(
            self.slot.load(Ordering::Relaxed),
            OwnedTasks::UNREGISTERED,
            "task registered twice"
        );
        self.slot.store(packed, Ordering::Release);
    }

    pub(super) fn slot(&self) -> Option<LiveSlot> {
        match self.slot.load(Ordering::Acquire) {
            OwnedTasks::UNREGISTERED => None,
            word => Some(self.owner().live_tasks().unpack(word)),
        }
    }

    #[inline]
    pub(super) fn is_aborted(&self) -> bool {
        self.state.load(Ordering::Acquire) & ABORTED != 0
    }

    pub(crate) fn abort(&self) {
        self.state.fetch_or(ABORTED, Ordering::Release);
    }

    /// The task has a name, in its pool's names (`names.rs`).
    #[inline]
    pub(crate) fn is_named(&self) -> bool {
        self.state.load(Ordering::Relaxed) & NAMED != 0
    }

    /// The task's name, if it has one (a lookup in its pool's names: for a
    /// report, a dump or a panic, not for a poll).
    pub(crate) fn name(&self) -> Option<Arc<str>> {
        if !self.is_named() {
            return None;
        }
        self.owner().live_tasks().name(self.slot()?)
    }

    /// Record `wait` for this task's poll under way (on the polling
    /// thread, `waits.rs`), at coarse time `now()` if it begins now.
    #[inline]
    pub(crate) fn record_wait(
        &self,
        wait: Wait,
        now: impl FnOnce() -> u32,
        scratch: &RefCell<WaitScratch>,
    ) {
        let Some(slot) = self.slot() else {
            return;
        };
        let (_, poll) = self.activity();
        self.owner()
            .live_tasks()
            .record_wait(slot, self.id().as_u64(), poll, wait, now, scratch);
    }

    /// What this task's last poll recorded that it waits on, if anything.
    pub(crate) fn waits(&self) -> Option<WaitCopy> {
        let slot = self.slot()?;
        let (_, poll) = self.activity();
        self.owner()
            .live_tasks()
            .waits(slot, self.id().as_u64(), poll)
    }

    /// True for a live task of the workers: not finished, not a blocking
    /// closure (the dump lists these).
    pub(crate) fn is_live_task(&self) -> bool {
        !self.is_blocking() && self.activity.load(Ordering::Relaxed) & DONE == 0
    }

    /// A `spawn_blocking` closure's task.
    pub(super) fn is_blocking(&self) -> bool {
        self.site_word() & BLOCKING != 0
    }

    /// A `spawn_local` task.
    pub(crate) fn is_local(&self) -> bool {
        self.site_word() & LOCAL != 0
    }

    /// The future is gone: it completed, panicked or was cancelled.
    #[inline]
    pub(super) fn is_done(&self) -> bool {
        self.activity.load(Ordering::Relaxed) & DONE != 0
    }

    /// A waker of this task, while it is registered as live (an
    /// `AbortHandle`'s hold on it); `None` once its future is gone, or if
    /// it never was registered.
    pub(super) fn live_waker(&self) -> Option<Waker> {
        let waker = self.owner().live_tasks().waker(self.slot()?)?;
        // SAFETY: every registered waker was made by `register_waker`
        // (`spawn_raw`, `scheduler/spawn.rs`), and the clone keeps its task alive while
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
        // SAFETY: `live_waker` returned it, so it was registered through
        // `register_waker`, and the caller's borrow of it keeps the task
        // alive.
        unsafe { header_of(waker) }
    }

    /// The future was dropped (see `DONE`).
    pub(super) fn mark_done(&self) {
        let a = self.activity.load(Ordering::Relaxed);
        self.activity.store(a | DONE, Ordering::Relaxed);
    }

    /// A blocking queue refused the task (`REJECTED`): written by the
    /// thread that schedules it, which then cancels it (`future::reject`),
    /// so its poll reads the bit.
    pub(super) fn mark_rejected(&self) {
        let a = self.activity.load(Ordering::Relaxed);
        self.activity.store(a | REJECTED, Ordering::Relaxed);
    }

    /// Was the task refused by a blocking queue?
    pub(super) fn is_rejected(&self) -> bool {
        self.activity.load(Ordering::Relaxed) & REJECTED != 0
    }

    /// The task was handed to a queue (its schedule function ran).
    #[inline]
    pub(crate) fn mark_scheduled(&self) {
        let a = self.activity.load(Ordering::Relaxed);
        self.activity.store(a | SCHEDULED, Ordering::Relaxed);
    }

    /// A poll begins: no longer queued, one poll more; or, if the future
    /// is gone (`is_done`) or the task aborted, false and nothing changes:
    /// it must not be polled. (One load of `activity` serves the check
    /// and the count.)
    #[inline]
    pub(super) fn begin_poll(&self) -> bool {
        let a = self.activity.load(Ordering::Relaxed);
        if a & DONE != 0 || self.is_aborted() {
            return false;
        }
        let polls = if a >> POLL_SHIFT == POLLS_MAX {
            0
        } else {
            1 << POLL_SHIFT
        };
        self.activity
            .store((a & !SCHEDULED) + polls, Ordering::Relaxed);
        true
    }

    /// Queued (scheduled and not yet polled again), and polls so far (they
    /// saturate at 2^29 - 1).
    pub(crate) fn activity(&self) -> (bool, u32) {
        let a = self.activity.load(Ordering::Relaxed);
        (a & SCHEDULED != 0, a >> POLL_SHIFT)
    }

    /// The task's age at the coarse time `now` (`CoarseClock::now`), in
    /// coarse ticks (to two ticks: the header keeps half of them).
    pub(crate) fn age(&self, now: u32) -> u32 {
        let born = self.state.load(Ordering::Relaxed) & BORN;
        ((now >> 1).wrapping_sub(born) & BORN) << 1
    }
}

impl Drop for TaskHeader {
    fn drop(&mut self) {
        // SAFETY: the share taken for this header (`new`'s contract), given
        // back once, here; nothing reads the pool through it after.
        unsafe { Registry::share_dropped(self.owner.get()) };
    }
}

/// The header of the task `waker` wakes.
///
/// # Safety
///
/// `waker` wakes a task whose waker went through `register_waker` (so
/// `TaskWaker::new` saw its site word at `site_word_distance`), and is
/// alive as long as the returned reference (it holds a reference to the
/// task, so the header lives).
unsafe fn header_of(waker: &Waker) -> &TaskHeader {
    let distance = site_word_distance() - std::mem::offset_of!(TaskHeader, site) as isize;
    // SAFETY: by the caller's contract the site word of this waker's task,
    // the `site` field of its header, lies at `site_word_distance` from the
    // data pointer, so the header starts `offset_of!(TaskHeader, site)`
    // before it; the task's allocation does not move, and the waker keeps
    // it alive.
    unsafe {
        &*(waker.data() as *const u8)
            .wrapping_offset(distance)
            .cast::<TaskHeader>()
    }
}

/// The headers of the live tasks, read through the table's wakers. (An
/// inherent method of `OwnedTasks` kept here, beside `header_of`, so that
/// the table needs to know nothing of the header.)
impl OwnedTasks {
    /// Call `f` with the header of every registered task and its name, if
    /// it has one, one shard's lock at a time (the dump).
    pub(crate) fn for_each_live(&self, mut f: impl FnMut(&TaskHeader, Option<&Arc<str>>)) {
        self.for_each_live_in(None, |header, _, name| f(header, name));
    }

    /// Abort every live `spawn_local` task registered in `shard` (a
    /// worker's own shard: its local tasks) and return their wakers, to be
    /// woken outside the shard's lock.
    pub(crate) fn abort_local_tasks_in(&self, shard: usize) -> Vec<Waker> {
        self.abort_where(Some(shard), TaskHeader::is_local)
    }

    /// Abort every live task of `shard` (or of all, `None`) that `which`
    /// picks (a crashed simulated host's, `sim/host.rs`), and return their
    /// wakers, to be woken outside the shard's lock.
    pub(crate) fn abort_where(
        &self,
        shard: Option<usize>,
        which: impl Fn(&TaskHeader) -> bool,
    ) -> Vec<Waker> {
        let mut wakers = Vec::new();
        self.for_each_live_in(shard, |header, waker, _| {
            if which(header) && !header.is_done() {
                header.abort();
                wakers.push(waker.clone());
            }
        });
        wakers
    }

    /// `for_each_live` over one shard, or all (`None`), with each waker and
    /// name.
    fn for_each_live_in(
        &self,
        shard: Option<usize>,
        mut f: impl FnMut(&TaskHeader, &Waker, Option<&Arc<str>>),
    ) {
        self.for_each_waker_in(shard, |waker, name| {
            // SAFETY: every registered waker was made by `register_waker`
            // before `insert` (`spawn_raw`, `scheduler/spawn.rs`), and the table's
            // entry, held under its shard's lock while `f` runs, keeps it and
            // its task alive while `f` reads the header.
            f(unsafe { header_of(waker) }, waker, name);
        });
    }
}

/// The task type of this crate: runnable handles carry a [`TaskHeader`].
pub(crate) type Runnable = async_task::Runnable<TaskHeader>;

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn the_header_is_seven_four_byte_words() {
        assert_eq!(std::mem::size_of::<super::TaskHeader>(), 28);
        assert_eq!(std::mem::align_of::<super::TaskHeader>(), 4);
    }
}
