//! `OwnedTasks`: the table of a pool's live tasks.
//!
//! A task that waits on a waker that never fires sits in no queue, yet the
//! pool must drop its future when it shuts down. So every live task keeps its
//! waker here from spawn until its future is dropped; shutdown closes the
//! table, takes every waker and wakes it, which sends each task through
//! the schedule function into a queue that shutdown then drains.
//!
//! # Invariants
//!
//! * The table is split into shards, each behind its own small lock; a
//!   worker registers the tasks it spawns in its own shard, so spawns and
//!   completions on different workers never share a lock and nothing takes a
//!   pool-wide lock.
//! * An entry is removed exactly once: by its task's `Registration` when the
//!   future is dropped, or by `close_and_drain` at shutdown (after which
//!   removal is a no-op). Keys are reused only after removal, and a closed
//!   shard accepts no new entries, so a stale key never removes a stranger.
//! * No lock is held while a waker is woken or dropped: waking runs the
//!   schedule function and dropping a task runs user destructors.
//! * A worker removes the tasks of its own shard at once, and batches the
//!   removals from other shards (`remove_many`), which it hands back to
//!   their shard: it appends the keys to the shard's `handed_back` list
//!   (a lock of its own, on a line of its own) without touching the
//!   entries, and the shard's next insert that finds no free key frees
//!   them (`reclaim`), as does its worker when it goes idle, and any worker
//!   about to sleep for every shard whose entries lock is free
//!   (`reclaim_idle`), so a pool that sleeps keeps no finished task alive
//!   (short of a hand-back racing with the last worker's fall asleep:
//!   `pending` is a relaxed hint). So a task
//!   spawned on one worker and finished on another never makes the two
//!   meet on the spawner's entries lock, and its entry's reference, often
//!   the task's last, is dropped on the thread that spawned it, where its
//!   allocation is freed into the allocator's cache of that thread. Until
//!   then a finished task keeps its entry (and so its allocation): at most
//!   `REMOVAL_BATCH` per worker not yet handed back, and at most
//!   `HANDED_BACK_MAX` per shard handed back (a list that reaches it is
//!   freed by the thread handing back, under the entries lock).
//! * A slot packs in 32 bits (`pack`), so a shard has room for
//!   2^(32 - shard bits) - 1 keys; a full shard passes a task on to the
//!   next one with room, except a `spawn_local` task (`pinned`): its worker
//!   finds its local tasks in its own shard when it leaves.
//! * Once closed, the table holds no waker, so no task may be polled
//!   again: `is_closed` is set before the drain, and a task's poll checks
//!   it first (`TaskFuture::poll`).

use super::names::TaskNames;
use super::task_shard::{ShardCell, TaskShard, HANDED_BACK_MAX, NONE};
use super::wait_board::{WaitBoard, WaitCopy, WaitScratch};
use super::waits::Wait;
use super::waker::TaskWaker;
use crate::sync::Mutex;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Waker;

/// Where a task's waker is kept: its shard and its key in that shard. A task
/// header keeps it packed in 32 bits (`OwnedTasks::pack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LiveSlot {
    pub(crate) shard: usize,
    pub(crate) key: usize,
}

#[derive(Debug)]
pub(crate) struct OwnedTasks {
    shards: Box<[ShardCell]>,
    /// What each shard's tasks wait on, by key (`waits.rs`): apart from
    /// the entries' lock, written by the polling thread with no lock.
    boards: Box<[WaitBoard]>,
    /// log2 of the shard count: a packed slot is `key << shard_bits | shard`.
    shard_bits: u32,
    /// Keys per shard: as many as a packed slot has room for, with
    /// `UNREGISTERED` left out. A full shard passes a task on to the next
    /// one with room (a pinned one is refused, and so cancelled): only a
    /// pool of thousands of workers, one of which holds a million live
    /// tasks, meets it.
    max_keys: usize,
    /// Set by `close_and_drain` before it takes any shard's wakers: from
    /// then on no task may be polled again (`is_closed`).
    closed: AtomicBool,
}

