//! `PoolClock`: one pool's time, as `pool::time` reads it (API "Time you can
//! stop").
//!
//! A pool's clock runs with `std::time::Instant` until it is first paused
//! or advanced; from then on it is virtual: `base` is the pool's time at
//! the real instant `since`, and it runs at real speed from there, or stands
//! still at `base` while paused. Only three things move a paused clock:
//! `advance` (by exactly what it is told), and the driver's sleeper, which
//! jumps it to the earliest timer's deadline once the pool is quiet
//! (`io/driver.rs`, `Driver::paused_park`; `sleep/activity.rs` says when that
//! is), under the timer store's lock so that it never passes a deadline
//! registered before the jump.
//!
//! # Invariants
//!
//! * The clock never goes back: a pause keeps the time it read, a resume
//!   goes on from it, an advance or a jump only adds.
//! * `shifted` is false exactly while the clock was never paused: then
//!   `now` is `Instant::now()` and reads no lock.
//! * `paused` changes only under the state's lock, with `since`.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug)]
struct State {
    /// The pool's time at `since` (or the time it stands still at).
    base: Instant,
    /// The real instant at which the pool's time was `base`; `None` while
    /// paused.
    since: Option<Instant>,
}

/// One pool's clock.
#[derive(Debug)]
pub(crate) struct PoolClock {
    /// Ever paused: `now` reads `state`.
    shifted: AtomicBool,
    /// Paused now (a copy of `state.since.is_none()`, read without the
    /// lock by the driver and by `Activity`'s quiet report).
    paused: AtomicBool,
    state: Mutex<State>,
}

impl PoolClock {
    /// A running clock, paused from the start if `paused`.
    pub(crate) fn new(paused: bool) -> PoolClock {
        // The records of waits keep pool times from this origin: fixed
        // before the first pool time there is (`task/waits.rs`).
        crate::task::waits::origin();
        let now = Instant::now();
        let clock = PoolClock {
            shifted: AtomicBool::new(false),
            paused: AtomicBool::new(false),
            state: Mutex::new(State {
                base: now,
                since: Some(now),
            }),
        };
        if paused {
            clock.pause();
        }
        clock
    }

    /// The pool's time now.
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        // Acquire: pairs with `pause`'s store; a thread that learnt of the
        // pause (through the task or channel that told it) reads the paused
        // time from then on.
        if !self.shifted.load(Ordering::Acquire) {
            return Instant::now();
        }
        self.state.lock().now()
    }

    /// Is the clock paused?
    #[inline]
    pub(crate) fn is_paused(&self) -> bool {
        // SeqCst: read by the driver's sleeper before it decides to block
        // without a timeout, and by `pool_quiet` after the activity's last
        // `end`; `sleep/activity.rs` orders the two by these reads.
        self.paused.load(Ordering::SeqCst)
    }

    /// `is_paused` as a hint (Relaxed), for the I/O paths' note.
    #[inline]
    pub(crate) fn is_paused_hint(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// Stop the clock where it is. False if it was paused already.
    pub(crate) fn pause(&self) -> bool {
        let mut state = self.state.lock();
        let Some(since) = state.since else {
            return false;
        };
        state.base += since.elapsed();
        state.since = None;
        self.shifted.store(true, Ordering::Release);
        self.paused.store(true, Ordering::SeqCst);
        true
    }

    /// Let a paused clock run again from where it stands. False if it was
    /// running.
    pub(crate) fn resume(&self) -> bool {
        let mut state = self.state.lock();
        if state.since.is_some() {
            return false;
        }
        state.since = Some(Instant::now());
        self.paused.store(false, Ordering::SeqCst);
        true
    }

    /// Move a paused clock forward by `by`; its time after. `None` if it is
    /// running.
    pub(crate) fn advance(&self, by: Duration) -> Option<Instant> {
        let mut state = self.state.lock();
        if state.since.is_some() {
            return None;
        }
        state.base = state.base.checked_add(by).unwrap_or(state.base);
        Some(state.base)
    }

    /// The driver's sleeper, with the pool quiet and the timer store
    /// locked: a paused clock jumps to `deadline` if it is later.
    pub(crate) fn jump_to(&self, deadline: Instant) {
        let mut state = self.state.lock();
        if state.since.is_none() && deadline > state.base {
            state.base = deadline;
        }
    }

    /// How long from now until the pool's time reads `deadline`, in real
    /// time; `None` while paused (only a jump or an advance gets there).
    pub(crate) fn real_wait(&self, deadline: Instant) -> Option<Duration> {
        if !self.shifted.load(Ordering::Acquire) {
            return Some(deadline.saturating_duration_since(Instant::now()));
        }
        let state = self.state.lock();
        state
            .since
            .map(|_| deadline.saturating_duration_since(state.now()))
    }
}

impl State {
    fn now(&self) -> Instant {
        match self.since {
            Some(since) => self.base + since.elapsed(),
            None => self.base,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_paused_clock_stands_still_and_moves_by_what_it_is_told() {
        let clock = PoolClock::new(true);
        assert!(clock.is_paused());
        let t0 = clock.now();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(clock.now(), t0, "paused: no real time passes");
        assert_eq!(
            clock.advance(Duration::from_secs(60)),
            Some(t0 + Duration::from_secs(60))
        );
        assert_eq!(clock.now(), t0 + Duration::from_secs(60));
        clock.jump_to(t0 + Duration::from_secs(30));
        assert_eq!(
            clock.now(),
            t0 + Duration::from_secs(60),
            "a jump never goes back"
        );
        assert_eq!(clock.real_wait(t0 + Duration::from_secs(90)), None);
        assert!(clock.resume());
        assert!(!clock.is_paused());
        assert!(!clock.resume(), "running already");
        assert_eq!(
            clock.advance(Duration::from_secs(1)),
            None,
            "running: no advance"
        );
        std::thread::sleep(Duration::from_millis(5));
        let t1 = clock.now();
        assert!(t1 >= t0 + Duration::from_secs(60) + Duration::from_millis(5));
        assert!(clock.pause());
        assert!(!clock.pause(), "paused already");
        assert!(clock.now() >= t1);
    }

    #[test]
    fn a_clock_never_paused_is_real_time() {
        let clock = PoolClock::new(false);
        let before = Instant::now();
        let now = clock.now();
        assert!(now >= before && now <= Instant::now());
        assert!(!clock.resume());
        assert_eq!(clock.advance(Duration::from_secs(1)), None);
        let wait = clock
            .real_wait(Instant::now() + Duration::from_secs(10))
            .unwrap();
        assert!(wait <= Duration::from_secs(10) && wait > Duration::from_secs(9));
    }
}
