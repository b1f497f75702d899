//! `SleepState`: the lock, the condvar and the blocked flag that one thread
//! sleeps on, and the three ways it blocks (on its condvar, in the I/O
//! driver, or in a guest runtime that its thread drives meanwhile).
//!
//! # Invariants
//!
//! * `is_blocked` is not `Blocked::No` exactly while its owner is committed
//!   to sleep and not yet woken; it only changes under the lock. It says how
//!   to wake the owner: notify its condvar, or unpark the driver it blocks in.
//! * A waker clears the flag and notifies (or unparks, or wakes the guest runtime's
//!   waker) under the lock, and the owner waits until the flag is clear: a
//!   spurious return goes back to waiting, and a wake that lands before the
//!   owner waits is not lost.
//! * An owner blocked in a guest runtime (`block_in_guest`) stores its guest runtime's waker
//!   under the lock, after it read the flag set, in the same critical
//!   section: a waker that clears the flag later finds the waker and wakes
//!   it; one that came before leaves the flag clear, and the owner's next
//!   poll returns. The guest runtime's waker is the only way to end that wait.
//! * `sleeps`, `woke` and `self_wakes` are statistics written only by the
//!   owner (a relaxed load and store, no read-modify-write): the sleeps it
//!   began, the sleeps that ended, and the sleeps in the driver it ended
//!   itself because the driver brought work. They are `std` atomics, not the `sync` shim's: no decision is
//!   taken on them, so the loom models need not explore them.

use super::park::{GuestRuntime, Park};
use crate::sync::{Condvar, Mutex, MutexGuard};
use crate::teeth::{pulled, Tooth};
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Poll, Waker};

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

/// What the lock of a `SleepState` guards.
#[derive(Debug)]
pub(crate) struct Asleep {
    /// Not `No` while the owner is committed to sleep and nobody woke it yet.
    pub(crate) how: Blocked,
    /// The waker of the guest runtime the owner blocks in (`block_in_guest`),
    /// once it polled; the waker wakes it instead of notifying the condvar
    /// or unparking the driver.
    guest_waker: Option<Waker>,
}

/// A lock, a condvar and how the owner is blocked: what one thread sleeps on.
#[derive(Debug)]
pub(crate) struct SleepState {
    is_blocked: Mutex<Asleep>,
    condvar: Condvar,
    /// Sleeps the owner began (`Metrics::sleeps`).
    sleeps: AtomicU64,
    /// Sleeps that ended (`WorkerMetrics::wakeups`).
    woke: AtomicU64,
    /// Sleeps in the driver that the driver ended, no waker (counted in
    /// `Metrics::wakeups`, so that sleeps minus wakeups stays the sleepers).
    self_wakes: AtomicU64,
}

