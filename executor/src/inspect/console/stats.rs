//! `TaskStats`: what tokio-console shows of one task, recorded while the
//! task lives in a pool that serves the console; `Stamp` and `now`, the
//! clock it is recorded with; `Spread`, its poll and scheduled times by bucket.
//!
//! # Invariants
//!
//! * The poll fields (`polls`, `busy`, `first_poll`, `last_poll_*`,
//!   `scheduled`, the spreads) are written only by the thread polling the
//!   task, which async-task serializes, so a relaxed load and store
//!   suffice; the wake and waker counters are bumped from any thread
//!   (`fetch_add`). The server reads every field with relaxed loads: a
//!   snapshot assembled from separate reads, each of which was true.
//! * `changed` is set after every write and cleared by the one publisher
//!   (`TaskTable::publish`) before it reads: a write it misses sets it
//!   again, so no change goes unpublished.
//! * A task polled once keeps its one poll time and scheduled time in the
//!   sums (`busy`, `scheduled`); the spreads, a few hundred bytes, are made
//!   at its second poll (holding the first poll's figures), so a short
//!   task costs the console one small allocation.

use crate::inspect::ticks::TickRate;
use crate::task::header::TaskKind;
use crate::task::id::TaskId;
use parking_lot::Mutex;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::time::{Duration, SystemTime};

/// A moment, in nanoseconds since the process's console clock started
/// (`now`), plus one: 0 means "never".
pub(crate) type Stamp = u64;

/// The console clock: the CPU's tick counter (`inspect/ticks.rs`: `rdtsc`
/// on x86_64, 10-13 ns a reading against 25-35 ns for `Instant::now`), counted from
/// one reading anchored to the wall clock, for the console's timestamps.
/// One for the process, so a counting waker, which knows only its task's
/// stats, stamps its wakes; the updates' own `now` is read on it too, so
/// "last woken 3 ms ago" compares two readings of one clock.
struct ConsoleClock {
    wall: SystemTime,
    ticks: u64,
    clock: TickRate,
}

fn clock() -> &'static ConsoleClock {
    static CLOCK: OnceLock<ConsoleClock> = OnceLock::new();
    CLOCK.get_or_init(|| {
        let clock = TickRate::calibrate();
        ConsoleClock {
            wall: SystemTime::now(),
            ticks: clock.now(),
            clock,
        }
    })
}

/// Now, as a stamp (never 0).
#[inline]
pub(crate) fn now() -> Stamp {
    let c = clock();
    c.clock.ns_since(c.ticks) + 1
}

/// The wall-clock time of `stamp` (not 0).
pub(crate) fn wall(stamp: Stamp) -> SystemTime {
    clock().wall + Duration::from_nanos(stamp - 1)
}

/// Sub-buckets per doubling of a `Spread`: bucket bounds 19% apart.
const SUB: u32 = 4;
/// The first bucket holds up to 2^MIN_EXP ns (256 ns); the doublings go to
/// 2^MAX_EXP ns (about 69 s); the last bucket holds the rest.
const MIN_EXP: u32 = 8;
const MAX_EXP: u32 = 36;
/// The number of buckets.
pub(crate) const SPREAD_BUCKETS: usize = 2 + ((MAX_EXP - MIN_EXP) * SUB) as usize;

/// Durations counted in log-scale buckets, `SUB` per doubling, from 256 ns
/// to about 69 s.
pub(crate) struct Spread {
    counts: [AtomicU32; SPREAD_BUCKETS],
}

impl Spread {
    fn new() -> Spread {
        Spread {
            counts: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }

    /// The bucket of `nanos`.
    fn bucket(nanos: u64) -> usize {
        if nanos <= 1 << MIN_EXP {
            return 0;
        }
        let exp = 63 - (nanos - 1).leading_zeros(); // 2^exp < nanos <= 2^(exp+1)
        if exp >= MAX_EXP {
            return SPREAD_BUCKETS - 1;
        }
        // The two bits below the top one pick the quarter of the doubling.
        let sub = ((nanos - 1) >> (exp - 2)) as u32 & (SUB - 1);
        1 + ((exp - MIN_EXP) * SUB + sub) as usize
    }

    /// The largest duration bucket `index` holds (the last: `u64::MAX`).
    pub(crate) fn upper(index: usize) -> u64 {
        if index == 0 {
            return 1 << MIN_EXP;
        }
        if index == SPREAD_BUCKETS - 1 {
            return u64::MAX;
        }
        let i = index as u32 - 1;
        let exp = MIN_EXP + i / SUB;
        let sub = u64::from(i % SUB);
        (1u64 << exp) + ((sub + 1) << (exp - 2))
    }

    /// One duration more (only the task's polling thread writes).
    fn add(&self, nanos: u64) {
        let count = &self.counts[Spread::bucket(nanos)];
        count.store(count.load(Relaxed).saturating_add(1), Relaxed);
    }

    /// The counts, bucket by bucket.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.load(Relaxed)))
            .filter(|&(_, c)| c > 0)
    }
}

