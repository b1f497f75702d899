//! Timers on the current pool's driver: [`sleep`], [`sleep_until`],
//! [`timeout`] and [`interval`], and the pool's clock ([`Instant`]), which
//! tests can stop ([`pause`], [`advance`], [`Builder::start_paused`]).
//!
//! A timer belongs to the pool that is current where it is created (the
//! same rule as [`spawn`](crate::spawn); the global pool where there is no
//! other). The pool's workers fire it: the worker asleep in the I/O driver
//! blocks until the next deadline, and busy workers look at the timers every
//! few dozen tasks. A deadline is never early; it is late by at most the
//! driver's timeout resolution (a millisecond) when a worker sleeps, and by
//! the length of the polls in progress when every worker is busy.
//!
//! If the timer's pool is dropped, the timer completes at once.
//!
//! # A clock you can stop
//!
//! Each pool has a clock, which [`Instant::now`] reads; it is `std`'s time
//! until the pool's clock is first paused. Paused ([`pause`], or
//! [`Builder::start_paused`]), it stands still, and moves only by
//! [`advance`] or by jumping: whenever the pool is quiet (every worker
//! asleep, no task queued or running, no `Pool::block_on` future being
//! polled or woken, no [`spawn_blocking`](crate::spawn_blocking) closure
//! queued or running, no I/O readiness waiting in the driver), the clock
//! jumps to the earliest timer's deadline and that timer fires. This works
//! on any number of workers: the pool's sleep protocol knows when it is
//! quiet (`executor/src/sleep/activity.rs`). Timers fire in deadline
//! order, and none fires before the work that was running when it came due
//! has finished. After the pool's tasks did socket or pipe I/O, a jump
//! first waits up to 5 ms of real time for the answer's readiness, so a
//! timeout around a loopback request does not fire while the answer is
//! in flight; I/O with another host, or with a thread outside the pool,
//! does not hold the clock.
//!
//! What keeps real time: the stall detector, the timeline, the metrics
//! and the console (they measure how long polls really take on a CPU: a
//! paused clock would hide a stuck worker), and `spawn_blocking` closures
//! (their `std::thread::sleep` is real; a running closure holds the clock). With feature `tokio-compat`, tokio's own clock (its timers,
//! `tokio::time::Instant`) is not the pool's and is never paused; tokio's
//! work on the workers does not hold the pool's clock either.
//!
//! [`Builder::start_paused`]: crate::Builder::start_paused
//!
//! # Examples
//!
//! ```
//! use std::time::{Duration, Instant};
//!
//! let pool = pool::Pool::new().unwrap();
//! pool.block_on(async {
//!     let start = Instant::now();
//!     pool::time::sleep(Duration::from_millis(10)).await;
//!     assert!(start.elapsed() >= Duration::from_millis(10));
//!
//!     let never = std::future::pending::<()>();
//!     let r = pool::time::timeout(Duration::from_millis(5), never).await;
//!     assert!(r.is_err());
//! });
//! ```
//!
//! With the clock paused, a quarter of an hour passes at once (in a test,
//! `#[pool::test(start_paused = true)]`):
//!
//! ```
//! use std::time::Duration;
//!
//! #[pool::main(start_paused = true)]
//! async fn main() {
//!     let real = std::time::Instant::now();
//!     let start = pool::time::Instant::now();
//!     for attempt in 0..4 {
//!         pool::time::sleep(Duration::from_secs(60 << attempt)).await;
//!     }
//!     assert_eq!(start.elapsed(), Duration::from_secs(900));
//!     assert!(real.elapsed() < Duration::from_secs(60));
//! }
//! ```

use crate::scheduler::coop;
use crate::task::noting::note_wait;
use crate::task::waits::{self, Wait, WaitKind};
use crate::time::timer_entry::TimerEntry;
use futures::Stream;
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

pub(crate) mod deadlines;
pub(crate) mod instant;
pub(crate) mod pool_clock;
#[cfg(all(test, not(loom)))]
pub(crate) mod tests;
pub(crate) mod timer_entry;
pub(crate) mod timers;

pub use instant::{advance, pause, resume, Instant};

/// A deadline this far away stands for "never" (`Instant` has no maximum).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// Waits until `duration` has passed.
///
/// # Examples
///
/// ```
/// # pool::block_on(async {
/// pool::time::sleep(std::time::Duration::from_millis(1)).await;
/// # });
/// ```
#[track_caller]
pub fn sleep(duration: Duration) -> Sleep {
    Sleep::after(duration, WaitKind::Sleep)
}

/// Waits until `deadline` (a [`pool::time::Instant`](Instant), or `std`'s:
/// the pool's time is `std`'s until its clock is first paused).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use pool::time::Instant;
/// # pool::block_on(async {
/// let deadline = Instant::now() + Duration::from_millis(2);
/// pool::time::sleep_until(deadline).await;
/// assert!(Instant::now() >= deadline);
/// # });
/// ```
#[track_caller]
pub fn sleep_until(deadline: impl Into<Instant>) -> Sleep {
    Sleep {
        deadline: deadline.into().into_std(),
        entry: TimerEntry::new(),
        made: Made::here(WaitKind::Sleep, None),
    }
}

/// What a [`Sleep`] is, for the task that waits on it (`TaskInfo::waiting_on`):
/// a sleep, a timeout or an interval's tick, the duration or period it was
/// asked for (in milliseconds, `NOT_ASKED` for `sleep_until`), and where
/// it was made: 8 bytes.
#[derive(Clone, Copy, Debug)]
struct Made {
    kind: WaitKind,
    site: u16,
    asked_ms: u32,
}

