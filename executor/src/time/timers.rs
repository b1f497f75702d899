//! `Timers`: the timer store of one pool's driver, one shard per worker
//! and one for the threads that are not workers.
//!
//! A shard, under a lock of its own, keeps its timers in two tiers:
//!
//! * *near*: the deadlines less than `HORIZON` ahead when registered, an
//!   ordered map from (deadline, sequence number) to the waker of the task
//!   waiting for it: insert, cancel and update are O(log n), the next
//!   deadline is the first key, and firing pops from the front;
//! * *far*: the deadlines further ahead, unordered in a slab (`FarTimers`),
//!   with a floor at or before every one of them: insert and cancel are
//!   O(1). When a fire reaches the floor, every far timer due within
//!   `HORIZON` moves near, and the floor becomes the earliest of the rest,
//!   more than `HORIZON` ahead: a far timer is looked at by at most one
//!   such pass per `HORIZON`, and moved once.
//!
//! Most far timers never fire: a server's header-read timeout, a
//! `timeout` around a call that answers in microseconds, an idle timer
//! reset by each request. They are registered and cancelled in O(1),
//! without ordering (`cargo run --release -p benches --bin timeouts`).
//! A hierarchical wheel (tokio's) makes every insert O(1) but rounds
//! deadlines to its slots and costs a fixed wheel per pool; the near
//! tier keeps exact deadlines in order. Measured with `cargo run --release
//! -p benches --bin timers` (100 000 concurrent timers of 1..=100 ms on 2
//! workers, beside tokio; docs/BENCHMARKS.md).
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
//!   out of the shard (fired, or cancelled), so its cancel takes no lock,
//!   and its entry knows it fired without a lock (`Timers::fired`).
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
//! * A far timer's deadline is at or after its shard's far floor, and a
//!   shard's published earliest deadline is the lesser of its near first
//!   and its far floor: never later than its earliest timer, so nobody
//!   who waits for it (the sleeper, an owner's `fire_own`) waits too long.
//!   A fire at `now` first moves near every far timer due by `now +
//!   HORIZON` if the floor is at or before `now`, so no far timer is due
//!   after a fire.

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

/// How far ahead a deadline must be when it is registered to go into its
/// shard's far tier (the module docs).
const HORIZON: Duration = Duration::from_secs(1);

/// `TimerKey::slot` of a timer registered near.
const NEAR: u32 = u32::MAX;

/// One registered timer: its deadline, its shard and a sequence number
/// that keeps equal deadlines apart (and names it in its shard).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerKey {
    deadline: Instant,
    seq: u64,
    shard: u32,
    /// Its slot among the shard's far timers, or `NEAR`. A far timer may
    /// have moved near since: the slot then holds no timer of this `seq`.
    slot: u32,
}

#[derive(Debug, Default)]
struct TimerShard {
    /// The near tier, in deadline order.
    entries: BTreeMap<(Instant, u64), Waker>,
    far: FarTimers,
    next_seq: u64,
    shut_down: bool,
}

impl TimerShard {
    /// The waker slot of the timer `key` names, wherever it is now.
    fn waker_of(&mut self, key: TimerKey) -> Option<&mut Waker> {
        if key.slot != NEAR {
            // Not there if it moved near (or fired).
            if let Some(waker) = self.far.waker_of(key.slot, key.seq) {
                return Some(waker);
            }
        }
        self.entries.get_mut(&(key.deadline, key.seq))
    }

    /// Take the timer `key` names out of the shard: its waker, if it was
    /// there.
    fn take(&mut self, key: TimerKey) -> Option<Waker> {
        if key.slot != NEAR {
            if let Some(waker) = self.far.take(key.slot, key.seq) {
                return Some(waker);
            }
        }
        self.entries.remove(&(key.deadline, key.seq))
    }

    /// The shard's earliest deadline as it publishes it: at or before its
    /// earliest timer's (the far floor may be a cancelled timer's).
    fn earliest(&self) -> Option<Instant> {
        earlier(self.near_first(), self.far.floor)
    }

    /// The shard's earliest live deadline, exactly (a paused clock jumps
    /// to it).
    fn earliest_exact(&mut self) -> Option<Instant> {
        earlier(self.near_first(), self.far.earliest_exact())
    }

    fn near_first(&self) -> Option<Instant> {
        self.entries.first_key_value().map(|(&(d, _), _)| d)
    }
}

/// The earlier of two deadlines, either of which may be absent.
fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One far timer's slot: free when `waker` is `None`.
#[derive(Debug)]
struct FarTimer {
    deadline: Instant,
    seq: u64,
    waker: Option<Waker>,
}

/// A shard's far tier: timers in a slab, unordered, with a floor at or
/// before every deadline.
#[derive(Debug, Default)]
struct FarTimers {
    slots: Vec<FarTimer>,
    /// The free slots, reused last freed first.
    free: Vec<u32>,
    /// Timers in `slots`.
    len: usize,
    /// At or before every far deadline (`None`: no far timer).
    floor: Option<Instant>,
    /// `floor` is a timer's deadline, not a cancelled one's.
    exact: bool,
}

