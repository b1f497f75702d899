//! `TaskShard`: one shard of the live-task table (`owned.rs`): its
//! entries (one word each, a task's `TaskWaker` or a link of the free
//! list), in pages that never move, the names of its named tasks, and the
//! keys other threads handed back to it (`ShardCell`), each behind its own
//! lock on its own cache line.
//!
//! # Invariants
//!
//! * An occupied entry holds one reference of its task (its waker); a free
//!   one links the next free key. A key is freed once (`free`), and only
//!   reused after.
//! * A closed shard frees nothing handed back to it: its entries were
//!   drained already (`OwnedTasks::close_and_drain`).

use super::names::TaskNames;
use super::waker::TaskWaker;
use crate::sync::Mutex;
use crossbeam_utils::CachePadded;
use std::mem::ManuallyDrop;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A shard's entry, one word: a registered task's `TaskWaker` (whose word has
/// bit 0 clear), or, free, `VACANT` and the next free key above it.
#[repr(transparent)]
pub(super) struct Entry(usize);

/// Set in a free entry.
const VACANT: usize = 1;

/// The end of the free list.
pub(super) const NONE: usize = usize::MAX >> 1;

impl Entry {
    pub(super) fn occupied(waker: TaskWaker) -> Entry {
        let word = waker.into_word().get();
        debug_assert_eq!(word & VACANT, 0);
        Entry(word)
    }

    pub(super) fn vacant(next: usize) -> Entry {
        Entry(next << 1 | VACANT)
    }

    /// The next free key, if this entry is free.
    pub(super) fn next_free(&self) -> Option<usize> {
        (self.0 & VACANT != 0).then_some(self.0 >> 1)
    }

    /// The waker, if the entry is occupied; it stays in the entry.
    pub(super) fn waker(&self) -> Option<ManuallyDrop<TaskWaker>> {
        if self.0 & VACANT != 0 {
            return None;
        }
        // SAFETY: an occupied entry's word came from `into_word` (nonzero);
        // the copy is never dropped, so the entry keeps the reference.
        Some(ManuallyDrop::new(unsafe {
            TaskWaker::from_word(NonZeroUsize::new_unchecked(self.0))
        }))
    }

    /// The waker, if the entry is occupied, taken out of it.
    pub(super) fn into_waker(self) -> Option<TaskWaker> {
        let this = ManuallyDrop::new(self);
        this.waker().map(ManuallyDrop::into_inner)
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        drop(Entry(self.0).into_waker());
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.next_free() {
            Some(next) => write!(f, "Vacant({next})"),
            None => f.write_str("Occupied"),
        }
    }
}

/// Keys a shard's `handed_back` list holds before the thread handing back
/// frees them itself (bounds the finished tasks kept alive by a shard whose
/// inserter is gone or busy elsewhere).
pub(super) const HANDED_BACK_MAX: usize = 1024;

/// Entries per page of a shard (8 KiB of one-word wakers).
pub(super) const PAGE: usize = 1024;

/// A shard's entries, in pages that never move: the first grows like a
/// `Vec` up to `PAGE` entries (a pool with few tasks keeps a small one),
/// every later one is allocated at `PAGE` entries at once. So a shard of n
/// entries holds at most `PAGE - 1` unused ones, where one doubling `Vec`
/// held up to n (100 000 tasks cost 21 bytes of registry each, then 16
/// with two-word wakers, now 8).
#[derive(Debug)]
pub(super) struct TaskShard {
    pub(super) pages: Vec<Vec<Entry>>,
    pub(super) free_head: usize,
    pub(super) closed: bool,
    /// The names of the named tasks registered here (`names.rs`).
    pub(super) names: TaskNames,
}

impl TaskShard {
    pub(super) fn entry(&mut self, key: usize) -> &mut Entry {
        &mut self.pages[key / PAGE][key % PAGE]
    }

    pub(super) fn get(&self, key: usize) -> Option<&Entry> {
        self.pages.get(key / PAGE)?.get(key % PAGE)
    }

    /// Entries in use or on the free list: every page but the last is full.
    pub(super) fn len(&self) -> usize {
        self.pages
            .last()
            .map_or(0, |last| (self.pages.len() - 1) * PAGE + last.len())
    }

    /// Append an entry at key `len()`.
    pub(super) fn push(&mut self, entry: Entry) -> usize {
        let key = self.len();
        match self.pages.last_mut() {
            Some(page) if page.len() < PAGE => page.push(entry),
            _ => {
                // The first page grows; later ones are whole from the start.
                let mut page = Vec::with_capacity(if self.pages.is_empty() { 4 } else { PAGE });
                page.push(entry);
                self.pages.push(page);
            }
        }
        key
    }

    /// Put `waker` in a free entry (the last freed first), or a new one,
    /// and its task's `name` if it has one; returns its key.
    pub(super) fn insert(&mut self, waker: TaskWaker, name: Option<Arc<str>>) -> usize {
        let key = if self.free_head == NONE {
            self.push(Entry::occupied(waker))
        } else {
            let key = self.free_head;
            let old = std::mem::replace(self.entry(key), Entry::occupied(waker));
            self.free_head = old
                .next_free()
                .expect("free list points at an occupied entry");
            key
        };
        if let Some(name) = name {
            self.names.insert(key, name);
        }
        key
    }

    pub(super) fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.pages.iter().flatten()
    }

    /// Put `key` on the free list, and its name, if any, out of the names;
    /// returns its entry (the waker) and name, to be dropped once the lock
    /// is released.
    pub(super) fn free(&mut self, key: usize) -> Freed {
        let free_head = self.free_head;
        let old = std::mem::replace(self.entry(key), Entry::vacant(free_head));
        debug_assert!(old.next_free().is_none(), "task removed twice");
        self.free_head = key;
        (old, self.names.remove(key))
    }
}

/// A freed entry and the name its task had, dropped outside the lock.
pub(super) type Freed = (Entry, Option<Arc<str>>);

/// A shard's entries and the keys handed back to it, each behind its own
/// lock on its own cache line: the threads finishing the shard's tasks
/// write only the second, its inserter mostly the first.
#[derive(Debug)]
pub(super) struct ShardCell {
    pub(super) entries: CachePadded<Mutex<TaskShard>>,
    pub(super) handed_back: CachePadded<HandedBack>,
}

/// Keys of a shard's finished tasks that other threads removed
/// (`remove_many`), for the shard's own inserter to free.
#[derive(Debug, Default)]
pub(super) struct HandedBack {
    pub(super) keys: Mutex<Vec<usize>>,
    /// `keys` is not empty: a hint, read without the lock by inserts (a
    /// stale `false` only keeps finished tasks a while longer). Written
    /// under the lock.
    pub(super) pending: AtomicBool,
}

impl ShardCell {
    /// Free the keys handed back to this shard, whose entries lock the
    /// caller holds as `shard`; returns their old entries, to be dropped
    /// once that lock is released.
    pub(super) fn reclaim(&self, shard: &mut TaskShard) -> Vec<Freed> {
        if !self.handed_back.pending.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let keys = {
            let mut keys = self.handed_back.keys.lock();
            self.handed_back.pending.store(false, Ordering::Relaxed);
            std::mem::take(&mut *keys)
        };
        if shard.closed {
            return Vec::new(); // drained already
        }
        keys.into_iter().map(|key| shard.free(key)).collect()
    }
}