impl OwnedTasks {
    /// A table with at least `min_shards` shards (rounded up to a power of
    /// two so that a shard is picked with a mask).
    pub(crate) fn new(min_shards: usize) -> OwnedTasks {
        let n = min_shards.max(1).next_power_of_two();
        // Keys 0..max_keys - 1 pack below `UNREGISTERED`: with b shard
        // bits the largest, (2^(32 - b) - 2) << b | (2^b - 1), is
        // 2^32 - 2^b - 1.
        Self::with_max_keys(n, ((1u64 << (32 - n.trailing_zeros())) - 1) as usize)
    }

    /// `new`, with a smaller bound of keys per shard (the tests fill one).
    fn with_max_keys(n: usize, max_keys: usize) -> OwnedTasks {
        assert!(
            n.is_power_of_two() && n < 1 << 24,
            "pool: {n} table shards (at most 2^24, a power of two)"
        );
        OwnedTasks {
            shard_bits: n.trailing_zeros(),
            max_keys,
            shards: (0..n)
                .map(|_| ShardCell {
                    entries: CachePadded::new(Mutex::new(TaskShard {
                        pages: Vec::new(),
                        free_head: NONE,
                        closed: false,
                        names: TaskNames::default(),
                    })),
                    handed_back: CachePadded::default(),
                })
                .collect(),
            boards: (0..n).map(|_| WaitBoard::default()).collect(),
            closed: AtomicBool::new(false),
        }
    }

    /// The name of the task registered in `slot`, if it has one (a lock of
    /// its shard: for a panic's error, not for a poll).
    pub(crate) fn name(&self, slot: LiveSlot) -> Option<Arc<str>> {
        let shard = self.shards[slot.shard].entries.lock();
        shard.names.get(slot.key).cloned()
    }

    /// Record `wait` for the task `id` registered in `slot`, in its poll
    /// `poll`, at coarse time `now()` if it begins now (`waits.rs`; on the
    /// polling thread).
    #[inline]
    pub(crate) fn record_wait(
        &self,
        slot: LiveSlot,
        id: u64,
        poll: u32,
        wait: Wait,
        now: impl FnOnce() -> u32,
        scratch: &std::cell::RefCell<WaitScratch>,
    ) {
        self.boards[slot.shard].record(slot.key, id, poll, wait, now, scratch);
    }

    /// The waits the task `id` registered in `slot` recorded in its poll
    /// `poll`, if that poll recorded any.
    pub(crate) fn waits(&self, slot: LiveSlot, id: u64, poll: u32) -> Option<WaitCopy> {
        self.boards[slot.shard].read(slot.key, id, poll)
    }

