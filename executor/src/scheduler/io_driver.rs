//! What the runtime needs of its pool's I/O driver, which lives a floor
//! above it (`io/`).
//!
//! The sleep protocol blocks one sleeper in the driver through
//! [`Park`](crate::sleep::park::Park); besides that the scheduler makes
//! the driver with the pool, polls it without blocking while the workers
//! are busy, and shuts it down with the pool, and the timers (`time/`)
//! reach the store and the clock it holds: [`IoDriver`]. The I/O floor
//! names its type here by implementing [`DriverBinding`] for
//! [`DriverBound`], and [`Driver`] is the type that resolves to (the same
//! type, by the same name), so the registry holds the driver itself (no
//! trait object, no dynamic call on a worker's poll) and gives it, as that
//! type, to the sockets and timers (`Registry::driver`) while no file of
//! this floor imports `io/`.

use crate::sleep::park::Park;
use crate::time::pool_clock::PoolClock;
use crate::time::timers::Timers;
use std::io;
use std::task::Waker;

/// A pool's I/O driver, as the scheduler uses it.
pub(crate) trait IoDriver: Park + Sized + 'static {
    /// A driver for a new pool of `workers` workers, its clock paused if
    /// `start_paused`; a seeded pool's (`seed`) refuses every source.
    fn new(start_paused: bool, workers: usize, seed: Option<u64>) -> io::Result<Self>;

    /// Is there anything a poll could find (a registered source, a pending
    /// timer)? A hint, so that the workers of a pool without I/O never poll.
    fn has_interest(&self) -> bool;

    /// The holder (`Park::try_acquire`): poll without blocking; the wakers
    /// of what became ready go into `wakers`.
    fn poll_now(&self, wakers: &mut Vec<Waker>);

    /// Readiness events delivered to sources so far (`Metrics::io_events`).
    fn io_events(&self) -> u64;

    /// Accepts that failed for want of descriptors so far
    /// (`Metrics::accept_errors`).
    fn accept_errors(&self) -> u64;

    /// The pool's time, paused or not (`pool::time::Instant::now`): what
    /// the live-task dump measures a timer's time left against.
    fn now(&self) -> std::time::Instant;

    /// The pool's clock (`time/pool_clock.rs`), which the driver's park
    /// reads and a paused clock's jump moves.
    fn clock(&self) -> &PoolClock;

    /// The pool's timer store (`time/timers.rs`), which the driver fires.
    fn timers(&self) -> &Timers;

    /// The timer shard of the calling thread: its own if it is one of this
    /// pool's workers, else the shared one (`time/timers.rs`).
    fn timer_shard(&self) -> usize;

    /// Has the driver shut down (its pool is gone: timers complete at once)?
    fn is_shut_down(&self) -> bool;

    /// File operations completed on the driver's io_uring so far, if it has
    /// one (`Metrics::fs_ring_ops`, `fs_engine`).
    fn ring_ops(&self) -> Option<u64>;

    /// The OS poll instance's descriptor: readable while events wait in
    /// it, and after an `unpark` (a guest runtime watches it, see
    /// `tokio_compat/epoll_bridge.rs`).
    #[cfg_attr(not(feature = "tokio-compat"), allow(dead_code))]
    fn epoll_fd(&self) -> std::os::fd::RawFd;

    /// The holder is about to wait elsewhere (in a guest runtime) for this
    /// driver's descriptor: the real instant of its next timer, if any,
    /// recorded so that a timer inserted earlier than it unparks the driver.
    /// With the clock paused, as `Park::park` does: a poll without blocking
    /// and, if the pool `is_quiet`, a jump; what they bring goes into
    /// `wakers` (the instant is then now), else `None`: wait for an unpark.
    #[cfg_attr(not(feature = "tokio-compat"), allow(dead_code))]
    fn park_deadline(
        &self,
        is_quiet: &dyn Fn() -> bool,
        wakers: &mut Vec<Waker>,
    ) -> Option<std::time::Instant>;

    /// The holder's wait that began with `park_deadline` is over.
    #[cfg_attr(not(feature = "tokio-compat"), allow(dead_code))]
    fn unparked(&self);

    /// A seeded pool is quiet (`seeded/`): jump the paused clock to the
    /// earliest timer's deadline and move the wakers of the timers due
    /// then into `wakers`; false if no timer is pending.
    fn jump_to_next_timer(&self, wakers: &mut Vec<Waker>) -> bool;

    /// Worker `worker` goes idle (before it can sleep): the driver's
    /// sleeper fires its timers from now on (`time/deadlines.rs`).
    fn worker_idle(&self, worker: usize);

    /// Worker `worker` is awake again: it fires its own timers
    /// (`fire_own_timers`).
    fn worker_awake(&self, worker: usize);

    /// An awake worker's periodic duty: the wakers of its own timers that
    /// are due into `wakers` (only its own lock; it reads the clock only
    /// if it has timers).
    fn fire_own_timers(&self, worker: usize, wakers: &mut Vec<Waker>);

    /// The pool is gone: wake every registered source (its waits now fail)
    /// and every timer (it completes) into `wakers`, and refuse new ones.
    fn shut_down(&self, wakers: &mut Vec<Waker>);
}

/// Names the driver's type for the scheduler: implemented once, by the I/O
/// floor, for [`DriverBound`] (`io/driver.rs`).
pub(crate) trait DriverBinding {
    /// The pool's I/O driver: `io::Driver`.
    type Driver: IoDriver;
}

/// What [`DriverBinding`] is implemented for: a type with no values.
pub(crate) enum DriverBound {}

/// The I/O driver's type, as the scheduler names it.
pub(crate) type Driver = <DriverBound as DriverBinding>::Driver;
