//! The pool's clock as users read and stop it: [`Instant`], [`pause`],
//! [`resume`], [`advance`]. The clock itself is `pool_clock.rs`'s, held by
//! the driver; the jump of a paused clock is the driver's sleeper's
//! (`io/driver.rs`, `sleep/activity.rs`).

use crate::scheduler::io_driver::IoDriver;
use crate::sleep::park::Park;
use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

/// A measurement of the current pool's clock: `std::time::Instant`, except
/// that it stands still while the pool's clock is paused (see the
/// [module docs](crate::time)). Converts to and from `std`'s; a
/// `pool::time` function that takes one takes either.
///
/// Outside any pool (and before the global pool started) it reads `std`'s
/// clock.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use pool::time::Instant;
///
/// let start = Instant::now();
/// let later = start + Duration::from_millis(5);
/// assert_eq!(later - start, Duration::from_millis(5));
/// assert_eq!(later.duration_since(start), Duration::from_millis(5));
/// let std: std::time::Instant = later.into_std();
/// assert_eq!(Instant::from(std), later);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(std::time::Instant);

impl Instant {
    /// The current pool's time: while its clock is paused, the virtual
    /// time it stands at.
    pub fn now() -> Instant {
        Instant(crate::context::current::with_current_driver(
            |driver| match driver {
                Some(driver) => driver.clock().now(),
                None => std::time::Instant::now(),
            },
        ))
    }

    /// The pool's time since `self` (zero if `self` is later).
    pub fn elapsed(&self) -> Duration {
        Instant::now().duration_since(*self)
    }

    /// The time from `earlier` to `self` (zero if `earlier` is later).
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.0.saturating_duration_since(earlier.0)
    }

    /// The time from `earlier` to `self`, `None` if `earlier` is later.
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.0.checked_duration_since(earlier.0)
    }

    /// The time from `earlier` to `self` (zero if `earlier` is later).
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.duration_since(earlier)
    }

    /// `self + duration`, `None` if it does not fit.
    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        self.0.checked_add(duration).map(Instant)
    }

    /// `self - duration`, `None` if it does not fit.
    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        self.0.checked_sub(duration).map(Instant)
    }

    /// `std`'s instant with the same value.
    pub fn from_std(std: std::time::Instant) -> Instant {
        Instant(std)
    }

    /// As `std`'s instant (on a paused or advanced clock, the pool's time,
    /// not the real one).
    pub fn into_std(self) -> std::time::Instant {
        self.0
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl From<std::time::Instant> for Instant {
    fn from(std: std::time::Instant) -> Instant {
        Instant(std)
    }
}

impl From<Instant> for std::time::Instant {
    fn from(instant: Instant) -> std::time::Instant {
        instant.0
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    ///
    /// If the result does not fit (as `std`'s).
    fn add(self, rhs: Duration) -> Instant {
        Instant(self.0 + rhs)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        self.0 += rhs;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    fn sub(self, rhs: Duration) -> Instant {
        Instant(self.0 - rhs)
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, rhs: Duration) {
        self.0 -= rhs;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// Zero if `rhs` is later.
    fn sub(self, rhs: Instant) -> Duration {
        self.duration_since(rhs)
    }
}

/// The current pool's driver, or a panic that says what to do.
#[track_caller]
fn current_driver<R>(what: &str, f: impl FnOnce(&crate::scheduler::io_driver::Driver) -> R) -> R {
    if !crate::context::current::in_a_pool() {
        panic!(
            "pool::time::{what} called outside a pool: call it from a task, a \
             `Pool::block_on` future or `#[pool::test]` (or build the pool with \
             `Builder::start_paused(true)`)"
        );
    }
    crate::context::current::with_current_driver(|driver| {
        f(driver.expect("a thread in a pool has a current pool"))
    })
}

/// Stop the current pool's clock (a paused clock stays paused): from now
/// on it stands still, moves by [`advance`], and jumps to the earliest
/// timer's deadline whenever the pool is quiet (see the
/// [module docs](crate::time)). On any number of workers.
///
/// # Panics
///
/// Outside a pool (not in a task, a blocking closure or a `Pool::block_on`
/// future).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use pool::time::Instant;
///
/// let pool = pool::Pool::new().unwrap();
/// pool.block_on(async {
///     pool::time::pause();
///     let start = Instant::now();
///     pool::time::sleep(Duration::from_secs(86_400)).await;
///     assert_eq!(start.elapsed(), Duration::from_secs(86_400));
///     pool::time::resume();
/// });
/// ```
#[track_caller]
pub fn pause() {
    current_driver("pause", |driver| {
        driver.clock().pause();
        // The holder decides its wait again.
        driver.unpark();
    });
}

/// Let the current pool's paused clock run again, at real speed from the
/// time it stands at.
///
/// # Panics
///
/// Outside a pool, and if the clock is not paused.
#[track_caller]
pub fn resume() {
    if let Some(seed) = crate::context::current::with_current(|r| r.seeded().map(|s| s.seed())) {
        panic!(
            "pool::time::resume: a seeded pool's clock stays paused (seed {seed}): the \
             OS clock would decide its timers and no seed could replay them; move it \
             with pool::time::advance, or build the pool without Builder::seed"
        );
    }
    current_driver("resume", |driver| {
        let resumed = driver.clock().resume();
        // The holder's wait becomes real time again.
        driver.unpark();
        assert!(
            resumed,
            "pool::time::resume: the pool's clock is not paused (pause it first with \
             `pool::time::pause()` or `Builder::start_paused(true)`)"
        );
    });
}

/// Move the current pool's paused clock forward by exactly `by`, firing the
/// timers due by then, and yield once so that their tasks can run.
///
/// # Panics
///
/// Outside a pool, and if the clock is not paused.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use pool::time::Instant;
///
/// #[pool::main(start_paused = true)]
/// async fn main() {
///     let start = Instant::now();
///     // Its deadline is set now: 10 s from `start`.
///     let sleep = pool::time::sleep(Duration::from_secs(10));
///     pool::time::advance(Duration::from_secs(10)).await;
///     assert!(sleep.is_elapsed());
///     sleep.await;
///     assert_eq!(start.elapsed(), Duration::from_secs(10));
/// }
/// ```
pub async fn advance(by: Duration) {
    let mut wakers = Vec::new();
    current_driver("advance", |driver| {
        // Move the paused clock by `by` and fire the timers due by then.
        let advanced = driver.clock().advance(by).map(|now| {
            driver
                .timers()
                .fire_all(driver.timer_shard(), now, &mut wakers)
        });
        assert!(
            advanced.is_some(),
            "pool::time::advance: the pool's clock is not paused (pause it first with \
             `pool::time::pause()` or `Builder::start_paused(true)`)"
        );
    });
    wakers.into_iter().for_each(std::task::Waker::wake);
    crate::scheduler::coop::yield_now().await;
}