impl FarTimers {
    /// Register a timer: its slot.
    fn insert(&mut self, deadline: Instant, seq: u64, waker: Waker) -> u32 {
        let timer = FarTimer {
            deadline,
            seq,
            waker: Some(waker),
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = timer;
                slot
            }
            None => {
                self.slots.push(timer);
                (self.slots.len() - 1) as u32
            }
        };
        self.len += 1;
        if self.floor.is_none_or(|floor| deadline < floor) {
            self.floor = Some(deadline);
            self.exact = true;
        }
        slot
    }

    /// The waker of the timer `seq` if it is in `slot`.
    fn waker_of(&mut self, slot: u32, seq: u64) -> Option<&mut Waker> {
        let timer = self.slots.get_mut(slot as usize)?;
        (timer.seq == seq).then_some(timer.waker.as_mut())?
    }

    /// Take out the timer `seq` if it is in `slot`.
    fn take(&mut self, slot: u32, seq: u64) -> Option<Waker> {
        let timer = self.slots.get_mut(slot as usize)?;
        if timer.seq != seq {
            return None;
        }
        let waker = timer.waker.take()?;
        let deadline = timer.deadline;
        self.free.push(slot);
        self.len -= 1;
        if self.len == 0 {
            self.clear();
        } else if self.floor == Some(deadline) {
            // Still at or before the others: only no longer exact.
            self.exact = false;
        }
        Some(waker)
    }

    /// No far timer left: an empty slab (its memory kept), no floor.
    fn clear(&mut self) {
        self.slots.clear();
        self.free.clear();
        self.len = 0;
        self.floor = None;
        self.exact = false;
    }

    /// Move every timer due by `until` into `near`; the floor becomes the
    /// earliest of the rest.
    fn promote(&mut self, until: Instant, near: &mut BTreeMap<(Instant, u64), Waker>) {
        let mut floor: Option<Instant> = None;
        for (slot, timer) in self.slots.iter_mut().enumerate() {
            if timer.waker.is_none() {
                continue;
            }
            if timer.deadline <= until {
                if let Some(waker) = timer.waker.take() {
                    near.insert((timer.deadline, timer.seq), waker);
                }
                self.free.push(slot as u32);
                self.len -= 1;
            } else if floor.is_none_or(|f| timer.deadline < f) {
                floor = Some(timer.deadline);
            }
        }
        if self.len == 0 {
            self.clear();
        } else {
            self.floor = floor;
            self.exact = true;
            // The free slots at the end go, so that a burst of far timers
            // since cancelled holds no memory and costs later passes
            // nothing once the slots above the last live one are free.
            // (No compaction below it: a key names its slot.)
            while self.slots.last().is_some_and(|timer| timer.waker.is_none()) {
                self.slots.pop();
            }
            let end = self.slots.len();
            self.free.retain(|&slot| (slot as usize) < end);
        }
    }

    /// The earliest far deadline, exactly (a paused clock jumps to it):
    /// a pass over the slab if a cancel left the floor early.
    fn earliest_exact(&mut self) -> Option<Instant> {
        if !self.exact && self.len > 0 {
            self.floor = self
                .slots
                .iter()
                .filter(|timer| timer.waker.is_some())
                .map(|timer| timer.deadline)
                .min();
            self.exact = true;
        }
        self.floor
    }

    /// Every far timer's waker, for a shut down.
    fn drain(&mut self) -> impl Iterator<Item = Waker> {
        let slots = std::mem::take(&mut self.slots);
        self.clear();
        slots.into_iter().filter_map(|timer| timer.waker)
    }
}

/// A shard and what it publishes without its lock.
#[derive(Debug, Default)]
struct Locked {
    shard: Mutex<TimerShard>,
    /// The time (from `origin`, in nanoseconds) up to which the shard has
    /// been fired: stored under the lock after each fire.
    fired_until: AtomicU64,
    /// Acquisitions of the lock by another thread than the one whose shard
    /// it is (a statistic: `Timers::foreign_locks`). Here, on the line the
    /// lock is on, which that thread takes anyway: one counter for the
    /// store, beside `shards` and `origin`, was written by every foreign
    /// lock and so missed in every thread's next timer.
    foreign: AtomicU64,
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
}

impl Timers {
    /// A store for a pool of `workers` workers.
    pub(crate) fn new(workers: usize, origin: Instant) -> Timers {
        let shards = workers + 1;
        Timers {
            shards: (0..shards).map(|_| CachePadded::default()).collect(),
            deadlines: Deadlines::new(shards, SLACK.as_nanos() as u64),
            origin,
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
            self.shards[shard].foreign.fetch_add(1, Ordering::Relaxed);
        }
        self.shards[shard].shard.lock()
    }

