//! `Activity`: how many things of one pool could still make work, so that a
//! paused clock knows when it may jump (`crate::io::pool_clock::PoolClock`, API "Time you
//! can stop").
//!
//! One counter sums everything that holds the clock: each worker that is
//! not blocked in its sleep, each `Pool::block_on` thread that is polling its
//! future or was woken and has not polled yet, and each `spawn_blocking`
//! closure queued or running. The pool is *quiet* when the sum is zero.
//!
//! # Why one counter, and why a quiet read is true
//!
//! Work inside a pool only ever comes from something active: a task posts
//! from an awake worker, a blocking closure completes on its thread, a
//! `block_on` future spawns while it is polled. Every hand-over of activity
//! adds the receiver before the giver leaves:
//!
//! * a waker that wakes a blocked worker (or a sleeping `block_on` thread)
//!   adds it (`begin`) in its own thread, under the sleeper's lock, while
//!   the waker itself still counts (it is awake, or a blocking closure not
//!   yet ended, or the driver's sleeper, which adds itself back before it
//!   wakes what the driver brought);
//! * a worker leaves (`end`) only under its sleep lock, after its final
//!   check found no injected job and nothing in its inbox, right before it
//!   blocks; a job an internal poster injected before going to sleep is
//!   seen by that check (the fences of `mod.rs`), and a poster that instead
//!   saw the worker asleep wakes it, which adds it back;
//! * a blocking closure leaves after it ran, that is after its result woke
//!   whoever waits for it.
//!
//! So within a pool the sum never passes through zero while work is in
//! flight, and a `SeqCst` read of zero is a moment when nothing in the pool
//! runs or is about to. Only a thread outside the pool (another runtime, a
//! plain `std` thread sending on a channel) can start work later, and that
//! is concurrent with the pool whatever the clock does.
//!
//! # Why no jump is missed
//!
//! The driver's sleeper decides to jump after it read the sum (`is_quiet`);
//! if the sum was not zero it blocks in the driver without a timeout. The
//! `end` that brings the sum to zero tells the driver (`Park::pool_quiet`),
//! which unparks its sleeper when the clock is paused: by the single order
//! of `SeqCst` operations, either the sleeper's read saw the zero, or the
//! `end` came after it and its unpark (never lost, `park.rs`) makes the
//! sleeper decide again. `models/paused_jump.rs` checks both halves.
//!
//! A pool that is never paused pays one uncontended read-modify-write per
//! sleep, per wake of a sleeper, per blocking closure and per sleep of a
//! `block_on` thread, each already a lock and a condvar or a thread
//! hand-over.

use crate::sync::{AtomicUsize, Ordering};
use crate::teeth::{pulled, Tooth};

#[derive(Debug)]
pub(crate) struct Activity {
    /// Workers not blocked, `block_on` threads not asleep, blocking
    /// closures not ended.
    count: AtomicUsize,
}

impl Activity {
    /// A pool of `workers` workers, all awake as they start.
    pub(crate) fn new(workers: usize) -> Activity {
        Activity {
            count: AtomicUsize::new(workers),
        }
    }

    /// Something of the pool became active (or was woken to).
    #[inline]
    pub(crate) fn begin(&self) {
        // SeqCst: takes part in the single order `is_quiet` is read in.
        self.count.fetch_add(1, Ordering::SeqCst);
    }

    /// Something of the pool stops being active. True if the pool is quiet
    /// now: the caller tells the driver (`Park::pool_quiet`).
    #[inline]
    #[must_use]
    pub(crate) fn end(&self) -> bool {
        // Test-only: drop this end's report of quiet, so a paused driver's
        // sleeper that decided not to jump is never told to decide again
        // (`scripts/loom` requires loom to find it asleep for ever).
        if pulled(Tooth::SkipQuietUnpark) {
            self.count.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        let before = self.count.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(before > 0, "more ends than begins of a pool's activity");
        before == 1
    }

    /// Is nothing of the pool active? See the module docs for why a `true`
    /// is a moment of quiet.
    #[inline]
    pub(crate) fn is_quiet(&self) -> bool {
        self.count.load(Ordering::SeqCst) == 0
    }
}
