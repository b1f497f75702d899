//! `CoreLatch`: the four-state latch of Rayon RFC 0005, Appendix A.
//!
//! A latch has one owner thread, the only one that probes it and sleeps on
//! it; any thread may set it. The owner sleeps on its *own* lock and condvar
//! (a [`SleepState`]), which is not part of the latch, so one thread can wait
//! on different latches over its life (a worker's termination latch, the latch
//! of a `block_on` it runs) with one condvar.
//!
//! ```text
//!            get_sleepy            fall_asleep (under the sleep lock)
//!   UNSET ---------------> SLEEPY ---------------> SLEEPING
//!     ^                      |                        |
//!     |     wake_up          |                        |
//!     +----------------------+------------------------+   (the sleep was abandoned)
//!
//!   set(), from any state:  -> SET    (returns true iff it was SLEEPING:
//!                                      the setter must then wake the owner)
//!   reset(), by the owner:  SET -> UNSET (a `block_on` latch is reused)
//! ```
//!
//! # Invariants
//!
//! * Only the owner moves the latch out of UNSET, SLEEPY or SLEEPING other
//!   than to SET; only `set` moves it to SET; only the owner's `reset` leaves
//!   SET.
//! * The owner moves SLEEPY -> SLEEPING while holding its sleep lock, and
//!   keeps holding it until it is blocked on its condvar. A setter that saw
//!   SLEEPING takes that lock before it notifies, so it cannot notify before
//!   the owner is blocked: no wakeup is lost.
//! * A failed `get_sleepy` or `fall_asleep` means the latch is SET: the owner
//!   must not sleep.
//!
//! # Orderings
//!
//! All transitions are read-modify-writes of the one `state` word, so they
//! are totally ordered by that word's modification order whatever their
//! ordering: the owner's SLEEPY -> SLEEPING either precedes the setter's swap
//! (the swap sees SLEEPING and wakes the owner) or follows it (the exchange
//! fails because the word is SET). That coherence is all the sleep needs.
//! The orderings only add data visibility: `set` is `AcqRel` so that what the
//! setter wrote before (the message that woke a future) is visible to the
//! owner after its `Acquire` probe or reset. The owner's transitions are
//! `SeqCst`, as in Rayon, so they also take part in the single order of the
//! sleep protocol's fences.

use super::state::SleepState;
use crate::sync::{AtomicUsize, Ordering};

/// Nobody waits and nothing was signalled.
const UNSET: usize = 0;
/// The owner is about to sleep: it will check once more before it does.
const SLEEPY: usize = 1;
/// The owner is blocked (or about to block, holding its sleep lock).
const SLEEPING: usize = 2;
/// The event happened: the owner must not sleep, or must be woken.
const SET: usize = 3;

/// A latch with one owner thread and four states.
#[derive(Debug)]
pub(crate) struct CoreLatch {
    state: AtomicUsize,
}

impl CoreLatch {
    pub(crate) fn new() -> CoreLatch {
        CoreLatch {
            state: AtomicUsize::new(UNSET),
        }
    }

