//! Deadlock detection: Rayon's `mark_blocked` / `mark_unblocked` and the
//! deadlock handler (Rayon's earlier sleep README, "Deadlock detection").
//!
//! The pool counts its workers as *active* or *blocked* under one mutex
//! (`SleepData`). A worker is active unless it sleeps on its condvar or is
//! inside a `mark_blocked()` / `mark_unblocked()` pair. When a change leaves
//! no worker active and at least one blocked, nothing in the pool can make
//! progress on its own: the handler is called, once per such event.
//!
//! # Invariants
//!
//! * `active + blocked + sleeping workers == worker_count` at every moment
//!   the lock is free (sleeping workers are the rest).
//! * The handler runs on the thread whose change caused the event, while the
//!   lock is held (as in Rayon): a handler that called `mark_blocked` or
//!   `mark_unblocked` would deadlock on that lock, so those calls panic with
//!   a message instead. The pool wraps the user's handler in one that marks
//!   the thread as running it (`context::plain_cells::run_deadlock_handler`; every
//!   thread-local lives in `context/`, above this floor).
//! * A panic of the handler never unwinds through the sleep protocol: it is
//!   caught, and passed on only to a `mark_blocked` caller (user code).
//! * Only pools built with a handler keep these counts; others pay nothing.

use crate::unwind::discard;
use parking_lot::Mutex;
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The deadlock handler (the user's, wrapped by the pool).
pub(crate) type Handler = Arc<dyn Fn() + Send + Sync + 'static>;

/// The counts of the seed's `SleepData`.
#[derive(Debug)]
struct SleepData {
    worker_count: usize,
    active_threads: usize,
    blocked_threads: usize,
}

pub(crate) struct DeadlockDetector {
    data: Mutex<SleepData>,
    handler: Handler,
    /// Times the handler was called (`Metrics::deadlocks`).
    events: AtomicU64,
}

impl DeadlockDetector {
    pub(crate) fn new(worker_count: usize, handler: Handler) -> DeadlockDetector {
        DeadlockDetector {
            data: Mutex::new(SleepData {
                worker_count,
                active_threads: worker_count,
                blocked_threads: 0,
            }),
            handler,
            events: AtomicU64::new(0),
        }
    }

    pub(crate) fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// A worker is about to block in user code.
    pub(crate) fn mark_blocked(&self) {
        let mut data = self.data.lock();
        debug_assert!(data.active_threads > 0, "{data:?}");
        data.active_threads -= 1;
        data.blocked_threads += 1;
        let panic = self.check(&data);
        drop(data);
        if let Some(payload) = panic {
            resume_unwind(payload);
        }
    }

    /// A worker stopped blocking in user code.
    pub(crate) fn mark_unblocked(&self) {
        let mut data = self.data.lock();
        debug_assert!(data.blocked_threads > 0, "{data:?}");
        data.blocked_threads -= 1;
        data.active_threads += 1;
    }

    /// A worker is about to block on its condvar (it is committed to it).
    pub(crate) fn worker_sleeping(&self) {
        let mut data = self.data.lock();
        debug_assert!(data.active_threads > 0, "{data:?}");
        data.active_threads -= 1;
        let panic = self.check(&data);
        drop(data);
        // A handler's panic was already reported by the panic hook; the
        // sleeping worker has nobody to pass it to. Its payload is dropped
        // outside the lock, and a panic of that drop is caught too.
        if let Some(payload) = panic {
            discard(payload);
        }
    }

    /// A worker woke from its condvar.
    pub(crate) fn worker_awake(&self) {
        let mut data = self.data.lock();
        data.active_threads += 1;
        debug_assert!(
            data.active_threads + data.blocked_threads <= data.worker_count,
            "{data:?}"
        );
    }

    /// Call the handler if no worker is active and one is blocked. Returns
    /// the handler's panic, if it panicked.
    fn check(&self, data: &SleepData) -> Option<Box<dyn Any + Send>> {
        if data.active_threads != 0 || data.blocked_threads == 0 {
            return None;
        }
        self.events.fetch_add(1, Ordering::Relaxed);
        catch_unwind(AssertUnwindSafe(|| (self.handler)())).err()
    }
}

impl std::fmt::Debug for DeadlockDetector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeadlockDetector")
            .field("data", &*self.data.lock())
            .field("events", &self.events())
            .finish_non_exhaustive()
    }
}
