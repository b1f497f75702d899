//! `TaskNames`: the names of a shard's named tasks (`task::Builder::name`).
//!
//! # Invariants
//!
//! * A task's name is here from before its first schedule (`Registry`'s
//!   spawn puts it in the shard its task registers in) until its future is
//!   dropped (`Registration`), and its header says it has one (`NAMED`):
//!   an unnamed task never touches a map, and a named one takes its
//!   shard's names lock at its spawn and at its end. A spawn on a worker
//!   registers in that worker's own shard, so named spawns on different
//!   workers never share a lock.
//! * Readers (a dump, a stall report, a panic's `JoinError`, the console)
//!   clone the name out: none holds the lock while it runs user code.
//! * Lock order: a shard's entries lock, then a names lock (the dump reads
//!   names while it walks the entries), never the other way round: the
//!   names lock is taken alone everywhere else.

use super::id::TaskId;
use crate::sync::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// The names of one shard's named tasks, by id.
#[derive(Debug, Default)]
pub(crate) struct TaskNames {
    names: Mutex<HashMap<TaskId, Arc<str>>>,
}

impl TaskNames {
    pub(crate) fn insert(&self, id: TaskId, name: Arc<str>) {
        self.names.lock().insert(id, name);
    }

    pub(crate) fn get(&self, id: TaskId) -> Option<Arc<str>> {
        self.names.lock().get(&id).cloned()
    }

    /// How many names it holds (the tests' check that none is left).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.names.lock().len()
    }

    pub(crate) fn remove(&self, id: TaskId) {
        // Dropped outside the lock (a name is only bytes, but keep the rule).
        let name = self.names.lock().remove(&id);
        drop(name);
    }
}
