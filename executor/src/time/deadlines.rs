//! `Deadlines`: what the timer shards (`timers.rs`) publish without their
//! locks, and until when the driver's sleeper is blocked: the hand-over of
//! a worker's timers to that sleeper when the worker goes idle.
//!
//! Each worker keeps the timers its tasks make in a shard of its own, and
//! while it is awake it fires them itself, on its searches
//! (`scheduler/worker/search.rs`): no other thread takes that shard's lock.
//! The driver's sleeper (the idle worker blocked in the driver, see
//! `sleep/README.md`) cannot see a worker's searches, so every shard
//! publishes here its earliest deadline and whether its owner *attends* it
//! (is awake), and the sleeper blocks until the earliest deadline of the
//! shards nobody attends (the threads that are not workers share one,
//! which nobody attends), or, as a backstop for an owner stuck in a long
//! poll, `slack` past the earliest deadline of an attended one.
//!
//! # The hand-over
//!
//! Two writers can find the sleeper blocked too long, and each then
//! unparks it (the driver's eventfd, which stays set until the next poll):
//!
//! * an insert of a deadline earlier than the sleeper's wait
//!   (`inserted`; an attended shard's deadline counts with its slack);
//! * a worker going idle (`leave`) with a deadline earlier than the wait.
//!
//! The sleeper, before it blocks (`park_until`), stores "parked for ever"
//! and then reads every shard; each writer stores its shard's state and
//! then reads the sleeper's; a seq-cst fence between the store and the
//! reads on each side (a Dekker pair, as the sleep protocol's fences are).
//! Of the two fences one comes first in their single total order: if the
//! writer's, the sleeper's reads see its store (the deadline, or the shard
//! unattended) and it blocks no longer than that; if the sleeper's, the
//! writer's read sees "for ever", or the wait the sleeper then records,
//! and it unparks the sleeper if that is too long. Without either order
//! the timer can be lost to the slack: `models/timer_hand_over.rs` checks the
//! hand-over with loom (which models seq-cst fences, not seq-cst loads and
//! stores, hence fences here).
//!
//! What is not handed over needs no unpark: a deadline removed or fired
//! only makes the sleeper wake early and find nothing due (so does a
//! published deadline earlier than the shard's earliest timer, a far
//! tier's floor left by a cancel, `timers.rs`: the hand-over needs only
//! that no shard publishes later than its earliest timer); a worker that
//! attends again (`attend`, Relaxed) at worst lets the sleeper fire its
//! timers, under their shard's lock.
//!
//! Deadlines are nanoseconds of pool time from the store's origin;
//! `NONE` is an empty shard.

use crate::sync::{fence, AtomicBool, AtomicU64, Ordering};
use crate::teeth::{pulled, Tooth};
use crossbeam_utils::CachePadded;

/// An empty shard's earliest deadline.
pub(crate) const NONE: u64 = u64::MAX;

/// `parked`: the sleeper is not blocked (no writer needs to unpark it).
const NOT_PARKED: u64 = 0;
/// `parked`: the sleeper is blocked until an unpark.
const FOREVER: u64 = u64::MAX;
/// `parked`: the sleeper's clock is paused: it waits for the pool to be
/// quiet (`Park::pool_quiet` unparks it then), not for a deadline, so no
/// writer unparks it.
const PAUSED: u64 = u64::MAX - 1;

/// One shard's published state.
#[derive(Debug)]
struct Published {
    /// The shard's earliest deadline (`NONE` if empty), stored under the
    /// shard's lock after every change.
    earliest: AtomicU64,
    /// Its owner is awake and fires the shard itself.
    attended: AtomicBool,
}

#[derive(Debug)]
pub(crate) struct Deadlines {
    shards: Box<[CachePadded<Published>]>,
    /// Until when the sleeper is blocked: `NOT_PARKED`, `FOREVER`, or its
    /// deadline plus one.
    parked: CachePadded<AtomicU64>,
    /// How long past its earliest deadline an attended shard may go
    /// unfired before the sleeper fires it.
    slack: u64,
}

impl Deadlines {
    /// `shards` shards: the workers', attended (a worker starts awake),
    /// then the shared one, which nobody attends; `slack` in nanoseconds.
    pub(crate) fn new(shards: usize, slack: u64) -> Deadlines {
        Deadlines {
            shards: (0..shards)
                .map(|index| {
                    CachePadded::new(Published {
                        earliest: AtomicU64::new(NONE),
                        attended: AtomicBool::new(index + 1 < shards),
                    })
                })
                .collect(),
            parked: CachePadded::new(AtomicU64::new(NOT_PARKED)),
            slack,
        }
    }

    /// Shard `shard`'s earliest deadline (`NONE` if empty): a hint (the
    /// shard's lock has the truth).
    #[inline]
    pub(crate) fn earliest(&self, shard: usize) -> u64 {
        // Relaxed: a hint for the polls; the sleeper's own reads in
        // `park_until` are SeqCst.
        self.shards[shard].earliest.load(Ordering::Relaxed)
    }

