//! `TaskLimit`: `Builder::max_tasks`, the live tasks a pool accepts, and
//! the count of spawns it refused.
//!
//! # Invariants
//!
//! * `live` counts the tasks (`spawn`, `spawn_local`; not `spawn_blocking`
//!   closures, bounded by `max_blocking_queue`, nor a `block_on`'s future)
//!   that were accepted and whose future has not been dropped yet: a spawn
//!   takes a place before its task exists (`try_acquire`), and
//!   `Schedule::release` gives it back when the future drops, which every
//!   task's does exactly once, however it ends (`task/future.rs`).
//! * A spawn never takes `live` past `max`: the place is taken by a
//!   compare-exchange that fails at `max`, so two racing spawns cannot both
//!   take the last. Only a task the pool owes (`take_anyway`: fork-join's
//!   way in from outside, a scope's job off its workers) may pass it.
//! * A pool without the limit has no `TaskLimit` (`Registry::task_limit` is
//!   `None`): its spawns and ends pay one branch, no atomic.
//!
//! The counts guard no other memory: relaxed orderings suffice.

use crate::task::spawn_error::SpawnError;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub(crate) struct TaskLimit {
    max: usize,
    live: AtomicUsize,
    rejected: AtomicU64,
}

impl TaskLimit {
    pub(crate) fn new(max: usize) -> TaskLimit {
        TaskLimit {
            max,
            live: AtomicUsize::new(0),
            rejected: AtomicU64::new(0),
        }
    }

    /// Take a place for a task about to be spawned, or refuse it (and
    /// count the refusal).
    #[inline]
    pub(crate) fn try_acquire(&self) -> Result<(), SpawnError> {
        let taken = self
            .live
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |live| {
                (live < self.max).then_some(live + 1)
            });
        match taken {
            Ok(_) => Ok(()),
            Err(_) => {
                self.rejected.fetch_add(1, Ordering::Relaxed);
                Err(SpawnError::new(self.max))
            }
        }
    }

    /// Take a place whatever the count (a task the pool owes: see
    /// `spawn_owed_task`); `live` may pass `max` until it ends, and spawns
    /// are refused meanwhile.
    pub(crate) fn take_anyway(&self) {
        self.live.fetch_add(1, Ordering::Relaxed);
    }

    /// A task that took a place ended (its future dropped).
    #[inline]
    pub(crate) fn release(&self) {
        let before = self.live.fetch_sub(1, Ordering::Relaxed);
        debug_assert!(before > 0, "a task gave back a place it never took");
    }

    /// Spawns refused so far (`Metrics::rejected_spawns`).
    pub(crate) fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::TaskLimit;

    #[test]
    fn places_are_taken_up_to_the_limit_and_given_back() {
        let limit = TaskLimit::new(2);
        assert!(limit.try_acquire().is_ok());
        assert!(limit.try_acquire().is_ok());
        let err = limit.try_acquire().unwrap_err();
        assert_eq!(err.max_tasks(), 2);
        assert_eq!(limit.rejected(), 1);
        limit.release();
        assert!(limit.try_acquire().is_ok());
        assert!(limit.try_acquire().is_err());
        assert_eq!(limit.rejected(), 2);
    }

    /// Racing spawns never take more places than the limit.
    #[test]
    fn racing_acquires_never_pass_the_limit() {
        let limit = TaskLimit::new(100);
        let taken = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        if limit.try_acquire().is_ok() {
                            taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(taken.into_inner(), 100);
        assert_eq!(limit.rejected(), 4000 - 100);
    }
}
