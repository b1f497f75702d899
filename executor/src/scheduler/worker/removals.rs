//! A worker's batch of removals from other workers' shards of the live-task
//! registry: a task that finishes on this worker but was registered in
//! another's shard is removed with the next batch, so the worker takes
//! that shard's lock once per `REMOVAL_BATCH` tasks (`task/owned.rs`, the
//! hand-back).

use crate::task::owned::LiveSlot;
use crate::task::owned::OwnedTasks;
use std::cell::RefCell;

/// Removals from other workers' shards of the live-task table that a
/// worker collects before it takes those shards' locks.
const REMOVAL_BATCH: usize = 32;

/// Finished tasks of other workers' shards, not yet removed. Touched only
/// by its worker's thread.
pub(super) struct Removals(RefCell<Vec<LiveSlot>>);

impl Removals {
    pub(super) fn new() -> Removals {
        Removals(RefCell::new(Vec::with_capacity(REMOVAL_BATCH)))
    }

    /// Remove `slot` from `tasks` with the next batch.
    pub(super) fn defer(&self, slot: LiveSlot, tasks: &OwnedTasks) {
        let full = {
            let mut removals = self.0.borrow_mut();
            removals.push(slot);
            removals.len() >= REMOVAL_BATCH
        };
        if full {
            self.flush(tasks);
        }
    }

    /// Remove the collected finished tasks: hand them back to their shards.
    /// The batch is taken out first: dropping their wakers may free tasks,
    /// and so run user destructors, which may finish more tasks here.
    pub(super) fn flush(&self, tasks: &OwnedTasks) {
        let mut batch = std::mem::take(&mut *self.0.borrow_mut());
        if batch.is_empty() {
            return;
        }
        tasks.remove_many(&mut batch);
        let mut removals = self.0.borrow_mut();
        if removals.is_empty() {
            *removals = batch; // keep the capacity
        }
    }
}
