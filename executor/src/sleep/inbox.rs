//! `Inbox`: how work pinned to one worker reaches it from other threads.
//!
//! A `spawn_local` task may only run on the worker that spawned it, but its
//! waker may fire anywhere. A wake from another thread pushes the runnable
//! into its worker's inbox, then wakes that worker if it sleeps
//! (`SleepManager::wake_specific_thread`). The worker takes everything from its
//! inbox when it searches, and looks at it once more in its final check
//! before it blocks.
//!
//! # Why no wake is lost (`models/inbox.rs` checks it)
//!
//! The poster pushes (under the inbox lock), then takes the worker's sleep
//! lock in `wake_specific_thread`. The worker makes its final check while
//! it holds that same sleep lock, from before it commits to sleeping until
//! it blocks (releasing it only inside the condvar wait, or after marking
//! itself `InDriver`). So one of two orders holds: the poster's sleep lock
//! comes first, and the push happened before the worker's final check, which
//! sees `queued`; or the worker's comes first, and the poster finds it
//! blocked and wakes it. No JEC change and no fence is needed: the sleep
//! lock orders the two sides, and a worker that is awake searches its inbox
//! anyway. A post never wakes another worker: nobody else may run the task.
//!
//! # Invariants
//!
//! * `queued` is true whenever `items` is non-empty; both change only under
//!   the lock, so a `false` read after the lock of a later push is
//!   impossible.
//! * Once `close` ran (its worker is leaving), `push` refuses: the item is
//!   handed back to its poster.

use super::manager::SleepManager;
use crate::sync::{AtomicBool, Mutex, Ordering};

/// Items for one worker from other threads (see the module docs).
#[derive(Debug)]
pub(crate) struct Inbox<T> {
    /// `None` once closed.
    items: Mutex<Option<Vec<T>>>,
    /// `items` is not empty: read without the lock by the worker's search
    /// and final check.
    queued: AtomicBool,
}

impl<T> Inbox<T> {
    pub(crate) fn new() -> Self {
        Inbox {
            items: Mutex::new(Some(Vec::new())),
            queued: AtomicBool::new(false),
        }
    }

    /// Add `item`; `Err(item)` if the inbox is closed.
    pub(crate) fn push(&self, item: T) -> Result<(), T> {
        let mut items = self.items.lock();
        match items.as_mut() {
            Some(items) => {
                items.push(item);
                // Release: pairs with `has_items`' Acquire (the items
                // themselves are read under the lock).
                self.queued.store(true, Ordering::Release);
                Ok(())
            }
            None => Err(item),
        }
    }

    /// Does the inbox hold anything? A hint for the search; in the final
    /// check before a sleep it is exact (see the module docs).
    #[inline]
    pub(crate) fn has_items(&self) -> bool {
        self.queued.load(Ordering::Acquire)
    }

    /// Move every item into `into`, oldest first.
    pub(crate) fn take_into(&self, into: &mut impl Extend<T>) {
        if !self.has_items() {
            return;
        }
        let mut items = self.items.lock();
        if let Some(items) = items.as_mut() {
            self.queued.store(false, Ordering::Relaxed);
            into.extend(items.drain(..));
        }
    }

    /// Refuse every later push, and return what is in the inbox now.
    pub(crate) fn close(&self) -> Vec<T> {
        let mut items = self.items.lock();
        self.queued.store(false, Ordering::Relaxed);
        items.take().unwrap_or_default()
    }
}

impl SleepManager {
    /// Post `item` to worker `index`'s `inbox` and wake that worker if it
    /// sleeps (see the module docs). `Ok(true)` if it was woken; `Err(item)`
    /// if the inbox is closed.
    pub(crate) fn post_home<T>(&self, index: usize, inbox: &Inbox<T>, item: T) -> Result<bool, T> {
        inbox.push(item)?;
        Ok(self.wake_specific_thread(index))
    }
}
