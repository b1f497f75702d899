//! The counting waker: what a task of a pool that serves tokio-console is
//! handed in its polls instead of its own waker, so that the console sees
//! its wakes, and its wakers cloned and dropped (tokio-console warns of a
//! task that has lost its waker when clones minus drops is 0; a runtime
//! that reported no clones would have every idle task flagged).
//!
//! # Invariants
//!
//! * A counting waker's data pointer is an `Arc<Entry>` (`Arc::into_raw`)
//!   of the task's table entry: each counting waker owns one strong count,
//!   given back by its drop or by a wake by value; the one handed to a poll
//!   is borrowed (`ManuallyDrop`) and owns none.
//! * It wakes the task through the task's own waker, kept in the entry
//!   until the task's future drops (`TaskStats::finished`); a wake after
//!   that is a no-op, as it would be on the task's own waker, and is not
//!   counted.
//! * Each counting waker made by `clone` counts one clone, and each one
//!   given up (dropped, or woken by value) one drop, so clones minus drops
//!   is the number of counting wakers alive outside the polls.
//! * Every counting waker of one task has the same data pointer and vtable,
//!   so `will_wake` holds between the waker of one poll and a clone kept
//!   from another.

use super::stats::now;
use super::table::Entry;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::task::{RawWaker, RawWakerVTable, Waker};

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

/// A counting waker of `entry`'s task, borrowed for one poll: it owns no
/// count of `entry`, so it must not outlive it (it is `ManuallyDrop`, and
/// the poll's caller holds `entry`).
pub(crate) fn borrowed(entry: &Arc<Entry>) -> ManuallyDrop<Waker> {
    let data = Arc::as_ptr(entry).cast::<()>();
    // SAFETY: `data` points to a live `Entry` (the caller holds an `Arc` of
    // it for as long as the waker is used), which is what every function
    // of `VTABLE` expects; the waker is never dropped (`ManuallyDrop`), so
    // it gives back no count it does not own, and each clone of it takes
    // one of its own (`clone`).
    ManuallyDrop::new(unsafe { Waker::from_raw(RawWaker::new(data, &VTABLE)) })
}

/// The entry behind a counting waker's data pointer, borrowed.
///
/// # Safety
///
/// `data` is the data pointer of a counting waker that is alive, so it
/// came from `Arc::as_ptr`/`into_raw` of an `Entry` with a count alive.
unsafe fn entry<'a>(data: *const ()) -> &'a Entry {
    // SAFETY: by the caller's contract, the entry is alive.
    unsafe { &*data.cast::<Entry>() }
}

/// Record a wake of the entry's task and wake it; nothing once its future
/// was dropped (recorded under the lock `TaskStats::finished` takes, so a
/// finished task's wakes stay settled).
fn wake_task(entry: &Entry) {
    let stats = &entry.stats;
    let by_itself = crate::context::plain_cells::console_poll() == Some(stats.id);
    let inner = {
        let inner = stats.inner.lock();
        if inner.is_some() {
            stats.woken(now(), by_itself);
        }
        inner.clone()
    };
    if let Some(waker) = inner {
        waker.wake();
    }
}

unsafe fn clone(data: *const ()) -> RawWaker {
    // SAFETY: `data` is a live counting waker's (the vtable's contract):
    // its count keeps the entry alive, and the increment is the count the
    // new waker owns.
    unsafe {
        entry(data).stats.waker_cloned();
        Arc::increment_strong_count(data.cast::<Entry>());
    }
    RawWaker::new(data, &VTABLE)
}

unsafe fn wake(data: *const ()) {
    // SAFETY: a wake by value gives up the waker's own count, taken back
    // here as an `Arc` and dropped after the wake.
    let entry = unsafe { Arc::from_raw(data.cast::<Entry>()) };
    entry.stats.waker_dropped();
    wake_task(&entry);
}

unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: the waker is alive while borrowed.
    wake_task(unsafe { entry(data) });
}

unsafe fn drop_waker(data: *const ()) {
    // SAFETY: the waker gives back its own count, once.
    let entry = unsafe { Arc::from_raw(data.cast::<Entry>()) };
    entry.stats.waker_dropped();
}
