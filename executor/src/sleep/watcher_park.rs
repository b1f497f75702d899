//! `WatcherPark`: where a pool's watcher thread (`../scheduler/watcher.rs`)
//! waits, for its next look or, while every worker sleeps, until a worker
//! needs it. It is part of the sleep protocol: a worker that leaves
//! `sleeping`, or that hides a task in one of its task slots (its LIFO slot
//! or its deferred slot, `../scheduler/slot.rs`), must never find the
//! watcher parked for good.
//!
//! # Invariants
//!
//! * The watcher parks only after it saw every worker counted sleeping,
//!   *after* it announced itself parked (`parked`, SeqCst). A worker about
//!   to put into its LIFO slot (or its deferred slot) was taken off
//!   `sleeping` (a SeqCst read-modify-write, by its waker, which happened
//!   before it ran), and stays off it while the slot holds a task (it runs
//!   that task next, or takes it in its search before it could sleep). It
//!   reads `parked` (SeqCst) before the put (`unparked_for_put`). In the
//!   single order of the SeqCst operations either the watcher's read of the
//!   counters comes after that decrement (it does not park) or the worker's
//!   read of `parked` comes after the watcher's store (it unparks the
//!   watcher, and posts this task instead of putting it): a task never sits
//!   in a LIFO or deferred slot behind a long poll with the watcher parked. (This
//!   argument rests on seq-cst accesses alone, with no fence on the LIFO
//!   put's hot path; loom treats seq-cst accesses as acquire/release, so it
//!   is argued here, not model-checked.)
//! * A put that finds the watcher parked does not wait for it: the pool was
//!   asleep until just now, so the watcher's first look would come after
//!   two cross-thread wakes (its own, then the sleeper's it injects for).
//!   The worker unparks the watcher, for the puts after this one, and posts
//!   the task instead (its deque, `new_internal_jobs`: the model-checked way
//!   to post work), which wakes a sleeper at once. In that order: posting
//!   first started a spawned task sooner but made a woken one's start
//!   bimodal (0.1 or 0.8-1.5 ms), and so did leaving the watcher parked
//!   until a second put (docs/BENCHMARKS-HISTORY.md, "Fourth step: the first put
//!   after the pool slept is posted").
//! * In a pool with a stall handler, every wake of a sleeping worker
//!   unparks the watcher too (`worker_woke`, from `SleepManager::sleeper_left`, the
//!   one place a worker leaves `sleeping`). The argument is the LIFO put's,
//!   made with two seq-cst fences: the watcher's, between announcing itself
//!   parked and reading the counters (`park_while`), and the unparker's,
//!   between its decrement of `sleeping` and its read of `parked`. So no
//!   poll runs while the watcher is parked. `../models/watcher.rs` checks
//!   this under loom, and that a watcher reading the counters before it
//!   announces itself (`POOL_LOOM_TOOTH=watcher_looks_first`) sleeps
//!   through the poll.
//! * The unpark may happen under a worker's sleep lock; the watcher never
//!   takes a sleep lock (it reads the counters), so its own lock nests
//!   inside one without a cycle.

use crate::sync::{fence, AtomicBool, Condvar, Mutex, Ordering};
use crate::teeth::{pulled, Tooth};
use crossbeam_utils::CachePadded;
use std::time::Duration;

#[derive(Debug, Default)]
struct WatchState {
    parked: bool,
    stopped: bool,
    /// Set by the unpark of a LIFO put, which may need a rescue soon (the
    /// watcher's fastest look follows); a woken worker's unpark, for the
    /// stall detector, only needs a look within the slowest.
    urgent: bool,
}

/// Where the watcher waits: for its next look, or while the pool sleeps.
#[derive(Debug, Default)]
pub(crate) struct WatcherPark {
    /// True while the watcher is parked (or about to be) for lack of any
    /// active worker. Read by every LIFO put: on a cache line of its own, so
    /// that neither the counters nor the watcher's lock, written often,
    /// evict it from the workers' caches.
    parked: CachePadded<AtomicBool>,
    state: Mutex<WatchState>,
    condvar: Condvar,
}

impl WatcherPark {
    /// A worker is about to put a task into its LIFO slot, which may need a
    /// rescue soon. If the watcher is parked, unpark it (urgently: its first
    /// look comes after its fastest tick) and return true: the worker posts
    /// this task instead of putting it (see the module invariants).
    #[inline]
    pub(crate) fn unparked_for_put(&self) -> bool {
        // SeqCst: see the module invariant.
        if self.parked.load(Ordering::SeqCst) {
            self.unpark(true);
            true
        } else {
            false
        }
    }

    /// A sleeping worker was just woken (by this thread, the waker, or by
    /// the I/O driver), in a pool with a stall handler: it is about to poll,
    /// so unpark the watcher if it is parked. The fence pairs with the one
    /// in `park_while` (see the module invariants); it costs nothing next
    /// to the wake this follows, and it is the form of the argument that
    /// loom can check (`../models/watcher.rs`: loom treats seq-cst loads and
    /// stores as acquire/release, seq-cst fences exactly).
    pub(crate) fn worker_woke(&self) {
        fence(Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst) {
            self.unpark(false);
        }
    }

    #[cold]
    fn unpark(&self, urgent: bool) {
        let mut state = self.state.lock();
        if state.parked {
            state.parked = false;
            state.urgent = urgent;
            self.parked.store(false, Ordering::SeqCst);
            self.condvar.notify_one();
        }
    }

    /// Watcher: park while `all_asleep` holds. `None` once stopped, else
    /// whether the unpark was urgent (a LIFO put) or there was none.
    ///
    /// `parked` is announced before `all_asleep` is read (see the module
    /// invariants); `../models/watcher.rs` checks that, and that reading it
    /// only before the announcement (`POOL_LOOM_TOOTH=watcher_looks_first`) loses
    /// a worker's wake.
    pub(crate) fn park_while(&self, all_asleep: impl Fn() -> bool) -> Option<bool> {
        let mut state = self.state.lock();
        state.urgent = true;
        let looks_first = pulled(Tooth::WatcherLooksFirst);
        if looks_first && !all_asleep() {
            return (!state.stopped).then_some(true);
        }
        state.parked = true;
        self.parked.store(true, Ordering::SeqCst);
        // Pairs with the fence of `worker_woke`: either the worker's read of
        // `parked` sees it set, or this read of the counters sees the
        // worker taken off `sleeping`.
        fence(Ordering::SeqCst);
        if !looks_first && !all_asleep() {
            state.parked = false;
            self.parked.store(false, Ordering::SeqCst);
        }
        while state.parked && !state.stopped {
            state = self.condvar.wait(state);
        }
        (!state.stopped).then_some(state.urgent)
    }

    /// Watcher: wait `tick`. False once stopped.
    pub(crate) fn wait(&self, tick: Duration) -> bool {
        let mut state = self.state.lock();
        if !state.stopped {
            state = self.condvar.wait_for(state, tick);
        }
        !state.stopped
    }

    /// The pool shuts down: the watcher returns.
    pub(crate) fn stop(&self) {
        self.state.lock().stopped = true;
        self.condvar.notify_one();
    }
}
