//! The synchronisation primitives of the sleep protocol, in one place so that
//! `loom` can replace them.
//!
//! Everything the sleep protocol and the latches touch concurrently (the
//! packed counters, the latch states, the per-thread sleep locks and condvars,
//! the seq-cst fences) is imported from here, never from `std` or
//! `parking_lot` directly. Under `cfg(loom)` the same names are loom's
//! model-checked types, so a model can explore every interleaving of the real
//! protocol code.
//!
//! The mutex and condvar keep one small API for both backends: `lock()` never
//! fails (poisoning is not part of our protocol) and `Condvar::wait` takes the
//! guard by value and gives it back.
//!
//! Statistics counters (`inspect/metrics.rs`, and the sleep counts in
//! `sleep/state.rs`) are not part of the protocol and use `std` atomics
//! directly: no decision is taken on them.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
};

/// What an idle worker does between search rounds: a scheduling hint.
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

/// Under loom, nothing. A hint has no effect on memory, but loom's
/// `yield_now` does: after it, loom stops letting a thread read values it
/// read before (its way of making spin loops progress), which would hide
/// exactly the stale reads of the queues that the fences exist for. The idle
/// loop is bounded (one round under loom), so it needs no help to progress.
#[cfg(loom)]
pub(crate) fn yield_now() {}

#[cfg(not(loom))]
mod imp {
    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(parking_lot::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }

        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock()
        }
    }

    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(parking_lot::Condvar::new())
        }

        pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(&mut guard);
            guard
        }

        /// Wait for a notification or `timeout`, whichever comes first.
        pub(crate) fn wait_for<'a, T>(
            &self,
            mut guard: MutexGuard<'a, T>,
            timeout: std::time::Duration,
        ) -> MutexGuard<'a, T> {
            self.0.wait_for(&mut guard, timeout);
            guard
        }

        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().expect("loom mutex poisoned")
        }

        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok()
        }
    }

    impl<T: Default> Default for Mutex<T> {
        fn default() -> Self {
            Mutex::new(T::default())
        }
    }

    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(guard).expect("loom mutex poisoned")
        }

        /// loom does not model time: this waits for a notification.
        pub(crate) fn wait_for<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            timeout: std::time::Duration,
        ) -> MutexGuard<'a, T> {
            self.0
                .wait_timeout(guard, timeout)
                .expect("loom mutex poisoned")
                .0
        }

        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }
    }
}

pub(crate) use imp::{Condvar, Mutex, MutexGuard};