    /// Under shard `shard`'s lock: its earliest deadline is now `earliest`.
    /// True if that changed it.
    #[inline]
    pub(crate) fn set_earliest(&self, shard: usize, earliest: u64) -> bool {
        let published = &self.shards[shard].earliest;
        // Relaxed read: our own last store, made under the same lock.
        if published.load(Ordering::Relaxed) == earliest {
            return false;
        }
        // Relaxed: the writer's half of the hand-over is this store, then
        // `inserted`'s fence, then its read (module docs).
        published.store(earliest, Ordering::Relaxed);
        true
    }

    /// After an insert of `deadline` into shard `shard` that made it the
    /// shard's earliest (`set_earliest`): must the inserter unpark the
    /// sleeper? (An insert behind the earliest needs nothing: the sleeper's
    /// wait already ends by the earlier deadline.)
    #[inline]
    pub(crate) fn inserted(&self, shard: usize, deadline: u64) -> bool {
        // Relaxed: the inserter is the owner (whose last store this is) or
        // a thread of the shared shard, which nobody attends.
        let due = if self.shards[shard].attended.load(Ordering::Relaxed) {
            deadline.saturating_add(self.slack)
        } else {
            deadline
        };
        // The writer's fence (module docs): orders `set_earliest`'s store
        // before the read of the sleeper's wait.
        fence(Ordering::SeqCst);
        self.blocked_past(due)
    }

    /// The owner of shard `shard` goes idle: the sleeper fires its timers
    /// from now on. True if the caller must unpark the sleeper.
    pub(crate) fn leave(&self, shard: usize) -> bool {
        let published = &self.shards[shard];
        // The teeth of `models/timer_hand_over.rs`: the sleeper's wait read
        // before the store below.
        let read_first =
            pulled(Tooth::LeaveReadsFirst).then(|| self.parked.load(Ordering::Relaxed));
        // Relaxed, then the writer's fence (module docs): the store is
        // ordered before the read of the sleeper's wait.
        published.attended.store(false, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        // Relaxed: our own shard, whose last store we made.
        let earliest = published.earliest.load(Ordering::Relaxed);
        if let Some(parked) = read_first {
            return earliest != NONE
                && parked != NOT_PARKED
                && parked != PAUSED
                && earliest < parked - 1;
        }
        earliest != NONE && self.blocked_past(earliest)
    }

    /// The owner of shard `shard` is awake again and fires its own timers.
    #[inline]
    pub(crate) fn attend(&self, shard: usize) {
        // Relaxed: a sleeper that reads the old value fires the shard at
        // its deadline instead of leaving it to us, under its lock.
        self.shards[shard].attended.store(true, Ordering::Relaxed);
    }

    /// Is the sleeper blocked past `due`? (The read of the writer's half,
    /// after its fence.)
    #[inline]
    fn blocked_past(&self, due: u64) -> bool {
        let parked = self.parked.load(Ordering::Relaxed);
        parked != NOT_PARKED && parked != PAUSED && due < parked - 1
    }

    /// Is shard `shard` due by `now` for a thread that fires it: at its
    /// earliest deadline for its owner (`own`) or if nobody attends it,
    /// else `slack` later.
    #[inline]
    pub(crate) fn due(&self, shard: usize, now: u64, own: bool) -> bool {
        let published = &self.shards[shard];
        let earliest = published.earliest.load(Ordering::Relaxed);
        if earliest == NONE {
            return false;
        }
        if own || !published.attended.load(Ordering::Relaxed) {
            earliest <= now
        } else {
            earliest.saturating_add(self.slack) <= now
        }
    }

    /// The sleeper is about to block: until when it may (`None`: until an
    /// unpark), recorded for the writers (the sleeper's half of the
    /// hand-over).
    pub(crate) fn park_until(&self) -> Option<u64> {
        // Relaxed, then the sleeper's fence (module docs): the store is
        // ordered before the reads of the shards.
        self.parked.store(FOREVER, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut until = NONE;
        for published in self.shards.iter() {
            let earliest = published.earliest.load(Ordering::Relaxed);
            if earliest == NONE {
                continue;
            }
            let due = if published.attended.load(Ordering::Relaxed) {
                earliest.saturating_add(self.slack)
            } else {
                earliest
            };
            until = until.min(due);
        }
        if until == NONE {
            return None;
        }
        // Below `PAUSED`: a writer that read `FOREVER` unparked us, one
        // that reads this compares. Relaxed: a writer that reads the
        // `FOREVER` before it unparks in vain; the wait only shortens it.
        self.parked
            .store(until.min(PAUSED - 2) + 1, Ordering::Relaxed);
        Some(until)
    }

    /// The sleeper, its clock paused, blocks until an unpark: the pool
    /// going quiet, a resume, a pause or an advance (`io/driver.rs`). No
    /// insert and no worker going idle unparks it: a timer inserted is a
    /// task running, so the pool is not quiet, and it becomes quiet only
    /// after that task and every worker are idle, which unparks it.
    pub(crate) fn park_paused(&self) {
        // Relaxed: no writer acts on it (`blocked_past`); it only stops
        // them unparking in vain, and an older value makes them do so.
        self.parked.store(PAUSED, Ordering::Relaxed);
    }

    /// The sleeper is no longer blocked.
    pub(crate) fn unparked(&self) {
        // Relaxed: a writer that reads a stale wait only unparks in vain,
        // and the sleeper's next park stores and fences again first.
        self.parked.store(NOT_PARKED, Ordering::Relaxed);
    }
}
