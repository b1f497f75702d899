//! `TaskSlot`: one task that a worker keeps for itself, unposted and out of
//! thieves' reach, in one atomic pointer so that the watcher (`watcher.rs`)
//! can take it out when the worker is held up. A worker has two:
//!
//! * its LIFO slot: the task it spawned or woke last, to run next on the
//!   same warm thread (taken by the watcher when the poll under way runs
//!   long);
//! * its deferred task: one its budget made yield while nothing else was
//!   queued on it, to run when its search finds nothing else (taken by the
//!   watcher when it waited a whole tick with no poll begun).
//!
//! # Invariants
//!
//! * The slot owns the runnable whose raw pointer it holds: every `put` and
//!   `take` is a `swap`, so exactly one thread gets each runnable out.
//! * Only the owning worker puts into the slot; the owner and the watcher
//!   take from it. (Thieves never do: the owner runs it soon, on a warm
//!   cache, unless it is held up; then the watcher moves it to the
//!   injector, which posts it as an injected job.)

use crate::sync::{AtomicPtr, Ordering};
use async_task::Runnable;
use std::ptr::{self, NonNull};

pub(crate) struct TaskSlot<M> {
    task: AtomicPtr<()>,
    _owns: std::marker::PhantomData<Runnable<M>>,
}

// SAFETY: the slot only hands out runnables by value, each to one thread (see
// the invariants); a `Runnable<M>` is `Send + Sync` when `M` is.
unsafe impl<M: Send + Sync> Send for TaskSlot<M> {}
// SAFETY: as above: shared access is only through atomic swaps.
unsafe impl<M: Send + Sync> Sync for TaskSlot<M> {}

impl<M> TaskSlot<M> {
    pub(crate) fn new() -> Self {
        TaskSlot {
            task: AtomicPtr::new(ptr::null_mut()),
            _owns: std::marker::PhantomData,
        }
    }

    /// Owner: put `runnable` in, giving back the one it displaces.
    #[inline]
    pub(crate) fn put(&self, runnable: Runnable<M>) -> Option<Runnable<M>> {
        // AcqRel: Release publishes the runnable to whoever takes it;
        // Acquire takes the displaced one, published by our earlier put.
        let old = self
            .task
            .swap(runnable.into_raw().as_ptr(), Ordering::AcqRel);
        // SAFETY: a non-null pointer in the slot came from `into_raw` and is
        // owned by the slot; the swap moved that ownership to us.
        NonNull::new(old).map(|p| unsafe { Runnable::from_raw(p) })
    }

    /// Owner or watcher: take the runnable out, if there is one.
    #[inline]
    pub(crate) fn take(&self) -> Option<Runnable<M>> {
        // Relaxed: only a hint to skip the swap on an empty slot; the swap
        // decides.
        if self.task.load(Ordering::Relaxed).is_null() {
            return None;
        }
        // Acquire: pairs with the Release of `put`.
        let old = self.task.swap(ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: as in `put`.
        NonNull::new(old).map(|p| unsafe { Runnable::from_raw(p) })
    }

    /// Watcher: is a runnable waiting? (A hint: `take` decides.)
    #[inline]
    pub(crate) fn is_occupied(&self) -> bool {
        !self.task.load(Ordering::Relaxed).is_null()
    }
}

impl<M> Drop for TaskSlot<M> {
    fn drop(&mut self) {
        drop(self.take());
    }
}

impl<M> std::fmt::Debug for TaskSlot<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskSlot")
            .field("occupied", &self.is_occupied())
            .finish()
    }
}
