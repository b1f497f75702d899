//! `TaskTable`: every task of a pool that serves tokio-console, live or
//! finished a short while ago, with its `TaskStats`; and what one publish
//! of it holds (`Publish`).
//!
//! # Invariants
//!
//! * A task enters at its spawn (`spawned`, before its first schedule, so
//!   its every poll finds it) and leaves the live tasks when its future
//!   drops (`finished`), for the finished ones, which are kept for
//!   `RETAIN` and at most `MAX_FINISHED` of them (`PER_SHARD` a shard),
//!   the oldest let go first: the table's memory is bounded by the live
//!   tasks, not by how many ran (a finished task let go before any publish
//!   saw it is counted in `lost`, the console's `dropped_events`).
//! * The tasks are sharded by id, live and finished alike, each shard
//!   behind its own lock, held only for a map operation: a spawn, a poll's
//!   lookup and a drop each take their task's shard's lock once, and two
//!   workers contend only when their tasks' ids share a shard. Nothing
//!   here is on the path of a pool without a console.
//! * One thread publishes (the console's server): it alone reads and
//!   clears `TaskStats::changed` and sets `announced`.

use super::stats::{now, TaskStats};
use crate::task::header::TaskKind;
use crate::task::id::TaskId;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

/// How long a finished task is kept: as long as tokio-console keeps one
/// on screen by default (its `--retain-for`, 6 s), a little more.
pub(crate) const RETAIN: Duration = Duration::from_secs(10);

/// The most finished tasks kept, whatever their age: a million tasks a
/// second cost the console this many, not a million.
pub(crate) const MAX_FINISHED: usize = 4096;

/// The shards (a power of two).
const SHARDS: usize = 64;

/// The finished tasks a shard keeps.
const PER_SHARD: usize = MAX_FINISHED / SHARDS;

/// Task ids are unique integers: the identity hash, mixed so that
/// consecutive ids spread over the map's groups.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only task ids (u64) are hashed here")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The tasks whose ids fall in one shard: the live ones by id, the
/// finished ones oldest first, and entries let go that nobody else holds,
/// kept for the shard's next spawns.
#[derive(Default)]
struct ConsoleShard {
    live: HashMap<u64, Arc<Entry>, BuildHasherDefault<IdHasher>>,
    finished: VecDeque<Arc<Entry>>,
    spare: Vec<Arc<Entry>>,
}

impl ConsoleShard {
    /// Let go of the oldest finished task: counted lost if no publish sent
    /// it, kept as a spare if nobody else holds it (no counting waker of
    /// it is left).
    fn let_go(&mut self, lost: &AtomicU64) {
        let Some(mut gone) = self.finished.pop_front() else {
            return;
        };
        if !gone.announced.load(Relaxed) {
            lost.fetch_add(1, Relaxed);
        }
        if self.spare.len() < PER_SHARD && Arc::get_mut(&mut gone).is_some() {
            self.spare.push(gone);
        }
    }
}

/// A task's stats and whether a publish has sent it yet.
pub(crate) struct Entry {
    pub(crate) stats: TaskStats,
    announced: AtomicBool,
}

/// Every task of one pool, as the console sees them.
pub(crate) struct TaskTable {
    shards: Box<[Mutex<ConsoleShard>]>,
    /// Finished tasks let go before a publish sent them.
    lost: AtomicU64,
}

/// What one publish sends: the tasks never sent before, and the ones
/// whose figures changed since the previous publish (each once).
pub(crate) struct Publish {
    pub(crate) new: Vec<Arc<Entry>>,
    pub(crate) changed: Vec<Arc<Entry>>,
    /// Finished tasks let go before any publish sent them.
    pub(crate) lost: u64,
}

impl TaskTable {
    pub(crate) fn new() -> TaskTable {
        TaskTable {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(ConsoleShard::default()))
                .collect(),
            lost: AtomicU64::new(0),
        }
    }

    fn shard(&self, id: TaskId) -> &Mutex<ConsoleShard> {
        &self.shards[id.as_u64() as usize & (SHARDS - 1)]
    }

    /// A task was spawned (before its first schedule), named `name` if it
    /// has a name; `waker` wakes it.
    pub(crate) fn spawned(
        &self,
        id: TaskId,
        at: &'static Location<'static>,
        kind: TaskKind,
        name: Option<Arc<str>>,
        waker: Waker,
    ) {
        let fresh = Entry {
            stats: TaskStats::new(id, at, kind, name, now(), waker),
            announced: AtomicBool::new(false),
        };
        let mut shard = self.shard(id).lock();
        // A spare, if any: a task's memory allocated on the thread that
        // spawns it and freed on the one that finishes it made the
        // allocator's lock the largest cost of a short task (measured).
        let entry = match shard.spare.pop() {
            Some(mut spare) => {
                *Arc::get_mut(&mut spare).expect("nobody else holds a spare") = fresh;
                spare
            }
            None => Arc::new(fresh),
        };
        shard.live.insert(id.as_u64(), entry);
    }

    /// The live task `id`, if it is one.
    #[inline]
    pub(crate) fn get(&self, id: TaskId) -> Option<Arc<Entry>> {
        self.shard(id).lock().live.get(&id.as_u64()).cloned()
    }

    /// Task `id`'s future was dropped: keep it among the finished ones.
    pub(crate) fn finished(&self, id: TaskId) {
        let now = now();
        let mut shard = self.shard(id).lock();
        let Some(entry) = shard.live.remove(&id.as_u64()) else {
            return;
        };
        entry.stats.finished(now);
        shard.finished.push_back(entry);
        if shard.finished.len() > PER_SHARD {
            shard.let_go(&self.lost);
        }
    }

    /// Every task in the table, live and finished, letting go of the
    /// finished ones older than `RETAIN` on the way.
    pub(crate) fn all(&self) -> Vec<Arc<Entry>> {
        let now = now();
        let retain = RETAIN.as_nanos() as u64;
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            while let Some(oldest) = shard.finished.front() {
                let dropped = oldest.stats.dropped().unwrap_or(now);
                if now.saturating_sub(dropped) < retain {
                    break;
                }
                shard.let_go(&self.lost);
            }
            all.extend(shard.live.values().cloned());
            all.extend(shard.finished.iter().cloned());
        }
        all
    }

    /// The task `id`, live or finished and kept.
    pub(crate) fn find(&self, id: u64) -> Option<Arc<Entry>> {
        let id = TaskId::from_u64(id)?;
        let shard = self.shard(id).lock();
        shard
            .live
            .get(&id.as_u64())
            .cloned()
            .or_else(|| shard.finished.iter().find(|e| e.stats.id == id).cloned())
    }

    /// The publisher: what changed since its previous call (everything, if
    /// `all`, for a new subscriber: then nothing is marked sent).
    pub(crate) fn publish(&self, all: bool) -> Publish {
        let mut publish = Publish {
            new: Vec::new(),
            changed: Vec::new(),
            lost: if all { 0 } else { self.lost.swap(0, Relaxed) },
        };
        for entry in self.all() {
            if all {
                publish.new.push(entry);
            } else if !entry.announced.swap(true, Relaxed) {
                entry.stats.take_changed();
                publish.new.push(entry);
            } else if entry.stats.take_changed() {
                publish.changed.push(entry);
            }
        }
        publish
    }
}