    /// Owner: announce the intent to sleep. False if the latch is SET.
    pub(crate) fn get_sleepy(&self) -> bool {
        self.state
            .compare_exchange(UNSET, SLEEPY, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }

    /// Owner, holding its sleep lock: commit to sleeping. False if the latch
    /// was SET since `get_sleepy`.
    pub(crate) fn fall_asleep(&self) -> bool {
        self.state
            .compare_exchange(SLEEPY, SLEEPING, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }

    /// Owner: the sleep is over (or abandoned). Back to UNSET unless the
    /// latch was SET meanwhile, which stays visible to the next probe.
    pub(crate) fn wake_up(&self) {
        if !self.probe() {
            let _ =
                self.state
                    .compare_exchange(SLEEPING, UNSET, Ordering::SeqCst, Ordering::Relaxed);
        }
    }

    /// Any thread: set the latch. Returns true iff the owner was SLEEPING, in
    /// which case the caller must wake the owner through its sleep state.
    pub(crate) fn set(&self) -> bool {
        self.state.swap(SET, Ordering::AcqRel) == SLEEPING
    }

    /// Owner: is the latch set? `Acquire` pairs with the `Release` half of
    /// `set`'s swap.
    pub(crate) fn probe(&self) -> bool {
        self.state.load(Ordering::Acquire) == SET
    }

    /// Owner: clear a SET latch so it can signal again (a `block_on` latch is
    /// reset before each poll of its future). `Acquire` pairs with `set`, so
    /// what the setter wrote is visible to the poll that follows.
    pub(crate) fn reset(&self) {
        let old = self.state.swap(UNSET, Ordering::Acquire);
        debug_assert!(
            old == UNSET || old == SET,
            "reset of a latch whose owner is asleep"
        );
    }
}

/// A latch with its own sleep state, for a thread that is not a worker (a
/// plain thread in `block_on`). It sleeps without touching any pool's
/// counters, and only its own latch wakes it.
#[derive(Debug)]
pub(crate) struct ThreadLatch {
    pub(crate) latch: CoreLatch,
    sleep: SleepState,
}

impl ThreadLatch {
    pub(crate) fn new() -> ThreadLatch {
        ThreadLatch {
            latch: CoreLatch::new(),
            sleep: SleepState::new(),
        }
    }

    /// Any thread: set the latch and wake the owner if it sleeps.
    pub(crate) fn set(&self) {
        self.set_then(|| ());
    }

    /// `set`, running `on_sleeping` before it wakes an owner that sleeps
    /// (a `Pool::block_on` thread is added back to its pool's activity by
    /// its waker, `activity.rs`).
    pub(crate) fn set_then(&self, on_sleeping: impl FnOnce()) {
        if self.latch.set() {
            on_sleeping();
            self.sleep.wake();
        }
    }

    /// Owner: block until the latch is set. Returns at once if it already is.
    #[cold]
    pub(crate) fn wait(&self) {
        self.wait_then(|| ());
    }

    /// `wait`, running `on_sleep` each time the owner commits to sleeping,
    /// under its sleep lock, before it blocks: a setter that sees it
    /// asleep comes after (it takes that lock to wake it).
    #[cold]
    pub(crate) fn wait_then(&self, mut on_sleep: impl FnMut()) {
        while !self.latch.probe() {
            if !self.latch.get_sleepy() {
                continue;
            }
            let guard = self.sleep.lock();
            if self.latch.fall_asleep() {
                on_sleep();
                self.sleep.block(guard);
            }
            self.latch.wake_up();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn sleep_steps_then_wake_up_returns_to_unset() {
        let l = CoreLatch::new();
        assert!(!l.probe());
        assert!(l.get_sleepy());
        assert!(!l.get_sleepy(), "SLEEPY is not UNSET");
        assert!(l.fall_asleep());
        assert!(!l.fall_asleep(), "SLEEPING is not SLEEPY");
        l.wake_up();
        assert!(!l.probe());
        assert!(l.get_sleepy(), "wake_up must return to UNSET");
    }

    #[test]
    fn set_reports_a_sleeping_owner_only() {
        let l = CoreLatch::new();
        assert!(!l.set(), "UNSET: nobody to wake");
        assert!(l.probe());
        assert!(!l.set(), "SET: already set");

        let l = CoreLatch::new();
        assert!(l.get_sleepy());
        assert!(!l.set(), "SLEEPY: the owner will see SET");
        assert!(!l.fall_asleep(), "a set latch must abort the sleep");
        assert!(l.probe());

        let l = CoreLatch::new();
        assert!(l.get_sleepy());
        assert!(l.fall_asleep());
        assert!(l.set(), "SLEEPING: the setter must wake the owner");
        l.wake_up();
        assert!(l.probe(), "wake_up must not clear a SET latch");
    }

    #[test]
    fn reset_clears_a_set_latch() {
        let l = CoreLatch::new();
        l.set();
        l.reset();
        assert!(!l.probe());
        assert!(l.get_sleepy());
    }

    #[test]
    fn thread_latch_wakes_its_sleeping_owner() {
        let t = Arc::new(ThreadLatch::new());
        let setter = {
            let t = t.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                t.set();
            })
        };
        t.wait();
        assert!(t.latch.probe());
        setter.join().unwrap();
    }
}
