//! `BlockOnWake`: what the waker of a `block_on` future sets, and how it
//! wakes the thread that sleeps on it (`scheduler/block_on.rs` polls and
//! sleeps; the thread caches one in `context/pool_cells.rs`).
//!
//! A type of this floor, generic over the pool it wakes a thread of
//! (`WakePool`, implemented by the scheduler's `Registry`), so that the
//! thread-local cache names no file of the scheduler but the registry.
//!
//! # Invariants
//!
//! * A wake sets the latch and wakes its owner only: a plain thread through
//!   its own lock and condvar, a worker through its pool's sleep manager
//!   (`SleepManager::wake_specific_thread`, counted). No other worker is
//!   woken on the future's behalf.
//! * A `PoolThread` wake adds the thread back to its pool's activity
//!   (`sleep/activity.rs`) *before* it sets the latch (`ThreadLatch::set_then`),
//!   and its owner leaves the activity only once it has committed to sleep
//!   (`ThreadLatch::wait_then`): a paused clock never sees the pool quiet
//!   while the thread is awake or about to be.

use super::latch::{CoreLatch, ThreadLatch};
use super::manager::SleepManager;
use std::sync::Arc;
use std::task::Wake;

/// What a `block_on` wake needs of the pool it wakes a thread of (the
/// blocking pool's owner, `scheduler/blocking.rs`, builds on it).
pub(crate) trait WakePool: Send + Sync + 'static {
    /// The pool's sleep manager (its activity, for a paused clock).
    fn sleep_manager(&self) -> &SleepManager;
    /// Wake worker `index` if it sleeps (its latch was just set).
    fn wake_worker(&self, index: usize);
}

/// What a `block_on` waker sets.
pub(crate) enum BlockOnWake<P> {
    /// A plain thread, sleeping on its own lock and condvar.
    Thread(ThreadLatch),
    /// A plain thread in `Pool::block_on`: as `Thread`, and it holds its
    /// pool's clock while it is awake (`sleep/activity.rs`): it leaves the
    /// pool's activity when it commits to sleep, and its waker adds it back
    /// before waking it. Never cached: it keeps its pool alive.
    PoolThread { latch: ThreadLatch, pool: Arc<P> },
    /// A worker thread, sleeping through its pool's sleep manager.
    Worker {
        latch: CoreLatch,
        pool: Arc<P>,
        index: usize,
    },
}

impl<P> BlockOnWake<P> {
    /// The latch the owner resets before each poll.
    pub(crate) fn latch(&self) -> &CoreLatch {
        match self {
            BlockOnWake::Thread(t) | BlockOnWake::PoolThread { latch: t, .. } => &t.latch,
            BlockOnWake::Worker { latch, .. } => latch,
        }
    }
}

impl<P: WakePool> Wake for BlockOnWake<P> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match &**self {
            BlockOnWake::Thread(t) => t.set(),
            BlockOnWake::PoolThread { latch, pool } => {
                latch.set_then(|| pool.sleep_manager().hold());
            }
            BlockOnWake::Worker { latch, pool, index } => {
                if latch.set() {
                    pool.wake_worker(*index);
                }
            }
        }
    }
}
