//! `Timers`: the timer store of one pool's driver, one shard per worker
//! and one for the threads that are not workers.
//!
//! A shard is an ordered map from (deadline, sequence number) to the waker
//! of the task waiting for it, under a lock of its own: insert, cancel and
//! update are O(log n), the next deadline is the first key, and firing pops
//! from the front. A hierarchical wheel (tokio's) makes insert O(1) but
//! rounds deadlines to its slots and costs a fixed wheel per pool. Measured
//! with `cargo run --release -p benches --bin timers` (100 000 concurrent
//! timers of 1..=100 ms on 2 workers, beside tokio; docs/BENCHMARKS.md).
//!
//! A timer goes into the shard of the thread that registers it: a worker's
//! own, or the shared one. While a worker is awake it fires its own shard
//! (`fire_own`, on its searches), so a timer registered and fired on one
//! worker takes only that worker's lock, which no other thread takes then:
//! not the holder of the driver, not another worker's poll. When it goes
//! idle its shard is handed to the driver's sleeper (`deadlines.rs`), which
//! fires it at its deadlines; every poll of the driver fires the shared
//! shard, the shards nobody attends, and, `SLACK` late, those whose owner
//! is awake but has not fired them (stuck in a long poll). A timer polled,
//! cancelled or dropped on another thread than the one that registered it
//! takes its shard's lock from there (`Timers::foreign_locks` counts these).
//!
//! # Invariants
//!
//! * A timer whose deadline is at or before its shard's `fired_until` is
//!   out of the shard (fired, or cancelled), so its cancel takes no lock.
//!   (A timer inserted with a deadline that a fire passed meanwhile is the
//!   exception: it is fired by the next fire of its shard, a spurious wake
//!   if its entry was dropped since.)
//! * After `shut_down` every shard is empty and stays empty: an insert is
//!   refused and the timer completes at once.
//! * Deadlines are in the pool's time (`pool_clock.rs`); a paused clock
//!   jumps (`jump_if_quiet`) only under every shard's lock, to the first
//!   deadline of them all.
//! * Only the paused clock's jump holds more than one shard's lock, and it
//!   takes them in index order.

use super::deadlines::{Deadlines, NONE};
use super::pool_clock::PoolClock;
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, MutexGuard};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Waker;
use std::time::{Duration, Instant};

/// How late past its deadline an awake worker's timer may go before a poll
/// of the driver fires it for the worker: it does so itself within a few
/// dozen tasks, unless one poll runs this long.
const SLACK: Duration = Duration::from_millis(10);

/// One registered timer: its deadline, its shard and a sequence number
/// that keeps equal deadlines apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerKey {
    deadline: Instant,
    seq: u64,
    shard: u32,
}

#[derive(Debug, Default)]
struct TimerShard {
    entries: BTreeMap<(Instant, u64), Waker>,
    next_seq: u64,
    shut_down: bool,
}

/// A shard and what it publishes without its lock.
#[derive(Debug, Default)]
struct Locked {
    shard: Mutex<TimerShard>,
    /// The time (from `origin`, in nanoseconds) up to which the shard has
    /// been fired: stored under the lock after each fire.
    fired_until: AtomicU64,
}

/// What `Timers::insert` did.
#[derive(Debug)]
pub(crate) enum Inserted {
    /// Registered; if `unpark`, the caller must unpark the driver: it is
    /// blocked past this deadline.
    Yes { key: TimerKey, unpark: bool },
    /// The store is shut down: the timer completes at once.
    ShutDown,
}

#[derive(Debug)]
pub(crate) struct Timers {
    shards: Box<[CachePadded<Locked>]>,
    deadlines: Deadlines,
    /// The instant deadlines are counted from in `deadlines`.
    origin: Instant,
    /// Acquisitions of a shard's lock by another thread than the one whose
    /// shard it is (a statistic: `foreign_locks`).
    foreign: AtomicU64,
}

impl Timers {
    /// A store for a pool of `workers` workers.
    pub(crate) fn new(workers: usize, origin: Instant) -> Timers {
        let shards = workers + 1;
        Timers {
            shards: (0..shards).map(|_| CachePadded::default()).collect(),
            deadlines: Deadlines::new(shards, SLACK.as_nanos() as u64),
            origin,
            foreign: AtomicU64::new(0),
        }
    }

    /// The shard of worker `worker` of this pool, or (`None`) the shared one.
    #[inline]
    pub(crate) fn shard_of(&self, worker: Option<usize>) -> usize {
        let shared = self.shards.len() - 1;
        worker.map_or(shared, |w| w.min(shared))
    }

    /// `instant` as `deadlines` counts it.
    #[inline]
    fn nanos(&self, instant: Instant) -> u64 {
        let nanos = instant.saturating_duration_since(self.origin).as_nanos();
        nanos.min(u128::from(NONE - 1)) as u64
    }

