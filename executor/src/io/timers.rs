//! `Timers`: the timer store of one pool's driver.
//!
//! An ordered map from (deadline, sequence number) to the waker of the task
//! waiting for it: insert, cancel and update are O(log n), the next deadline
//! is the first key, and firing pops from the front. A hierarchical wheel
//! (tokio's) makes insert O(1) but rounds deadlines to its slots and costs a
//! fixed wheel per pool. Measured with `cargo run --release -p benches --bin
//! timers` (100 000 concurrent timers of 1..=100 ms on 2 workers, beside
//! tokio): 160 ms from first spawn to last wake against tokio's 195 ms, and
//! lateness p50 / p99 of 0.3 / 1.6 ms against 2.5 / 21 ms
//! (docs/BENCHMARKS-HISTORY.md). One lock per pool is the cost to watch when many
//! workers insert timers at once.
//!
//! # Invariants
//!
//! * `parked` says, under the store's lock, until when the driver's holder
//!   is blocked in the OS (`park_until` sets it, `unparked` clears it). An
//!   insert earlier than that, checked under the same lock, makes the
//!   inserter unpark the driver: either the holder computed its timeout after
//!   the insert (and saw it) or the inserter sees the later `parked` value.
//! * After `shut_down` the store is empty and stays empty: an insert is
//!   refused and the timer completes at once.
//! * Deadlines are in the pool's time (`pool_clock.rs`); a paused clock jumps
//!   (`jump_if_quiet`) only under the store's lock, to the first deadline.

use super::pool_clock::PoolClock;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Waker;
use std::time::Instant;

/// One registered timer: its deadline and a sequence number that keeps equal
/// deadlines apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TimerKey {
    deadline: Instant,
    seq: u64,
}

/// Until when the driver's holder is blocked in the OS.
#[derive(Clone, Copy, Debug)]
enum Parked {
    No,
    Until(Instant),
    Forever,
}

#[derive(Debug)]
struct Inner {
    entries: BTreeMap<TimerKey, Waker>,
    next_seq: u64,
    parked: Parked,
    shut_down: bool,
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
    inner: Mutex<Inner>,
    /// The number of pending timers, written under the lock after every
    /// change: a hint, read without the lock, for the busy workers' polls.
    pending: AtomicUsize,
}

impl Timers {
    pub(crate) fn new() -> Timers {
        Timers {
            inner: Mutex::new(Inner {
                entries: BTreeMap::new(),
                next_seq: 0,
                parked: Parked::No,
                shut_down: false,
            }),
            pending: AtomicUsize::new(0),
        }
    }

    pub(crate) fn insert(&self, deadline: Instant, waker: Waker) -> Inserted {
        let mut inner = self.inner.lock();
        if inner.shut_down {
            return Inserted::ShutDown;
        }
        let key = TimerKey {
            deadline,
            seq: inner.next_seq,
        };
        inner.next_seq += 1;
        inner.entries.insert(key, waker);
        self.count(&inner);
        let unpark = match inner.parked {
            Parked::No => false,
            Parked::Until(until) => deadline < until,
            Parked::Forever => true,
        };
        Inserted::Yes { key, unpark }
    }

    /// Replace the waker of `key`; false if it is gone (fired, or shut down).
    pub(crate) fn update(&self, key: TimerKey, waker: &Waker) -> bool {
        match self.inner.lock().entries.get_mut(&key) {
            Some(w) => {
                w.clone_from(waker);
                true
            }
            None => false,
        }
    }

    /// Cancel `key` (nothing if it already fired). The waker is dropped
    /// after the lock is released.
    pub(crate) fn remove(&self, key: TimerKey) {
        let mut inner = self.inner.lock();
        let removed = inner.entries.remove(&key);
        self.count(&inner);
        drop(inner);
        drop(removed);
    }

    /// The driver's holder is about to block: until when it may (`None`:
    /// until something else wakes it), the earliest deadline. Records it
    /// for `insert`.
    pub(crate) fn park_until(&self) -> Option<Instant> {
        let mut inner = self.inner.lock();
        match inner.entries.first_key_value().map(|(key, _)| key.deadline) {
            Some(deadline) => {
                inner.parked = Parked::Until(deadline);
                Some(deadline)
            }
            None => {
                inner.parked = Parked::Forever;
                None
            }
        }
    }

    /// The driver's holder, its clock paused, about to block: if the pool
    /// `is_quiet` (read under the store's lock, after the holder's poll
    /// without blocking found nothing), jump `clock` to the earliest
    /// deadline and move the wakers of the timers due then into `wakers`;
    /// true if it did. Else the holder blocks until an unpark, and any
    /// insert unparks it. Under the lock, the jump never passes a deadline
    /// inserted before it, and an insert after it reads the new time.
    pub(crate) fn jump_if_quiet(
        &self,
        clock: &PoolClock,
        is_quiet: &dyn Fn() -> bool,
        wakers: &mut Vec<Waker>,
    ) -> bool {
        let mut inner = self.inner.lock();
        let first = inner.entries.first_key_value().map(|(key, _)| key.deadline);
        match first.filter(|_| is_quiet()) {
            Some(deadline) => {
                clock.jump_to(deadline);
                inner.parked = Parked::No;
                self.fire_locked(&mut inner, clock.now(), wakers);
                true
            }
            None => {
                inner.parked = Parked::Forever;
                false
            }
        }
    }

    /// The driver's holder is no longer blocked.
    pub(crate) fn unparked(&self) {
        self.inner.lock().parked = Parked::No;
    }

    /// Move the wakers of every timer due by `now` into `wakers`.
    pub(crate) fn fire(&self, now: Instant, wakers: &mut Vec<Waker>) {
        self.fire_locked(&mut self.inner.lock(), now, wakers);
    }

    /// `fire`, with the store's lock held.
    fn fire_locked(&self, inner: &mut Inner, now: Instant, wakers: &mut Vec<Waker>) {
        while let Some(entry) = inner.entries.first_entry() {
            if entry.key().deadline > now {
                break;
            }
            wakers.push(entry.remove());
        }
        self.count(inner);
    }

    fn count(&self, inner: &Inner) {
        // Relaxed: a hint; a busy worker that misses a new timer polls again
        // a few dozen tasks later, and a parking holder reads the map itself.
        self.pending.store(inner.entries.len(), Ordering::Relaxed);
    }

    /// Whether any timer is pending (a hint for the busy workers' polls).
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.load(Ordering::Relaxed) == 0
    }

    /// The driver is gone: move every waker into `wakers` and refuse new
    /// timers.
    pub(crate) fn shut_down(&self, wakers: &mut Vec<Waker>) {
        let mut inner = self.inner.lock();
        inner.shut_down = true;
        let entries = std::mem::take(&mut inner.entries);
        self.count(&inner);
        wakers.extend(entries.into_values());
    }
}
