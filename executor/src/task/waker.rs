//! `TaskWaker`: a task's waker in one word, as the table of live tasks
//! keeps it (8 bytes a task instead of a `Waker`'s 16).
//!
//! A `Waker` is two words: a data pointer (for async-task, the task's
//! allocation) and a vtable, which is the same for every task of one future
//! type. The vtable is already known to the task's spawn site
//! (`site.rs`: a site is a spawn call and its tasks' vtable), whose index
//! the task's header keeps in a 16-bit word. So a registered waker is just
//! its data pointer: the vtable is found through the site word, which lies
//! at a fixed distance from that pointer.
//!
//! # Invariants
//!
//! * A `TaskWaker` owns one reference to its task, as the `Waker` it was made
//!   from did, and gives it back when dropped (or turned back into that
//!   `Waker`).
//! * Its word is either the task's data pointer (`COMPACT`: bits 0 and 1
//!   clear, since the pointer is aligned to at least 4), taken only when the
//!   site word at `SITE_FROM_DATA` of that pointer names a site whose vtable
//!   is the waker's own; or a boxed `Waker` (`BOXED` set): every other waker
//!   (a site past the table's bound, a test's waker). Bit 0 is clear in
//!   both, for the table's free entries (`owned.rs`).
//! * The distance from a data pointer to its task's site word is the same
//!   for every task (the header sits at a fixed place in async-task's
//!   allocation): learned at the first task's `TaskWaker::new`, checked at
//!   every one after, compact or boxed. `header.rs` finds a task's header
//!   from its waker by the same distance (`site_word_distance`).

use super::site;
use std::mem::ManuallyDrop;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicIsize, AtomicU16, Ordering};
use std::task::Waker;

/// Set in the word of a `TaskWaker` that is a boxed `Waker`.
const BOXED: usize = 0b10;
/// The bits a compact word (a task's data pointer) has clear.
const TAG: usize = 0b11;

/// How far a task's site word lies from its waker's data pointer; learned
/// from the first task's waker. `isize::MIN` until then.
static SITE_FROM_DATA: AtomicIsize = AtomicIsize::new(isize::MIN);

/// A task's waker in one word (see the module docs).
#[repr(transparent)]
pub(crate) struct TaskWaker(NonZeroUsize);

impl TaskWaker {
    /// `waker`, in one word if `site_word`, the 16-bit word of its task's
    /// header that holds its site (`site::INDEX_MASK`), names a site with
    /// the waker's vtable; else boxed.
    ///
    /// # Safety
    ///
    /// `site_word` lies in the allocation of the task `waker` wakes, and
    /// stays there with the same site for as long as the task lives.
    ///
    /// # Panics
    ///
    /// If async-task ever gave wakers whose data pointer is not at a fixed
    /// distance from the task's metadata: a dependency upgrade that every
    /// spawn reports.
    pub(crate) unsafe fn new(waker: Waker, site_word: &AtomicU16) -> TaskWaker {
        let data = waker.data() as usize;
        let distance = (site_word as *const AtomicU16 as isize).wrapping_sub(data as isize);
        // Relaxed: every thread computes the same value; the first store
        // wins a race with an equal one.
        let known = SITE_FROM_DATA.load(Ordering::Relaxed);
        if known != distance {
            assert_eq!(
                known,
                isize::MIN,
                "pool: async-task's waker no longer points at a fixed place in its task \
                 (the table of live tasks and the dump rely on it)"
            );
            SITE_FROM_DATA.store(distance, Ordering::Relaxed);
        }
        let index = site_word.load(Ordering::Relaxed) & site::INDEX_MASK;
        let known_site = site::vtable(index).is_some_and(|v| std::ptr::eq(v, waker.vtable()));
        if !known_site || data & TAG != 0 || data == 0 {
            return TaskWaker::boxed(waker);
        }
        // The reference the waker held is now this word's.
        let waker = ManuallyDrop::new(waker);
        TaskWaker(NonZeroUsize::new(waker.data() as usize).expect("checked above"))
    }

    /// Any `waker`, boxed.
    pub(crate) fn boxed(waker: Waker) -> TaskWaker {
        let ptr = Box::into_raw(Box::new(waker)) as usize;
        debug_assert_eq!(ptr & TAG, 0, "a Box<Waker> is aligned to a pointer");
        TaskWaker(NonZeroUsize::new(ptr | BOXED).expect("a box is never null"))
    }

    /// The word (bit 0 clear), which now owns the reference.
    pub(crate) fn into_word(self) -> NonZeroUsize {
        ManuallyDrop::new(self).0
    }

    /// The `TaskWaker` whose word `into_word` returned.
    ///
    /// # Safety
    ///
    /// `word` came from `into_word`, and is turned back once.
    pub(crate) unsafe fn from_word(word: NonZeroUsize) -> TaskWaker {
        TaskWaker(word)
    }

    /// Call `f` with the waker, which this `TaskWaker` keeps.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(&Waker) -> R) -> R {
        // SAFETY: `self` keeps the reference; the copy is never dropped.
        let waker = ManuallyDrop::new(unsafe { self.to_waker() });
        f(&waker)
    }

    /// The waker back, with the reference this word held.
    pub(crate) fn into_waker(self) -> Waker {
        let this = ManuallyDrop::new(self);
        let word = this.0.get();
        if word & BOXED != 0 {
            // SAFETY: a boxed word is a `Box<Waker>` made by `boxed`, taken
            // back once (`this` is never dropped).
            return *unsafe { Box::from_raw((word & !TAG) as *mut Waker) };
        }
        // SAFETY: as above, the word's reference moves to the waker.
        unsafe { this.to_waker() }
    }

    /// A bitwise copy of the waker: the caller decides who owns the
    /// reference.
    ///
    /// # Safety
    ///
    /// The copy is dropped (or woken) only if `self` is not.
    unsafe fn to_waker(&self) -> Waker {
        let word = self.0.get();
        if word & BOXED != 0 {
            // SAFETY: a boxed word is a live `Box<Waker>` (see `into_waker`).
            let boxed = unsafe { &*((word & !TAG) as *const Waker) };
            // SAFETY: a bitwise copy; by the caller's contract one of the
            // two is dropped.
            return unsafe { std::ptr::read(boxed) };
        }
        let distance = site_word_distance();
        // SAFETY: a compact word was made by `new` from a waker of a live
        // task (this word keeps it alive), whose site word lies at
        // `distance` (checked there, and the value is never changed once
        // learned), holding a site whose vtable is the waker's.
        unsafe {
            let site_word = &*(word as *const u8)
                .wrapping_offset(distance)
                .cast::<AtomicU16>();
            let index = site_word.load(Ordering::Relaxed) & site::INDEX_MASK;
            let vtable = site::vtable(index).expect("a compact waker's site is in the table");
            Waker::new(word as *const (), vtable)
        }
    }
}

/// How far the site word of a task registered through `TaskWaker::new`
/// lies from its waker's data pointer (the same for every task).
#[inline]
pub(super) fn site_word_distance() -> isize {
    SITE_FROM_DATA.load(Ordering::Relaxed)
}

impl Drop for TaskWaker {
    fn drop(&mut self) {
        drop(TaskWaker(self.0).into_waker());
    }
}