/// A task's poll times and scheduled times, from its second poll on.
pub(crate) struct Spreads {
    pub(crate) polls: Spread,
    pub(crate) scheduled: Spread,
}

/// One task, as the console sees it.
pub(crate) struct TaskStats {
    pub(crate) id: TaskId,
    pub(crate) spawned_at: &'static Location<'static>,
    pub(crate) kind: TaskKind,
    /// Its name (`task::Builder::name`), the console's `task.name` field.
    pub(crate) name: Option<Arc<str>>,
    pub(crate) created: Stamp,
    dropped: AtomicU64,
    polls: AtomicU64,
    /// Nanoseconds in polls, summed.
    busy: AtomicU64,
    /// Nanoseconds between a wake (or the spawn) and the poll it led to,
    /// summed.
    scheduled: AtomicU64,
    first_poll: AtomicU64,
    last_poll_started: AtomicU64,
    last_poll_ended: AtomicU64,
    wakes: AtomicU64,
    self_wakes: AtomicU64,
    last_wake: AtomicU64,
    waker_clones: AtomicU64,
    waker_drops: AtomicU64,
    spreads: OnceLock<Box<Spreads>>,
    /// Recorded since the last publish.
    changed: AtomicBool,
    /// The task's own waker, which the console's counting waker wakes
    /// (`counting_waker.rs`); taken when the task's future drops, so that a waker
    /// kept somewhere does not keep the finished task's memory.
    pub(super) inner: Mutex<Option<Waker>>,
}

/// A task's figures at one moment, for the server.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Snapshot {
    pub(crate) dropped: Option<Stamp>,
    pub(crate) polls: u64,
    pub(crate) busy: Duration,
    pub(crate) scheduled: Duration,
    pub(crate) first_poll: Option<Stamp>,
    pub(crate) last_poll_started: Option<Stamp>,
    pub(crate) last_poll_ended: Option<Stamp>,
    pub(crate) wakes: u64,
    pub(crate) self_wakes: u64,
    pub(crate) last_wake: Option<Stamp>,
    pub(crate) waker_clones: u64,
    pub(crate) waker_drops: u64,
}

/// A stamp field's value, `None` for 0.
fn stamp(field: &AtomicU64) -> Option<Stamp> {
    Some(field.load(Relaxed)).filter(|&s| s != 0)
}

impl TaskStats {
    pub(crate) fn new(
        id: TaskId,
        spawned_at: &'static Location<'static>,
        kind: TaskKind,
        name: Option<Arc<str>>,
        created: Stamp,
        inner: Waker,
    ) -> TaskStats {
        TaskStats {
            id,
            spawned_at,
            kind,
            name,
            created,
            dropped: AtomicU64::new(0),
            polls: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            scheduled: AtomicU64::new(0),
            first_poll: AtomicU64::new(0),
            last_poll_started: AtomicU64::new(0),
            last_poll_ended: AtomicU64::new(0),
            wakes: AtomicU64::new(0),
            self_wakes: AtomicU64::new(0),
            last_wake: AtomicU64::new(0),
            waker_clones: AtomicU64::new(0),
            waker_drops: AtomicU64::new(0),
            spreads: OnceLock::new(),
            changed: AtomicBool::new(true),
            inner: Mutex::new(Some(inner)),
        }
    }

    /// The polling thread: a poll begins at `now`. Its scheduled time runs
    /// from the later of the last wake and the last poll's end (a task
    /// woken while it ran was scheduled from the end of that poll), or
    /// from the spawn for the first poll; it is none if no wake came since
    /// the previous poll began.
    pub(crate) fn poll_started(&self, now: Stamp) {
        if self.polls.load(Relaxed) == 1 && self.spreads.get().is_none() {
            // The second poll: the first one's figures are the sums so far.
            let spreads = Spreads {
                polls: Spread::new(),
                scheduled: Spread::new(),
            };
            spreads.polls.add(self.busy.load(Relaxed));
            spreads.scheduled.add(self.scheduled.load(Relaxed));
            let _ = self.spreads.set(Box::new(spreads));
        }
        let started = self.last_poll_started.load(Relaxed);
        let woke = self.last_wake.load(Relaxed);
        let from = if started == 0 {
            self.first_poll.store(now, Relaxed);
            Some(self.created.max(woke))
        } else if woke > started {
            Some(woke.max(self.last_poll_ended.load(Relaxed)))
        } else {
            None
        };
        if let Some(from) = from {
            let waited = now.saturating_sub(from);
            add(&self.scheduled, waited);
            if let Some(spreads) = self.spreads.get() {
                spreads.scheduled.add(waited);
            }
        }
        self.last_poll_started.store(now, Relaxed);
        self.changed.store(true, Relaxed);
    }