    /// Publish shard `shard`'s earliest deadline; under its lock. True if
    /// that changed it.
    #[inline]
    fn publish(&self, shard: usize, locked: &TimerShard) -> bool {
        let earliest = locked.earliest().map_or(NONE, |d| self.nanos(d));
        self.deadlines.set_earliest(shard, earliest)
    }

    /// Register a timer in the shard `mine` of the calling thread, which
    /// read the pool's time `now` (near or far: `HORIZON` from it).
    pub(crate) fn insert(
        &self,
        mine: usize,
        now: Instant,
        deadline: Instant,
        waker: Waker,
    ) -> Inserted {
        let far = now
            .checked_add(HORIZON)
            .is_some_and(|edge| deadline >= edge);
        let mut shard = self.lock(mine, mine);
        if shard.shut_down {
            return Inserted::ShutDown;
        }
        let seq = shard.next_seq;
        shard.next_seq += 1;
        let slot = if far {
            shard.far.insert(deadline, seq, waker)
        } else {
            shard.entries.insert((deadline, seq), waker);
            NEAR
        };
        let first = self.publish(mine, &shard);
        drop(shard);
        let key = TimerKey {
            deadline,
            seq,
            shard: mine as u32,
            slot,
        };
        let unpark = first && self.deadlines.inserted(mine, self.nanos(deadline));
        Inserted::Yes { key, unpark }
    }

    /// Replace the waker of `key`, from the thread whose shard is `mine`;
    /// false if it is gone (fired, or shut down).
    pub(crate) fn update(&self, mine: usize, key: TimerKey, waker: &Waker) -> bool {
        let shard = key.shard as usize;
        match self.lock(shard, mine).waker_of(key) {
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
        if self.fired(key) {
            return;
        }
        let index = key.shard as usize;
        let mut shard = self.lock(index, mine());
        let removed = shard.take(key);
        if removed.is_some() {
            // A far timer's cancel leaves the floor where it was (unless
            // the tier emptied): this publishes nothing new then.
            let _ = self.publish(index, &shard);
        }
        drop(shard);
        drop(removed);
    }

    /// Has `key`'s timer fired (or the store shut down)? Without a lock:
    /// its deadline is at or before its shard's `fired_until` (the
    /// invariants: a timer registered after a fire passed its deadline is
    /// the one exception, fired by the next fire of its shard).
    #[inline]
    pub(crate) fn fired(&self, key: TimerKey) -> bool {
        // Acquire: pairs with the fire's store; the fire took the timer
        // out before it.
        self.nanos(key.deadline)
            <= self.shards[key.shard as usize]
                .fired_until
                .load(Ordering::Acquire)
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
        let first = shards.iter_mut().filter_map(|s| s.earliest_exact()).min();
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
        // The far timers due within `HORIZON` move near first, so that no
        // far timer is due after this fire (the invariants).
        // The pass also raises the floor past a cancelled timer's deadline,
        // which is published below.
        let passed = shard.far.floor.is_some_and(|floor| floor <= now);
        if passed {
            let until = now.checked_add(HORIZON).unwrap_or(now);
            shard.far.promote(until, &mut shard.entries);
        }
        let mut took = false;
        while let Some(entry) = shard.entries.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((deadline, _), waker) = entry.remove_entry();
            take(deadline, waker);
            took = true;
        }
        if took || passed {
            let _ = self.publish(index, shard);
        }
        // Release: pairs with `remove`'s Acquire. Only grows: `now` is
        // read before the lock, and another fire may have passed it.
        self.shards[index]
            .fired_until
            .fetch_max(self.nanos(now), Ordering::Release);
        took
    }

    /// Slots of shard `shard`'s far tier, free ones included (for the
    /// tests: what a pass over it reads).
    #[cfg(test)]
    pub(crate) fn far_slots(&self, shard: usize) -> usize {
        self.shards[shard].shard.lock().far.slots.len()
    }

    /// Whether any timer is pending (a hint for the busy workers' polls).
    pub(crate) fn is_empty(&self) -> bool {
        (0..self.shards.len()).all(|index| self.deadlines.earliest(index) == NONE)
    }

    /// Acquisitions of a shard's lock by another thread than the shard's
    /// (a statistic, for the tests: zero for timers that stay on one worker).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn foreign_locks(&self) -> u64 {
        self.shards
            .iter()
            .map(|locked| locked.foreign.load(Ordering::Relaxed))
            .sum()
    }

    /// The driver is gone: move every waker into `wakers` and refuse new
    /// timers.
    pub(crate) fn shut_down(&self, wakers: &mut Vec<Waker>) {
        for (index, locked) in self.shards.iter().enumerate() {
            let mut shard = locked.shard.lock();
            shard.shut_down = true;
            let entries = std::mem::take(&mut shard.entries);
            let far: Vec<Waker> = shard.far.drain().collect();
            let _ = self.publish(index, &shard);
            locked.fired_until.store(NONE, Ordering::Release);
            drop(shard);
            wakers.extend(entries.into_values());
            wakers.extend(far);
        }
    }
}