/// `Made::asked_ms` of a `sleep_until`.
const NOT_ASKED: u32 = u32::MAX;

impl Made {
    #[track_caller]
    fn here(kind: WaitKind, asked: Option<Duration>) -> Made {
        Made {
            kind,
            site: waits::site_of(std::panic::Location::caller()),
            asked_ms: asked.map_or(NOT_ASKED, |d| {
                d.as_millis().min(u128::from(NOT_ASKED - 1)) as u32
            }),
        }
    }

    fn asked(self) -> Option<Duration> {
        (self.asked_ms != NOT_ASKED).then(|| Duration::from_millis(self.asked_ms.into()))
    }
}

/// The future of [`sleep`] and [`sleep_until`]. It can be moved between
/// polls, and [reset](Sleep::reset) to a new deadline.
#[must_use = "a Sleep does nothing unless awaited"]
pub struct Sleep {
    /// In the pool's time.
    deadline: std::time::Instant,
    /// The timer in the current pool's driver (`timer_entry.rs`).
    entry: TimerEntry,
    made: Made,
}

impl Sleep {
    /// A sleep of `duration` from now on its pool's clock, made at the
    /// caller's line.
    #[track_caller]
    fn after(duration: Duration, kind: WaitKind) -> Sleep {
        let entry = TimerEntry::new();
        let now = entry.now();
        let deadline = now
            .checked_add(duration)
            .unwrap_or_else(|| now + FAR_FUTURE);
        Sleep {
            deadline,
            entry,
            made: Made::here(kind, Some(duration)),
        }
    }

    /// The instant this sleep completes at.
    pub fn deadline(&self) -> Instant {
        Instant::from_std(self.deadline)
    }

    /// Has the deadline passed (on its pool's clock)?
    pub fn is_elapsed(&self) -> bool {
        self.entry.now() >= self.deadline
    }

    /// Complete at `deadline` instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use pool::time::Instant;
    /// # pool::block_on(async {
    /// let mut sleep = pool::time::sleep(Duration::from_secs(3600));
    /// sleep.reset(Instant::now());
    /// sleep.await;
    /// # });
    /// ```
    pub fn reset(&mut self, deadline: impl Into<Instant>) {
        self.entry.cancel();
        self.deadline = deadline.into().into_std();
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        // A due timer spends the task's cooperative budget
        // (`scheduler/coop.rs`), as every operation of the pool's does.
        let poll = coop::budget_poll(cx, |cx| this.entry.poll_until(this.deadline, cx));
        if poll.is_pending() {
            let made = this.made;
            note_wait(Wait::timer(
                made.kind,
                made.site,
                this.deadline,
                made.asked(),
            ));
        }
        poll
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("registered", &self.entry.is_registered())
            .finish()
    }
}

/// Runs `future`, giving up after `duration`: `Err(Elapsed)` if it did not
/// complete by then (the future is dropped with the `Timeout`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// # pool::block_on(async {
/// let quick = pool::time::timeout(Duration::from_secs(1), async { 7 }).await;
/// assert_eq!(quick.unwrap(), 7);
/// # });
/// ```
#[track_caller]
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    Timeout {
        future,
        sleep: Sleep::after(duration, WaitKind::Timeout),
    }
}

pin_project! {
    /// The future of [`timeout`].
    #[must_use = "a Timeout does nothing unless awaited"]
    #[derive(Debug)]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        Pin::new(this.sleep).poll(cx).map(|()| Err(Elapsed(())))
    }
}

/// The error of a [`timeout`] whose future did not complete in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// Ticks every `period`, the first tick at once.
///
/// Ticks are due at `start + k * period`; after a stall the missed ticks
/// come at once, one per poll, until the interval has caught up (tokio's
/// default, `MissedTickBehavior::Burst`). Each tick yields its due instant.
///
/// # Panics
///
/// If `period` is zero.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use std::time::Duration;
/// # pool::block_on(async {
/// let mut ticks = pool::time::interval(Duration::from_millis(2));
/// let first = ticks.next().await.unwrap();
/// let second = ticks.next().await.unwrap();
/// assert_eq!(second - first, Duration::from_millis(2));
/// # });
/// ```
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    assert!(
        !period.is_zero(),
        "pool::time::interval: the period must be longer than zero"
    );
    let mut sleep = Sleep::after(Duration::ZERO, WaitKind::Interval);
    sleep.made = Made::here(WaitKind::Interval, Some(period));
    Interval { period, sleep }
}

/// The stream of [`interval`]: `futures::Stream<Item = Instant>`.
#[derive(Debug)]
#[must_use = "an Interval does nothing unless polled"]
pub struct Interval {
    period: Duration,
    /// Completes at the next tick's due instant.
    sleep: Sleep,
}

impl Interval {
    /// Waits for the next tick and returns its due instant.
    pub async fn tick(&mut self) -> Instant {
        std::future::poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        ready!(Pin::new(&mut self.sleep).poll(cx));
        let due = self.sleep.deadline;
        let next = due
            .checked_add(self.period)
            .unwrap_or_else(|| due + FAR_FUTURE);
        self.sleep.reset(Instant::from_std(next));
        Poll::Ready(Instant::from_std(due))
    }

    /// The period between ticks.
    pub fn period(&self) -> Duration {
        self.period
    }
}

impl Stream for Interval {
    type Item = Instant;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        self.get_mut().poll_tick(cx).map(Some)
    }
}