    /// The polling thread: the poll that began at `started` ended at `now`.
    pub(crate) fn poll_ended(&self, started: Stamp, now: Stamp) {
        let took = now.saturating_sub(started);
        let polls = self.polls.load(Relaxed) + 1;
        self.polls.store(polls, Relaxed);
        if let Some(spreads) = self.spreads.get() {
            spreads.polls.add(took);
        }
        add(&self.busy, took);
        self.last_poll_ended.store(now, Relaxed);
        self.changed.store(true, Relaxed);
    }

    /// Any thread: the task was woken at `now`; `by_itself` if from within
    /// its own poll.
    pub(crate) fn woken(&self, now: Stamp, by_itself: bool) {
        self.wakes.fetch_add(1, Relaxed);
        if by_itself {
            self.self_wakes.fetch_add(1, Relaxed);
        }
        self.last_wake.fetch_max(now, Relaxed);
        self.changed.store(true, Relaxed);
    }

    pub(super) fn waker_cloned(&self) {
        self.waker_clones.fetch_add(1, Relaxed);
        self.changed.store(true, Relaxed);
    }

    pub(super) fn waker_dropped(&self) {
        self.waker_drops.fetch_add(1, Relaxed);
        self.changed.store(true, Relaxed);
    }

    /// The task's future was dropped at `now` (by the thread that polls
    /// it, or cancels it): let its own waker go, then settle a wake that no
    /// poll followed. Taken under the lock the counting waker records its
    /// wakes under, so no wake is recorded after this (`counting_waker.rs`).
    pub(crate) fn finished(&self, now: Stamp) {
        let inner = self.inner.lock().take();
        drop(inner);
        let started = self.last_poll_started.load(Relaxed);
        let woke = self.last_wake.load(Relaxed);
        if woke > started {
            // Woken during its last poll (it completed anyway) or after it
            // (then dropped unpolled: scheduled until the drop).
            // tokio-console counts a wake later than the last poll's start
            // as a wait still going on, for ever on a finished task; the
            // wait ended here, so the wake is set back to that start.
            if woke > self.last_poll_ended.load(Relaxed) {
                add(&self.scheduled, now.saturating_sub(woke));
            }
            self.last_wake.store(started, Relaxed);
        }
        self.dropped.store(now, Relaxed);
        self.changed.store(true, Relaxed);
    }

    /// When the task's future was dropped.
    pub(crate) fn dropped(&self) -> Option<Stamp> {
        stamp(&self.dropped)
    }

    /// The publisher: was anything recorded since the previous call?
    pub(crate) fn take_changed(&self) -> bool {
        self.changed.swap(false, Relaxed)
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot {
            dropped: self.dropped(),
            polls: self.polls.load(Relaxed),
            busy: Duration::from_nanos(self.busy.load(Relaxed)),
            scheduled: Duration::from_nanos(self.scheduled.load(Relaxed)),
            first_poll: stamp(&self.first_poll),
            last_poll_started: stamp(&self.last_poll_started),
            last_poll_ended: stamp(&self.last_poll_ended),
            wakes: self.wakes.load(Relaxed),
            self_wakes: self.self_wakes.load(Relaxed),
            last_wake: stamp(&self.last_wake),
            waker_clones: self.waker_clones.load(Relaxed),
            waker_drops: self.waker_drops.load(Relaxed),
        }
    }

    /// The poll times and scheduled times, bucket by bucket (for a task
    /// polled once, its one of each).
    pub(crate) fn spreads(&self, mut poll: impl FnMut(u64, u32), mut sched: impl FnMut(u64, u32)) {
        match self.spreads.get() {
            Some(s) => {
                s.polls
                    .counts()
                    .for_each(|(i, c)| poll(Spread::upper(i), c));
                s.scheduled
                    .counts()
                    .for_each(|(i, c)| sched(Spread::upper(i), c));
            }
            None if self.polls.load(Relaxed) == 1 => {
                poll(self.busy.load(Relaxed), 1);
                sched(self.scheduled.load(Relaxed), 1);
            }
            None => {}
        }
    }
}

/// Add to a field only its one writer changes.
fn add(field: &AtomicU64, n: u64) {
    field.store(field.load(Relaxed).saturating_add(n), Relaxed);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_duration_lands_in_the_bucket_whose_bounds_hold_it() {
        let mut last = 0;
        for i in 0..SPREAD_BUCKETS {
            assert!(Spread::upper(i) > last, "bucket {i} is not above {last}");
            last = Spread::upper(i);
        }
        for nanos in [
            1,
            255,
            256,
            257,
            300,
            1000,
            4096,
            4097,
            123_456,
            1 << 30,
            1 << 36,
        ] {
            let b = Spread::bucket(nanos);
            assert!(nanos <= Spread::upper(b), "{nanos} ns above bucket {b}");
            assert!(
                b == 0 || nanos > Spread::upper(b - 1),
                "{nanos} ns below bucket {b}"
            );
        }
        assert_eq!(Spread::bucket(u64::MAX), SPREAD_BUCKETS - 1);
    }
}