impl SleepState {
    pub(crate) fn new() -> SleepState {
        SleepState {
            is_blocked: Mutex::new(Asleep {
                how: Blocked::No,
                guest_waker: None,
            }),
            condvar: Condvar::new(),
            sleeps: AtomicU64::new(0),
            woke: AtomicU64::new(0),
            self_wakes: AtomicU64::new(0),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Asleep> {
        self.is_blocked.lock()
    }

    /// Owner: a sleep begins (before it blocks: a reader that sees every
    /// worker's sleep counted may take the pool for asleep).
    pub(super) fn count_sleep(&self) {
        bump(&self.sleeps);
    }

    /// Owner: the sleep counted by `count_sleep` is over.
    pub(super) fn count_woke(&self) {
        bump(&self.woke);
    }

    /// Sleeps begun, and sleeps the driver ended by itself.
    pub(super) fn counts(&self) -> (u64, u64) {
        (
            self.sleeps.load(Ordering::Relaxed),
            self.self_wakes.load(Ordering::Relaxed),
        )
    }

    /// Sleeps begun, and sleeps over.
    pub(super) fn sleeps_and_wakes(&self) -> (u64, u64) {
        (
            self.sleeps.load(Ordering::Relaxed),
            self.woke.load(Ordering::Relaxed),
        )
    }

    /// Owner, holding the lock: mark itself blocked and wait until a waker
    /// clears the flag. Spurious condvar wakeups go back to waiting.
    pub(crate) fn block(&self, mut is_blocked: MutexGuard<'_, Asleep>) {
        debug_assert_eq!(is_blocked.how, Blocked::No);
        is_blocked.how = Blocked::OnCondvar;
        while is_blocked.how != Blocked::No {
            is_blocked = self.condvar.wait(is_blocked);
        }
    }

    /// `block`, but with the lock released while `before_wait` runs, after
    /// the owner marked itself blocked. A waker that comes in between clears
    /// the flag under the lock and the owner then does not wait: nothing is
    /// lost. (`before_wait` may run user code that wakes this very owner.)
    pub(super) fn block_after(
        &self,
        mut is_blocked: MutexGuard<'_, Asleep>,
        before_wait: impl FnOnce(),
    ) {
        debug_assert_eq!(is_blocked.how, Blocked::No);
        is_blocked.how = Blocked::OnCondvar;
        drop(is_blocked);
        before_wait();
        let mut is_blocked = self.lock();
        while is_blocked.how != Blocked::No {
            is_blocked = self.condvar.wait(is_blocked);
        }
    }

    /// Owner, holding the lock and the driver: block in the driver until a
    /// waker clears the flag (it unparks the driver) or the driver brings
    /// work (I/O readiness, a due timer: their wakers are in `wakers`). In
    /// the second case the owner clears the flag itself, counts a self-wake
    /// and calls `on_self_wake` under its lock, so that no waker also counts
    /// it woken. A park that brings nothing (a timer unpark, a spurious
    /// return) goes back to blocking. `before_wait` as in `block_after`;
    /// `is_quiet` tells the driver whether a paused clock may jump
    /// (`Park::park`).
    pub(super) fn block_in_driver(
        &self,
        mut is_blocked: MutexGuard<'_, Asleep>,
        driver: &dyn Park,
        wakers: &mut Vec<Waker>,
        before_wait: impl FnOnce(),
        is_quiet: impl Fn() -> bool,
        on_self_wake: impl FnOnce(),
    ) {
        debug_assert_eq!(is_blocked.how, Blocked::No);
        is_blocked.how = Blocked::InDriver;
        drop(is_blocked);
        before_wait();
        loop {
            driver.park(wakers, &is_quiet);
            let mut is_blocked = self.lock();
            if is_blocked.how == Blocked::No {
                // A waker took us off the sleeping count and unparked us.
                break;
            }
            if !wakers.is_empty() {
                self.woke_itself(&mut is_blocked, on_self_wake);
                break;
            }
        }
    }

    /// Owner, holding the lock: mark itself blocked and drive `guest` until
    /// a waker clears the flag. The guest runtime runs its own work meanwhile
    /// (tokio's tasks and I/O, `tokio-compat`). The flag is read, and the
    /// guest's waker stored, under the lock on every poll; a waker wakes the
    /// stored waker under the same lock (`wake_then`). The caller checked
    /// `guest.can_block()`. `before_wait` as in `block_after`.
    ///
    /// With `driver` (the owner holds the driver) it is marked `InDriver`,
    /// and the guest runtime watches the driver too: when a poll of it brings work
    /// (their wakers are in `wakers`) and no waker came, the owner clears
    /// the flag itself, counts a self-wake and calls `on_self_wake` under
    /// its lock, exactly as `block_in_driver` does. Else it is marked
    /// `OnCondvar` (which here only says "not the driver's sleeper").
    pub(super) fn block_in_guest(
        &self,
        mut is_blocked: MutexGuard<'_, Asleep>,
        guest: &dyn GuestRuntime,
        driver: Option<&mut Vec<Waker>>,
        before_wait: impl FnOnce(),
        on_self_wake: impl FnOnce(),
    ) {
        debug_assert_eq!(is_blocked.how, Blocked::No);
        is_blocked.how = if driver.is_some() {
            Blocked::InDriver
        } else {
            Blocked::OnCondvar
        };
        drop(is_blocked);
        before_wait();
        let mut on_self_wake = Some(on_self_wake);
        guest.block_on(driver, &mut |cx, brought_work| {
            let mut is_blocked = self.lock();
            if is_blocked.how == Blocked::No {
                // A waker took us off the sleeping count.
                is_blocked.guest_waker = None;
                return Poll::Ready(());
            }
            if brought_work {
                if let Some(f) = on_self_wake.take() {
                    self.woke_itself(&mut is_blocked, f);
                }
                return Poll::Ready(());
            }
            // Test-only: store the waker in a critical section of its own,
            // after the flag was read: a wake in between is lost, and the
            // guest runtime model must find it (`scripts/loom`).
            if pulled(Tooth::SplitGuestWaker) {
                drop(is_blocked);
                is_blocked = self.lock();
            }
            match &is_blocked.guest_waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => is_blocked.guest_waker = Some(cx.waker().clone()),
            }
            Poll::Pending
        });
    }

    /// Owner, holding the lock, still blocked: the driver brought work
    /// and no waker came, so it ends its sleep itself, as a waker would:
    /// clears the flag, calls `on_self_wake` (which takes it off the
    /// sleeping count) and counts a self-wake.
    fn woke_itself(&self, is_blocked: &mut Asleep, on_self_wake: impl FnOnce()) {
        is_blocked.how = Blocked::No;
        is_blocked.guest_waker = None;
        on_self_wake();
        bump(&self.self_wakes);
    }

    /// Any thread: wake the owner if it is blocked. True if it was.
    pub(crate) fn wake(&self) -> bool {
        self.wake_then(None, |_| true, || ())
    }

    /// Wake the owner if it is blocked in a way `which` accepts and, still
    /// holding its lock, run `on_woken`. True if it was woken. An owner
    /// blocked in a guest runtime is woken through the guest runtime's waker it stored, one
    /// blocked in the driver through `driver`. (An owner marked blocked in a
    /// guest that has not polled yet has stored no waker: the notify or
    /// unpark then finds nobody, and its first poll sees the flag clear.)
    pub(super) fn wake_then(
        &self,
        driver: Option<&dyn Park>,
        which: impl FnOnce(Blocked) -> bool,
        on_woken: impl FnOnce(),
    ) -> bool {
        let mut is_blocked = self.is_blocked.lock();
        let how = is_blocked.how;
        if how == Blocked::No || !which(how) {
            return false;
        }
        is_blocked.how = Blocked::No;
        if let Some(waker) = is_blocked.guest_waker.take() {
            // Blocked in a guest runtime: its waker is what ends the wait.
            waker.wake();
            on_woken();
            return true;
        }
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
