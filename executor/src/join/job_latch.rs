//! The latches of fork-join (RFC 0005): a [`SpinLatch`] for one `join`'s
//! stolen half and a [`CountLatch`] for a scope's spawns. Both wrap the
//! worker's [`CoreLatch`], so the owner waits with
//! [`WorkerThread::wait_until`]: it runs other jobs and tasks meanwhile and
//! sleeps through the sleep protocol when there are none.
//!
//! # Invariants
//!
//! * Only the owner worker waits on a latch; any thread may set it.
//! * The setter reads everything it needs (the owner's index, the registry)
//!   before `CoreLatch::set`, and touches nothing of the latch after it:
//!   once set, the owner may return and free it.
//! * A set that finds the owner SLEEPING wakes exactly that worker
//!   (`Registry::wake_worker`).

use crate::context::pool_cells;
use crate::scheduler::registry::Registry;
use crate::sleep::latch::CoreLatch;
use crate::sync::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Set once, by whoever ran the stolen half of a `join` (a worker of the
/// owner's pool).
pub(crate) struct SpinLatch {
    pub(crate) core: CoreLatch,
    owner: usize,
}

impl SpinLatch {
    /// A latch owned by worker `owner`.
    pub(crate) fn new(owner: usize) -> SpinLatch {
        SpinLatch {
            core: CoreLatch::new(),
            owner,
        }
    }

    /// Set the latch, waking its owner if it sleeps.
    ///
    /// # Safety
    ///
    /// `this` may be freed as soon as the latch is set: the caller must not
    /// use it (or the job holding it) afterwards. Called on a worker of the
    /// owner's pool.
    pub(crate) unsafe fn set(this: *const SpinLatch) {
        let worker = pool_cells::worker().expect("a stack job runs on a worker of its pool");
        // Read before the set (see the module invariants); the registry is
        // kept alive by this worker's own reference.
        let registry: &Registry = worker.registry();
        // SAFETY: `this` is alive until the set below.
        let (owner, core) = unsafe { ((*this).owner, &(*this).core) };
        if core.set() {
            registry.wake_worker(owner);
        }
    }
}

/// Counts a scope's unfinished work: one for the scope's own closure, one
/// per spawn. The decrement to zero sets the latch.
pub(crate) struct CountLatch {
    pub(crate) core: CoreLatch,
    counter: AtomicUsize,
    owner: usize,
    registry: Arc<Registry>,
}

impl CountLatch {
    /// A latch owned by worker `owner` of `registry`, counting one.
    pub(crate) fn new(registry: &Arc<Registry>, owner: usize) -> CountLatch {
        CountLatch {
            core: CoreLatch::new(),
            counter: AtomicUsize::new(1),
            owner,
            registry: Arc::clone(registry),
        }
    }

    /// The pool the scope runs on.
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// One more unit of work. `Relaxed` is enough: the caller holds a unit
    /// already (its own closure or a spawn's), so the count cannot reach
    /// zero before this increment.
    pub(crate) fn increment(&self) {
        self.counter.fetch_add(1, Ordering::Relaxed);
    }

    /// One unit done; the last one sets the latch.
    ///
    /// # Safety
    ///
    /// As `SpinLatch::set`: once the count reaches zero, `this` may be
    /// freed as soon as the core latch is set.
    pub(crate) unsafe fn set(this: *const CountLatch) {
        // SAFETY: alive while our unit is counted, which ends with the
        // decrement; `AcqRel` makes every unit's writes visible to the owner
        // through the latch's own `Release`/`Acquire`.
        let last = unsafe { (*this).counter.fetch_sub(1, Ordering::AcqRel) == 1 };
        if !last {
            return;
        }
        // SAFETY: the count is zero but the latch is unset: the owner is
        // still waiting, so `this` is alive until the set below. The
        // registry is cloned first, since the owner may free it after.
        let (registry, owner, core) =
            unsafe { (Arc::clone(&(*this).registry), (*this).owner, &(*this).core) };
        if core.set() {
            registry.wake_worker(owner);
        }
    }
}
