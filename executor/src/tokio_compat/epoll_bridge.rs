//! Feature `tokio-compat`: the pool's I/O driver watched from a tokio
//! reactor. A worker that sleeps in its runtime (`worker_runtime.rs`,
//! `sleep/README.md`, "Sleeping in a guest runtime") while it holds the pool's
//! driver cannot block in the driver: the runtime's reactor watches the
//! driver's epoll descriptor (readable while events wait in it, and after
//! an `unpark`) and a tokio timer at the driver's next deadline, and the
//! sleeper polls the driver when either fires.
//!
//! # Invariants
//!
//! * The registration is made by a sleep that holds the driver, kept while
//!   the worker goes on taking the driver when it sleeps, and dropped (so
//!   deregistered) by a sleep without it: registered in every sleeping
//!   worker's reactor at once, each pool event would wake them all. An
//!   awake worker's registration costs nothing but a readiness note.
//! * Readiness is cleared before the driver is polled, so an event after
//!   the poll is a new edge, which wakes the sleeper's future: none is
//!   missed.
//! * The timer and the registration belong to the runtime: they are
//!   dropped in its context (`clear`), before it shuts down.

use crate::scheduler::io_driver::{Driver, IoDriver};
use std::cell::RefCell;
use std::future::Future;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;

/// Rounds of driver polls and timer checks in one poll of the driver
/// sleeper's future before it yields to the runtime's other work.
const DRIVER_ROUNDS: usize = 8;

/// If the pool's epoll descriptor cannot be watched (no descriptor left to
/// duplicate it), the driver's sleeper polls the driver this often.
const DRIVER_FALLBACK_POLL: Duration = Duration::from_millis(1);

/// The pool's epoll descriptor, duplicated so that a tokio reactor can own
/// a registration of it.
pub(super) struct EpollFd(OwnedFd);

impl AsRawFd for EpollFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// The driver's descriptor registered in a runtime's reactor.
pub(super) type Registration = AsyncFd<EpollFd>;

/// A worker's watch of the pool's driver from its runtime, kept between
/// its sleeps.
#[derive(Default)]
pub(super) struct DriverWatch {
    /// The driver's timer deadline, watched while the worker sleeps
    /// holding the driver.
    timer: RefCell<Option<Pin<Box<tokio::time::Sleep>>>>,
    /// The registration, between two sleeps (a sleep holds it itself).
    epoll: RefCell<Option<Registration>>,
}

impl DriverWatch {
    /// A sleep begins, inside the runtime's context: the registration to
    /// watch with if it holds the driver (kept from the last such sleep,
    /// or made now); none, and the kept one dropped, if it does not
    /// (another worker watches the driver: stop hearing of it).
    pub(super) fn begin(&self, driver: &Driver, holds_driver: bool) -> Option<Registration> {
        let kept = self.epoll.take();
        if !holds_driver {
            return None;
        }
        kept.or_else(|| register(driver))
    }

    /// The sleep is over: keep its registration for the next.
    pub(super) fn end(&self, epoll: Option<Registration>) {
        *self.epoll.borrow_mut() = epoll;
    }

    /// Drop the timer and the registration (in the runtime's context).
    pub(super) fn clear(&self) {
        self.timer.borrow_mut().take();
        self.epoll.borrow_mut().take();
    }

    /// The sleeper that holds the pool's driver, in one poll of its
    /// future: when the driver's descriptor is readable (or its timer is
    /// due), poll the driver without blocking; true if that brought work
    /// (its wakers are in `wakers`: the sleeper ends its sleep and wakes
    /// them as its own work, onto its own deque). Else `cx` is registered
    /// with the descriptor's readiness (an event, or an `unpark` of the
    /// driver) and the driver's next timer. Without `epoll` (see
    /// `register`) the driver is polled every `DRIVER_FALLBACK_POLL`.
    /// `is_quiet`: whether the pool is quiet, for a paused clock's jump.
    ///
    /// The driver is not polled on a poll that finds the descriptor not
    /// readable: an event that came since the last poll of the driver made
    /// it readable (the registration stays in this reactor while this
    /// worker keeps taking the driver, and a new one reports the state it
    /// finds), so nothing waits there.
    pub(super) fn poll(
        &self,
        io: &Driver,
        is_quiet: &dyn Fn() -> bool,
        epoll: Option<&Registration>,
        cx: &mut Context<'_>,
        wakers: &mut Vec<Waker>,
    ) -> bool {
        let mut timer = self.timer.borrow_mut();
        let mut due = epoll.is_none();
        for _ in 0..DRIVER_ROUNDS {
            // Readiness first, cleared: an event after the poll below is a
            // new edge, which wakes `cx`.
            while let Some(Poll::Ready(Ok(mut ready))) = epoll.map(|e| e.poll_read_ready(cx)) {
                ready.clear_ready();
                due = true;
            }
            if due {
                io.unparked();
                // Events beyond one poll's buffer are polled by this
                // worker, awake now, before it can sleep again (its idle
                // period begins with a poll of the driver).
                io.poll_now(wakers);
                if !wakers.is_empty() {
                    return true;
                }
            }
            // Recorded before the wait: an earlier timer inserted from now
            // on unparks the driver, which makes the descriptor readable.
            // With the pool's clock paused, this is where it jumps (when
            // the pool is quiet): the timers it fired are work.
            let deadline = io.park_deadline(is_quiet, wakers);
            if !wakers.is_empty() {
                return true;
            }
            let deadline = match (deadline, epoll) {
                (deadline, Some(_)) => deadline,
                (deadline, None) => {
                    let soon = Instant::now() + DRIVER_FALLBACK_POLL;
                    Some(deadline.map_or(soon, |d| d.min(soon)))
                }
            };
            let Some(deadline) = deadline else {
                return false;
            };
            if deadline <= Instant::now() {
                // A timer is due already (inserted late, or its tokio
                // timer fired): fire it now rather than wait a tick.
                due = true;
                continue;
            }
            let deadline = tokio::time::Instant::from_std(deadline);
            let sleep = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            if sleep.deadline() != deadline {
                sleep.as_mut().reset(deadline);
            }
            if sleep.as_mut().poll(cx).is_pending() {
                return false;
            }
            due = true;
        }
        // Timers keep coming due with nothing for them: come back soon.
        cx.waker().wake_by_ref();
        false
    }
}

/// A registration of the pool's epoll descriptor in the current runtime's
/// reactor (inside its context). None if the process is out of
/// descriptors (or the reactor refuses it): the driver is then polled on a
/// short timer instead.
fn register(driver: &Driver) -> Option<Registration> {
    let fd = driver.epoll_fd();
    // SAFETY: `fcntl(F_DUPFD_CLOEXEC)` of the driver's epoll descriptor,
    // which is open while the driver lives (borrowed here); the new
    // descriptor is ours alone.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return None;
    }
    // SAFETY: `dup` is a descriptor we just opened and own.
    let fd = EpollFd(unsafe { OwnedFd::from_raw_fd(dup) });
    // SAFETY: `EpollFd` owns its descriptor and neither closes nor
    // replaces it while the `AsyncFd` owns the `EpollFd`.
    unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.ok()
}
