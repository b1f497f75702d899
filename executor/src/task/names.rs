//! `TaskNames`: the names of a shard's named tasks (`task::Builder::name`),
//! kept beside the shard's entries, under the same lock.
//!
//! # Invariants
//!
//! * A task's name is here, under its table key, from the insert of its
//!   entry (before its first schedule) until that entry is freed (its
//!   future dropped, and its removal batch, if any, handed back and
//!   reclaimed), and its header says it has one (`NAMED`). Both happen
//!   under the shard's entries lock, which the insert and the free take
//!   anyway: a named task takes no lock more than an unnamed one, and an
//!   unnamed one pays a check of an empty map when its entry is freed.
//! * A key is reused only after it is freed, and its name goes with it, so
//!   a name never outlives its task onto a stranger's key.
//! * Readers (a dump, a stall report, a panic's `JoinError`) clone the name
//!   out under the lock; none holds it while it runs user code.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// The names of one shard's named tasks, by table key.
#[derive(Debug, Default)]
pub(crate) struct TaskNames {
    names: HashMap<usize, Arc<str>, BuildHasherDefault<KeyHasher>>,
}

impl TaskNames {
    pub(crate) fn insert(&mut self, key: usize, name: Arc<str>) {
        self.names.insert(key, name);
    }

    pub(crate) fn get(&self, key: usize) -> Option<&Arc<str>> {
        if self.names.is_empty() {
            return None;
        }
        self.names.get(&key)
    }

    /// The name of the task at `key`, taken out as its entry is freed.
    #[inline]
    pub(crate) fn remove(&mut self, key: usize) -> Option<Arc<str>> {
        if self.names.is_empty() {
            return None;
        }
        self.names.remove(&key)
    }

    pub(crate) fn clear(&mut self) {
        self.names.clear();
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

/// A table key's hash: keys are small distinct integers, so a multiply
/// spreads them (Fibonacci hashing) at a fraction of SipHash's cost.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, key: usize) {
        self.0 = (key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