    /// TimerShard `shard`'s lock, taken by the thread whose shard is `mine`.
    #[inline]
    fn lock(&self, shard: usize, mine: usize) -> MutexGuard<'_, TimerShard> {
        if shard != mine {
            self.foreign.fetch_add(1, Ordering::Relaxed);
        }
        self.shards[shard].shard.lock()
    }

    /// Publish shard `shard`'s earliest deadline; under its lock. True if
    /// that changed it.
    #[inline]
    fn publish(&self, shard: usize, locked: &TimerShard) -> bool {
        let earliest = locked
            .entries
            .first_key_value()
            .map_or(NONE, |(&(deadline, _), _)| self.nanos(deadline));
        self.deadlines.set_earliest(shard, earliest)
    }

    /// Register a timer in the shard `mine` of the calling thread.
    pub(crate) fn insert(&self, mine: usize, deadline: Instant, waker: Waker) -> Inserted {
        let mut shard = self.lock(mine, mine);
        if shard.shut_down {
            return Inserted::ShutDown;
        }
        let seq = shard.next_seq;
        shard.next_seq += 1;
        shard.entries.insert((deadline, seq), waker);
        let first = self.publish(mine, &shard);
        drop(shard);
        let key = TimerKey {
            deadline,
            seq,
            shard: mine as u32,
        };
        let unpark = first && self.deadlines.inserted(mine, self.nanos(deadline));
        Inserted::Yes { key, unpark }
    }

    /// Replace the waker of `key`, from the thread whose shard is `mine`;
    /// false if it is gone (fired, or shut down).
    pub(crate) fn update(&self, mine: usize, key: TimerKey, waker: &Waker) -> bool {
        let shard = key.shard as usize;
        match self
            .lock(shard, mine)
            .entries
            .get_mut(&(key.deadline, key.seq))
        {
            Some(w) => {
                w.clone_from(waker);
                true
            }
            None => false,
        }
    }

    /// Cancel `key` (nothing if it already fired), from the thread whose
    /// shard is `mine()`, asked only if the lock is taken. The waker is
    /// dropped after the lock is released.
    pub(crate) fn remove(&self, mine: impl FnOnce() -> usize, key: TimerKey) {
        let index = key.shard as usize;
        // Acquire: pairs with the fire's store; the fire removed the entry
        // before it (see the invariants for the one exception).
        if self.nanos(key.deadline) <= self.shards[index].fired_until.load(Ordering::Acquire) {
            return;
        }
        let mut shard = self.lock(index, mine());
        let removed = shard.entries.remove(&(key.deadline, key.seq));
        if removed.is_some() {
            let _ = self.publish(index, &shard);
        }
        drop(shard);
        drop(removed);
    }

    /// Worker `worker` goes idle: its shard is the driver sleeper's to
    /// fire. True if the caller must unpark the driver.
    pub(crate) fn leave(&self, worker: usize) -> bool {
        self.deadlines.leave(self.shard_of(Some(worker)))
    }

    /// Worker `worker` is awake again: it fires its own shard.
    #[inline]
    pub(crate) fn attend(&self, worker: usize) {
        self.deadlines.attend(self.shard_of(Some(worker)));
    }

    /// The driver's holder is about to block: until when it may (`None`:
    /// until something else wakes it), recorded for `insert` and `leave`.
    pub(crate) fn park_until(&self) -> Option<Instant> {
        self.deadlines
            .park_until()
            .map(|nanos| self.origin + Duration::from_nanos(nanos))
    }

    /// The driver's holder, its clock paused, about to block: if the pool
    /// `is_quiet` (read under every shard's lock, after the holder's poll
    /// without blocking found nothing), jump `clock` to the earliest
    /// deadline and move the wakers of the timers due then into `wakers`;
    /// true if it did. Else the holder blocks until an unpark (the pool
    /// going quiet unparks it). Under the locks, the jump never passes a
    /// deadline inserted before it, and an insert after it reads the new
    /// time.
    pub(crate) fn jump_if_quiet(
        &self,
        clock: &PoolClock,
        is_quiet: &dyn Fn() -> bool,
        wakers: &mut Vec<Waker>,
    ) -> bool {
        // A paused clock's sleeper waits for the pool to be quiet, not for
        // a deadline (`Deadlines::park_paused`).
        self.deadlines.park_paused();
        let mut shards: Vec<MutexGuard<'_, TimerShard>> =
            self.shards.iter().map(|s| s.shard.lock()).collect();
        let first = shards
            .iter()
            .filter_map(|s| {
                s.entries
                    .first_key_value()
                    .map(|(&(deadline, _), _)| deadline)
            })
            .min();
        let Some(deadline) = first.filter(|_| is_quiet()) else {
            return false;
        };
        clock.jump_to(deadline);
        self.deadlines.unparked();
        let now = clock.now();
        // Only the timers of the deadline jumped to are due: their order
        // among shards is the shards'.
        for (index, shard) in shards.iter_mut().enumerate() {
            self.take_due(index, shard, now, &mut |_, waker| wakers.push(waker));
        }
        true
    }

    /// The driver's holder is no longer blocked.
    pub(crate) fn unparked(&self) {
        self.deadlines.unparked();
    }

    /// A poll of the driver by the thread whose shard is `mine`: move the
    /// wakers of the timers due by `now` into `wakers`, in deadline order,
    /// from its own shard, the shared one, the shards nobody attends, and
    /// the attended ones `SLACK` overdue (the module docs).
    pub(crate) fn fire(&self, mine: usize, now: Instant, wakers: &mut Vec<Waker>) {
        let now_nanos = self.nanos(now);
        let shared = self.shards.len() - 1;
        let due = |index: usize| {
            self.deadlines
                .due(index, now_nanos, index == mine || index == shared)
        };
        self.fire_shards(due, mine, now, wakers);
    }

    /// Every timer due by `now`, of every shard, from the thread whose shard
    /// is `mine` (`advance`, which moved a paused clock).
    pub(crate) fn fire_all(&self, mine: usize, now: Instant, wakers: &mut Vec<Waker>) {
        self.fire_shards(|_| true, mine, now, wakers);
    }

    /// An awake worker's own duty (its searches): the wakers of its own
    /// shard's timers due by `now()` into `wakers`. Reads the clock only if
    /// the shard has a timer.
    #[inline]
    pub(crate) fn fire_own(
        &self,
        worker: usize,
        now: impl FnOnce() -> Instant,
        wakers: &mut Vec<Waker>,
    ) {
        let mine = self.shard_of(Some(worker));
        if self.deadlines.earliest(mine) == NONE {
            return;
        }
        let now = now();
        if self.deadlines.due(mine, self.nanos(now), true) {
            let shard = &mut self.lock(mine, mine);
            self.take_due(mine, shard, now, &mut |_, waker| wakers.push(waker));
        }
    }

    /// Fire the timers due by `now` of the shards that `pick` picks (each
    /// under its own lock, in turn) into `wakers`: one shard's straight in
    /// (a shard is in deadline order), several merged by deadline.
    fn fire_shards(
        &self,
        pick: impl Fn(usize) -> bool,
        mine: usize,
        now: Instant,
        wakers: &mut Vec<Waker>,
    ) {
        let picked = || (0..self.shards.len()).filter(|&index| pick(index));
        let mut shards = picked();
        let Some(first) = shards.next() else {
            return;
        };
        if shards.next().is_none() {
            let shard = &mut self.lock(first, mine);
            self.take_due(first, shard, now, &mut |_, waker| wakers.push(waker));
            return;
        }
        let mut merged: Vec<(Instant, Waker)> = Vec::new();
        for index in picked() {
            let shard = &mut self.lock(index, mine);
            self.take_due(index, shard, now, &mut |deadline, waker| {
                merged.push((deadline, waker))
            });
        }
        // Stable: a shard's equal deadlines keep their order.
        merged.sort_by_key(|&(deadline, _)| deadline);
        wakers.extend(merged.into_iter().map(|(_, waker)| waker));
    }

    /// Under shard `index`'s lock: hand its timers due by `now` to `take`,
    /// in deadline order. True if there were any.
    fn take_due(
        &self,
        index: usize,
        shard: &mut TimerShard,
        now: Instant,
        take: &mut dyn FnMut(Instant, Waker),
    ) -> bool {
        let mut took = false;
        while let Some(entry) = shard.entries.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((deadline, _), waker) = entry.remove_entry();
            take(deadline, waker);
            took = true;
        }
        if took {
            let _ = self.publish(index, shard);
        }
        // Release: pairs with `remove`'s Acquire. Only grows: `now` is
        // read before the lock, and another fire may have passed it.
        self.shards[index]
            .fired_until
            .fetch_max(self.nanos(now), Ordering::Release);
        took
    }

    /// Whether any timer is pending (a hint for the busy workers' polls).
    pub(crate) fn is_empty(&self) -> bool {
        (0..self.shards.len()).all(|index| self.deadlines.earliest(index) == NONE)
    }

    /// Acquisitions of a shard's lock by another thread than the shard's
    /// (a statistic, for the tests: zero for timers that stay on one worker).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn foreign_locks(&self) -> u64 {
        self.foreign.load(Ordering::Relaxed)
    }

    /// The driver is gone: move every waker into `wakers` and refuse new
    /// timers.
    pub(crate) fn shut_down(&self, wakers: &mut Vec<Waker>) {
        for (index, locked) in self.shards.iter().enumerate() {
            let mut shard = locked.shard.lock();
            shard.shut_down = true;
            let entries = std::mem::take(&mut shard.entries);
            let _ = self.publish(index, &shard);
            locked.fired_until.store(NONE, Ordering::Release);
            drop(shard);
            wakers.extend(entries.into_values());
        }
    }
}
