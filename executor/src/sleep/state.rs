//! `SleepState`: the lock, the condvar and the blocked flag that one thread
//! sleeps on, and the two ways it blocks (on its condvar, or in the I/O
//! driver).
//!
//! # Invariants
//!
//! * `is_blocked` is not `Blocked::No` exactly while its owner is committed
//!   to sleep and not yet woken; it only changes under the lock. It says how
//!   to wake the owner: notify its condvar, or unpark the driver it blocks in.
//! * A waker clears the flag and notifies (or unparks) under the lock, and
//!   the owner waits until the flag is clear: a spurious return goes back to
//!   waiting, and a wake that lands before the owner waits is not lost.
//! * `sleeps` and `self_wakes` are statistics written only by the owner
//!   (a relaxed load and store, no read-modify-write): the sleeps it began,
//!   and the sleeps in the driver it ended itself because the driver brought
//!   work. They are `std` atomics, not the `sync` shim's: no decision is
//!   taken on them, so the loom models need not explore them.

use super::park::Park;
use crate::sync::{Condvar, Mutex, MutexGuard};
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Waker;

/// How a thread that committed to sleep is blocked; changed only under its
/// `SleepState` lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// Not committed to sleep, or woken.
    No,
    /// Waiting on its condvar: a waker notifies it.
    OnCondvar,
    /// Blocked in the I/O driver: a waker unparks the driver.
    InDriver,
}

/// A lock, a condvar and how the owner is blocked: what one thread sleeps on.
#[derive(Debug)]
pub(crate) struct SleepState {
    /// Not `No` while the owner is committed to sleep and nobody woke it yet.
    is_blocked: Mutex<Blocked>,
    condvar: Condvar,
    /// Sleeps the owner began (`Metrics::sleeps`).
    sleeps: AtomicU64,
    /// Sleeps in the driver that the driver ended, no waker (counted in
    /// `Metrics::wakeups`, so that sleeps minus wakeups stays the sleepers).
    self_wakes: AtomicU64,
}

impl SleepState {
    pub(crate) fn new() -> SleepState {
        SleepState {
            is_blocked: Mutex::new(Blocked::No),
            condvar: Condvar::new(),
            sleeps: AtomicU64::new(0),
            self_wakes: AtomicU64::new(0),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Blocked> {
        self.is_blocked.lock()
    }

    /// Owner: a sleep begins (before it blocks: a reader that sees every
    /// worker's sleep counted may take the pool for asleep).
    pub(super) fn count_sleep(&self) {
        bump(&self.sleeps);
    }

    /// Sleeps begun, and sleeps the driver ended by itself.
    pub(super) fn counts(&self) -> (u64, u64) {
        (
            self.sleeps.load(Ordering::Relaxed),
            self.self_wakes.load(Ordering::Relaxed),
        )
    }

    /// Owner, holding the lock: mark itself blocked and wait until a waker
    /// clears the flag. Spurious condvar wakeups go back to waiting.
    pub(crate) fn block(&self, mut is_blocked: MutexGuard<'_, Blocked>) {
        debug_assert_eq!(*is_blocked, Blocked::No);
        *is_blocked = Blocked::OnCondvar;
        while *is_blocked != Blocked::No {
            is_blocked = self.condvar.wait(is_blocked);
        }
    }

    /// `block`, but with the lock released while `before_wait` runs, after
    /// the owner marked itself blocked. A waker that comes in between clears
    /// the flag under the lock and the owner then does not wait: nothing is
    /// lost. (`before_wait` may run user code that wakes this very owner.)
    pub(super) fn block_after(
        &self,
        mut is_blocked: MutexGuard<'_, Blocked>,
        before_wait: impl FnOnce(),
    ) {
        debug_assert_eq!(*is_blocked, Blocked::No);
        *is_blocked = Blocked::OnCondvar;
        drop(is_blocked);
        before_wait();
        let mut is_blocked = self.lock();
        while *is_blocked != Blocked::No {
            is_blocked = self.condvar.wait(is_blocked);
        }
    }

    /// Owner, holding the lock and the driver: block in the driver until a
    /// waker clears the flag (it unparks the driver) or the driver brings
    /// work (I/O readiness, a due timer: their wakers are in `wakers`). In
    /// the second case the owner clears the flag itself, counts a self-wake
    /// and calls `on_self_wake` under its lock, so that no waker also counts
    /// it woken. A park that brings nothing (a timer unpark, a spurious
    /// return) goes back to blocking. `before_wait` as in `block_after`.
    pub(super) fn block_in_driver(
        &self,
        mut is_blocked: MutexGuard<'_, Blocked>,
        driver: &dyn Park,
        wakers: &mut Vec<Waker>,
        before_wait: impl FnOnce(),
        on_self_wake: impl FnOnce(),
    ) {
        debug_assert_eq!(*is_blocked, Blocked::No);
        *is_blocked = Blocked::InDriver;
        drop(is_blocked);
        before_wait();
        loop {
            driver.park(wakers);
            let mut is_blocked = self.lock();
            if *is_blocked == Blocked::No {
                // A waker took us off the sleeping count and unparked us.
                break;
            }
            if !wakers.is_empty() {
                *is_blocked = Blocked::No;
                on_self_wake();
                bump(&self.self_wakes);
                break;
            }
        }
    }

    /// Any thread: wake the owner if it is blocked. True if it was.
    pub(crate) fn wake(&self) -> bool {
        self.wake_then(None, |_| true, || ())
    }

    /// Wake the owner if it is blocked in a way `which` accepts and, still
    /// holding its lock, run `on_woken`. True if it was woken. An owner
    /// blocked in the driver is woken through `driver`.
    pub(super) fn wake_then(
        &self,
        driver: Option<&dyn Park>,
        which: impl FnOnce(Blocked) -> bool,
        on_woken: impl FnOnce(),
    ) -> bool {
        let mut is_blocked = self.is_blocked.lock();
        let how = *is_blocked;
        if how == Blocked::No || !which(how) {
            return false;
        }
        *is_blocked = Blocked::No;
        match how {
            Blocked::InDriver => driver
                .expect("only a sleeper of a pool with a driver blocks in it")
                .unpark(),
            _ => self.condvar.notify_one(),
        }
        on_woken();
        true
    }
}

/// Add one to a statistic only its owner writes.
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}