    /// The names held in every shard (the tests' check that a task's name
    /// goes with it).
    #[cfg(test)]
    pub(crate) fn names_held(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.entries.lock().names.len())
            .sum()
    }

    /// True once shutdown has closed the table and taken its wakers
    /// (`close_and_drain`). A task polled after that must end instead
    /// (`TaskFuture::poll` cancels it): the table no longer holds a waker
    /// of it, so if it returned `Pending` nothing would ever wake it again.
    /// That happens when the drain's wake finds the task already scheduled
    /// (a no-op) and a worker that has not left yet runs it. The wake
    /// publishes this flag to that run: async-task's wake of a scheduled
    /// task is a release of the task's state, which the run acquires.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// A header's slot word of a task that is not registered (yet, or ever).
    pub(crate) const UNREGISTERED: u32 = u32::MAX;

    /// `slot` in 32 bits, never `UNREGISTERED` (`max_keys`).
    pub(crate) fn pack(&self, slot: LiveSlot) -> u32 {
        debug_assert!(slot.shard < self.shards.len() && slot.key < self.max_keys);
        ((slot.key << self.shard_bits) | slot.shard) as u32
    }

    /// The slot that `pack` packed in `word`.
    pub(crate) fn unpack(&self, word: u32) -> LiveSlot {
        let word = word as usize;
        LiveSlot {
            shard: word & (self.shards.len() - 1),
            key: word >> self.shard_bits,
        }
    }

    /// Register a live task's waker in shard `hint` (modulo the shard count),
    /// or, if that one is full and the task is not `pinned` to it, in the
    /// next shard with room. `None` once the table is closed (the pool is
    /// shutting down), or if no shard it may use has room.
    pub(crate) fn insert(
        &self,
        hint: usize,
        waker: TaskWaker,
        pinned: bool,
        name: Option<Arc<str>>,
    ) -> Option<LiveSlot> {
        let first = self.shard_of(hint);
        let tries = if pinned { 1 } else { self.shards.len() };
        for shard_index in (first..first + tries).map(|i| i & (self.shards.len() - 1)) {
            let cell = &self.shards[shard_index];
            let mut shard = cell.entries.lock();
            if shard.closed {
                break;
            }
            if shard.free_head != NONE {
                // Most inserts: a free key, nothing to reclaim, nothing to
                // drop once the lock is released (an empty batch built and
                // dropped here cost 16 instructions a spawn, callgrind).
                let key = shard.insert(waker, name);
                return Some(LiveSlot {
                    shard: shard_index,
                    key,
                });
            }
            let reclaimed = cell.reclaim(&mut shard);
            if shard.free_head == NONE && shard.len() >= self.max_keys {
                drop(shard);
                drop(reclaimed);
                continue;
            }
            let key = shard.insert(waker, name);
            drop(shard);
            drop(reclaimed); // the finished tasks' wakers, outside the lock
            return Some(LiveSlot {
                shard: shard_index,
                key,
            });
        }
        drop(waker);
        None
    }

    /// Remove a task's entry when its future is dropped.
    pub(crate) fn remove(&self, slot: LiveSlot) {
        let mut shard = self.shards[slot.shard].entries.lock();
        if shard.closed {
            return;
        }
        let old = shard.free(slot.key);
        drop(shard);
        drop(old);
    }

    /// How many shards there are (a power of two, at least the `min_shards`
    /// asked for).
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The shard that `insert` picks for `hint`.
    pub(crate) fn shard_of(&self, hint: usize) -> usize {
        hint & (self.shards.len() - 1)
    }

    /// Remove many entries (a worker's batch from other workers' shards):
    /// hand their keys back to their shards, one lock per shard, or, for a
    /// shard whose list is full, free them here; empties `slots`.
    pub(crate) fn remove_many(&self, slots: &mut Vec<LiveSlot>) {
        slots.sort_unstable_by_key(|s| s.shard);
        let mut old = Vec::new();
        for group in slots.chunk_by(|a, b| a.shard == b.shard) {
            let cell = &self.shards[group[0].shard];
            let keys = {
                let mut keys = cell.handed_back.keys.lock();
                keys.extend(group.iter().map(|slot| slot.key));
                if keys.len() < HANDED_BACK_MAX {
                    cell.handed_back.pending.store(true, Ordering::Relaxed);
                    continue;
                }
                cell.handed_back.pending.store(false, Ordering::Relaxed);
                std::mem::take(&mut *keys)
            };
            let mut shard = cell.entries.lock();
            if shard.closed {
                continue;
            }
            old.extend(keys.into_iter().map(|key| shard.free(key)));
        }
        slots.clear();
        drop(old); // the wakers, outside every lock
    }

    /// Free the keys handed back to every shard whose entries lock is free
    /// (a worker about to sleep: a shard whose lock is taken has an active
    /// inserter, which frees them when it needs a key).
    pub(crate) fn reclaim_idle(&self) {
        for cell in self.shards.iter() {
            if !cell.handed_back.pending.load(Ordering::Relaxed) {
                continue;
            }
            let Some(mut entries) = cell.entries.try_lock() else {
                continue;
            };
            let old = cell.reclaim(&mut entries);
            drop(entries);
            drop(old);
        }
    }

    /// Free the keys handed back to `shard` (its worker, going idle).
    pub(crate) fn reclaim(&self, shard: usize) {
        let cell = &self.shards[shard];
        if !cell.handed_back.pending.load(Ordering::Relaxed) {
            return;
        }
        let mut entries = cell.entries.lock();
        let old = cell.reclaim(&mut entries);
        drop(entries);
        drop(old);
    }

    /// Wake the task in `slot`, if it is still registered (`abort`).
    pub(crate) fn wake(&self, slot: LiveSlot) {
        if let Some(waker) = self.waker(slot) {
            waker.wake();
        }
    }

    /// A clone of the waker in `slot`, if a task is registered there (it
    /// may be another task than the one whose slot it was: see
    /// `TaskHeader::live_waker`).
    pub(crate) fn waker(&self, slot: LiveSlot) -> Option<Waker> {
        let shard = self.shards[slot.shard].entries.lock();
        shard.get(slot.key)?.waker().map(|w| w.with(Waker::clone))
    }

    /// Call `f` with the waker of every registered task (of shard `only`,
    /// or of all), one shard's lock
    /// at a time: the entry, held under the lock, keeps the waker and its
    /// task alive while `f` runs (`OwnedTasks::for_each_live`, `header.rs` reads the
    /// headers through them).
    /// With each waker, the task's name if it has one (the dump's).
    pub(super) fn for_each_waker_in(
        &self,
        only: Option<usize>,
        mut f: impl FnMut(&Waker, Option<&Arc<str>>),
    ) {
        let shards = match only {
            Some(i) => &self.shards[i..=i],
            None => &self.shards[..],
        };
        for cell in shards {
            let shard = cell.entries.lock();
            for (key, entry) in shard.entries().enumerate() {
                if let Some(waker) = entry.waker() {
                    let name = shard.names.get(key);
                    waker.with(|w| f(w, name));
                }
            }
        }
    }

    /// Close every shard and return the wakers of all tasks still live.
    pub(crate) fn close_and_drain(&self) -> Vec<Waker> {
        // Before any waker is taken (see `is_closed`).
        self.closed.store(true, Ordering::SeqCst);
        let mut wakers = Vec::new();
        for cell in self.shards.iter() {
            let mut shard = cell.entries.lock();
            shard.closed = true;
            // Their entries are drained below with the rest.
            cell.handed_back.keys.lock().clear();
            shard.free_head = NONE;
            shard.names.clear();
            wakers.extend(
                shard
                    .pages
                    .drain(..)
                    .flatten()
                    .filter_map(|e| e.into_waker().map(TaskWaker::into_waker)),
            );
        }
        wakers
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::task::task_shard::{Entry, PAGE};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct CountWakes(AtomicUsize);
    impl Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A waker that counts its wakes, and the count (its `Arc`, whose strong
    /// count says how many clones are alive).
    fn counting_waker() -> (Arc<CountWakes>, Waker) {
        let counter = Arc::new(CountWakes(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        (counter, waker)
    }

    /// Register `n` clones of `waker` with shard hint `hint`.
    fn fill(tasks: &OwnedTasks, hint: usize, waker: &Waker, n: usize) -> Vec<LiveSlot> {
        (0..n)
            .map(|_| {
                tasks
                    .insert(hint, TaskWaker::boxed(waker.clone()), false, None)
                    .unwrap()
            })
            .collect()
    }

    /// The registered entries.
    fn registered(tasks: &OwnedTasks) -> usize {
        let mut seen = 0;
        tasks.for_each_waker_in(None, |_, _| seen += 1);
        seen
    }

    #[test]
    fn an_entry_is_one_word() {
        assert_eq!(std::mem::size_of::<Entry>(), std::mem::size_of::<usize>());
        assert_eq!(Entry::vacant(NONE).next_free(), Some(NONE));
        let waker = Waker::from(Arc::new(CountWakes(AtomicUsize::new(0))));
        assert!(Entry::occupied(TaskWaker::boxed(waker))
            .next_free()
            .is_none());
    }

    #[test]
    fn keys_are_reused_and_drain_returns_the_live_ones() {
        let (counter, waker) = counting_waker();
        let tasks = OwnedTasks::new(3);
        assert_eq!(tasks.shards.len(), 4);
        let a = tasks
            .insert(1, TaskWaker::boxed(waker.clone()), false, None)
            .unwrap();
        let b = tasks
            .insert(5, TaskWaker::boxed(waker.clone()), false, None)
            .unwrap();
        assert_eq!(a.shard, 1);
        assert_eq!(b.shard, 1, "hint is taken modulo the shard count");
        tasks.remove(a);
        let c = tasks
            .insert(1, TaskWaker::boxed(waker.clone()), false, None)
            .unwrap();
        assert_eq!(c, a, "a freed key is reused");
        tasks.wake(c);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        let live = tasks.close_and_drain();
        assert_eq!(live.len(), 2);
        assert!(
            tasks
                .insert(0, TaskWaker::boxed(waker.clone()), false, None)
                .is_none(),
            "closed table"
        );
        tasks.remove(b); // a no-op once closed
        tasks.wake(b); // likewise
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn keys_past_the_first_page_are_found_woken_and_drained() {
        let (counter, waker) = counting_waker();
        let tasks = OwnedTasks::new(1);
        let slots = fill(&tasks, 0, &waker, 2 * PAGE + 3);
        assert_eq!(slots.last().unwrap().key, 2 * PAGE + 2);
        tasks.wake(slots[PAGE + 1]);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        let mut gone = vec![slots[3], slots[PAGE], slots[2 * PAGE + 1]];
        tasks.remove_many(&mut gone);
        tasks.reclaim(0); // as the shard's worker does when it goes idle
        assert!(tasks.waker(slots[PAGE]).is_none(), "removed");
        assert_eq!(registered(&tasks), 2 * PAGE);
        let again = tasks
            .insert(0, TaskWaker::boxed(waker.clone()), false, None)
            .unwrap();
        assert_eq!(
            again,
            slots[2 * PAGE + 1],
            "the last freed key is reused first"
        );
        assert_eq!(tasks.close_and_drain().len(), 2 * PAGE + 1);
    }

    #[test]
    fn keys_handed_back_are_freed_by_the_shards_next_insert_that_needs_one() {
        let (counter, waker) = counting_waker();
        let tasks = OwnedTasks::new(2);
        let slots = fill(&tasks, 0, &waker, 3);
        let spare = tasks
            .insert(0, TaskWaker::boxed(waker.clone()), false, None)
            .unwrap();
        tasks.remove(spare); // on the free list at once
        assert_eq!(
            Arc::strong_count(&counter),
            5,
            "ours, the waker's, 3 entries"
        );
        let mut batch = slots.clone();
        tasks.remove_many(&mut batch);
        assert!(batch.is_empty());
        assert_eq!(Arc::strong_count(&counter), 5, "handed back, not freed yet");
        // The free list still has `spare`: this insert takes it and leaves
        // the handed-back keys alone.
        let a = tasks
            .insert(0, TaskWaker::boxed(waker.clone()), false, None)
            .unwrap();
        assert_eq!(a, spare);
        assert_eq!(Arc::strong_count(&counter), 6);
        // No free key left: this insert frees the three and reuses one.
        let b = tasks
            .insert(0, TaskWaker::boxed(waker.clone()), false, None)
            .unwrap();
        assert!(slots.contains(&b), "{b:?} reuses a handed-back key");
        assert_eq!(
            Arc::strong_count(&counter),
            4,
            "three wakers dropped, one added"
        );
        assert_eq!(registered(&tasks), 2);
    }

    #[test]
    fn a_worker_going_idle_and_a_full_list_free_the_keys_handed_back() {
        let (counter, waker) = counting_waker();
        let tasks = OwnedTasks::new(2);
        let mut batch = fill(&tasks, 1, &waker, 5);
        tasks.remove_many(&mut batch);
        assert_eq!(Arc::strong_count(&counter), 7);
        tasks.reclaim(1);
        assert_eq!(
            Arc::strong_count(&counter),
            2,
            "freed by the shard's worker"
        );
        // A worker about to sleep frees what was handed back to any shard
        // whose entries lock is free.
        let mut earlier = fill(&tasks, 1, &waker, 3);
        tasks.remove_many(&mut earlier);
        let mut other = fill(&tasks, 0, &waker, 2);
        tasks.remove_many(&mut other);
        assert_eq!(Arc::strong_count(&counter), 7);
        let busy = tasks.shards[0].entries.lock();
        tasks.reclaim_idle();
        assert_eq!(
            Arc::strong_count(&counter),
            4,
            "shard 1 freed, busy shard 0 not"
        );
        drop(busy);
        tasks.reclaim_idle();
        assert_eq!(Arc::strong_count(&counter), 2);
        let mut batch = fill(&tasks, 1, &waker, HANDED_BACK_MAX);
        tasks.remove_many(&mut batch);
        assert_eq!(
            Arc::strong_count(&counter),
            2,
            "a full list is freed by the thread handing it back"
        );
        assert_eq!(registered(&tasks), 0);
    }

    #[test]
    fn keys_handed_back_before_shutdown_are_drained_once() {
        let (counter, waker) = counting_waker();
        let tasks = OwnedTasks::new(1);
        let mut batch = fill(&tasks, 0, &waker, 4);
        let live = tasks
            .insert(0, TaskWaker::boxed(waker.clone()), false, None)
            .unwrap();
        tasks.remove_many(&mut batch);
        // Their futures are gone, but the entries wait for a reclaim: the
        // drain takes them with the live one (waking a finished task is a
        // no-op), and nothing frees them a second time after.
        assert_eq!(tasks.close_and_drain().len(), 5);
        assert_eq!(Arc::strong_count(&counter), 2);
        tasks.reclaim(0);
        tasks.remove(live);
        assert!(tasks
            .insert(0, TaskWaker::boxed(waker.clone()), false, None)
            .is_none());
        assert_eq!(Arc::strong_count(&counter), 2);
    }

    #[test]
    fn slots_pack_in_32_bits_below_unregistered() {
        for shards in [1, 4, 8, 1 << 18] {
            let tasks = OwnedTasks::new(shards);
            let last_key = tasks.max_keys - 1;
            for slot in [
                LiveSlot { shard: 0, key: 0 },
                LiveSlot {
                    shard: shards - 1,
                    key: 1,
                },
                LiveSlot {
                    shard: shards - 1,
                    key: last_key,
                },
                LiveSlot {
                    shard: 0,
                    key: last_key,
                },
            ] {
                let word = tasks.pack(slot);
                assert_ne!(word, OwnedTasks::UNREGISTERED, "{slot:?} of {shards}");
                assert_eq!(tasks.unpack(word), slot);
            }
        }
        assert_eq!(OwnedTasks::new(8).max_keys, (1 << 29) - 1);
    }

    #[test]
    fn a_full_shard_passes_tasks_on_unless_pinned() {
        let (_counter, waker) = counting_waker();
        let tasks = OwnedTasks::with_max_keys(4, 2);
        let a = tasks
            .insert(3, TaskWaker::boxed(waker.clone()), true, None)
            .unwrap();
        let b = tasks
            .insert(3, TaskWaker::boxed(waker.clone()), false, None)
            .unwrap();
        assert_eq!((a.shard, b.shard), (3, 3));
        assert!(
            tasks
                .insert(3, TaskWaker::boxed(waker.clone()), true, None)
                .is_none(),
            "pinned: refused"
        );
        let c = tasks
            .insert(3, TaskWaker::boxed(waker.clone()), false, None)
            .unwrap();
        assert_eq!(c.shard, 0, "the next shard, wrapping around");
        tasks.remove(a);
        let d = tasks
            .insert(3, TaskWaker::boxed(waker.clone()), true, None)
            .unwrap();
        assert_eq!(d, a, "a full shard still reuses a freed key");
        for _ in 0..5 {
            tasks
                .insert(1, TaskWaker::boxed(waker.clone()), false, None)
                .unwrap();
        }
        assert!(
            tasks
                .insert(2, TaskWaker::boxed(waker.clone()), false, None)
                .is_none(),
            "all full"
        );
        assert_eq!(tasks.close_and_drain().len(), 8);
    }
}
