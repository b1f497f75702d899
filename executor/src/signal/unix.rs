//! Unix signals: [`signal`], [`Signal`], [`SignalKind`].

use super::delivery::{self, SignalSlot};
use crate::io::async_fd::FdSource;
use crate::io::poll_evented::PollEvented;
use crate::io::scheduled_io::Direction;
use crate::scheduler::coop;
use crate::task::noting::note_wait;
use crate::task::waits::{self, Wait, WaitKind};
use futures::Stream;
use std::fmt;
use std::future::poll_fn;
use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::panic::Location;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

/// A kind of signal: its number.
///
/// # Examples
///
/// ```
/// use pool::signal::unix::SignalKind;
/// assert_eq!(SignalKind::terminate().as_raw_value(), 15);
/// assert_eq!(SignalKind::from_raw(10), SignalKind::user_defined1());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SignalKind(i32);

impl SignalKind {
    /// SIGINT: Ctrl-C at a terminal.
    pub fn interrupt() -> Self {
        SignalKind(libc::SIGINT)
    }

    /// SIGTERM: the polite request to stop (what `kill`, systemd and
    /// Kubernetes send first).
    pub fn terminate() -> Self {
        SignalKind(libc::SIGTERM)
    }

    /// SIGHUP: the terminal hung up; by convention, "reload your
    /// configuration" for a daemon.
    pub fn hangup() -> Self {
        SignalKind(libc::SIGHUP)
    }

    /// SIGUSR1.
    pub fn user_defined1() -> Self {
        SignalKind(libc::SIGUSR1)
    }

    /// SIGUSR2.
    pub fn user_defined2() -> Self {
        SignalKind(libc::SIGUSR2)
    }

    /// SIGCHLD: a child process stopped or exited.
    pub fn child() -> Self {
        SignalKind(libc::SIGCHLD)
    }

    /// The signal numbered `signum` ([`signal`] checks it).
    pub fn from_raw(signum: i32) -> Self {
        SignalKind(signum)
    }

    /// The signal's number.
    pub fn as_raw_value(self) -> i32 {
        self.0
    }
}

/// Gives every `Signal` an id for its slot's list of waiters.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// Listen for signal `kind`: the returned [`Signal`] yields once for each
/// delivery from now on (deliveries between two of its `recv`s coalesce
/// into one; none is lost).
///
/// The first `signal` for a kind installs the process's handler for it,
/// which stays for the life of the process: from then on the signal no
/// longer has its default effect (a SIGINT or SIGTERM no longer ends the
/// process), also when every `Signal` for it is dropped. Any number of
/// `Signal`s, in any number of pools, may listen for one kind: each sees
/// every delivery.
///
/// The signal is watched through the current pool's I/O driver (the same
/// rule as [`spawn`](crate::spawn)), with no thread of its own: a delivery
/// wakes a sleeping pool as I/O readiness does.
///
/// # Errors
///
/// `InvalidInput` for a number that is not a signal (1 to 64), for SIGKILL
/// and SIGSTOP (they cannot be caught) and SIGILL, SIGFPE and SIGSEGV
/// (faults of the thread that gets them), and for the two the C library
/// keeps (32 and 33). An error of the current pool's driver.
///
/// # Examples
///
/// ```
/// use pool::signal::unix::{signal, SignalKind};
/// # pool::block_on(async {
/// let mut usr1 = signal(SignalKind::user_defined1()).unwrap();
/// // SAFETY: sending a signal to this very process, which now handles it.
/// unsafe { libc::kill(libc::getpid(), libc::SIGUSR1) };
/// assert_eq!(usr1.recv().await, Some(()));
/// # });
/// ```
#[track_caller]
pub fn signal(kind: SignalKind) -> io::Result<Signal> {
    signal_at(kind, Some(waits::site_of(Location::caller())))
}

/// A `Signal` of the pool's own (a child's SIGCHLD), whose waits the future
/// using it records itself (`task/waits.rs`).
pub(crate) fn internal_signal(kind: SignalKind) -> io::Result<Signal> {
    signal_at(kind, None)
}

/// `signal`, its waits recorded as made at `site` (none if `None`).
pub(crate) fn signal_at(kind: SignalKind, site: Option<u16>) -> io::Result<Signal> {
    let slot = delivery::register(kind.0)?;
    let pipe = PollEvented::internal(FdSource(delivery::reader()?))?;
    // Dispatch what came before this `Signal`, so that it does not return
    // for it.
    delivery::drain_now()?;
    Ok(Signal {
        kind,
        slot,
        seen: slot.deliveries(),
        pipe,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        site,
    })
}

/// A stream of deliveries of one signal: see [`signal`].
///
/// It is a [`futures::Stream`] of `()`; the stream ends (and
/// [`recv`](Signal::recv) returns `None`) once the pool that drives it was
/// dropped.
pub struct Signal {
    kind: SignalKind,
    slot: &'static SignalSlot,
    /// The slot's delivery count this `Signal` has returned for.
    seen: u64,
    /// This `Signal`'s duplicate of the signal pipe, on its pool's driver.
    pipe: PollEvented<FdSource<UnixStream>>,
    /// Its entry in the slot's waiters.
    id: u64,
    /// The site of the `signal` call that made it, for the task waiting on
    /// it (`task/waits.rs`); `None` for the pool's own.
    site: Option<u16>,
}

impl Signal {
    /// Waits for the next delivery. `None` once the pool that drives this
    /// `Signal` was dropped.
    pub async fn recv(&mut self) -> Option<()> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next delivery (see [`recv`](Signal::recv)).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        // A delivery spends the task's cooperative budget
        // (`scheduler/coop.rs`); so does each drain of the pipe.
        coop::budget_poll(cx, |cx| self.poll_delivery(cx))
    }

    fn poll_delivery(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        loop {
            if self.take_delivery() {
                return Poll::Ready(Some(()));
            }
            // Drain the pipe, waiting for it to be readable when it is
            // empty; a drain dispatches to every `Signal` of the process.
            let drained = self.pipe.poll_io(cx, Direction::Read, |pipe| {
                match delivery::drain(|buf| (&pipe.0).read(buf))? {
                    true => Ok(()),
                    false => Err(io::ErrorKind::WouldBlock.into()),
                }
            });
            match drained {
                Poll::Ready(Ok(())) => continue,
                // The driver is gone (the pool was dropped), or the pipe
                // failed: the stream ends.
                Poll::Ready(Err(_)) => {
                    self.slot.forget(self.id);
                    return Poll::Ready(None);
                }
                Poll::Pending => break,
            }
        }
        // Another reader of the pipe (another `Signal`, in any pool) may
        // drain and dispatch first: wait on the slot too, then look again
        // (see the table's invariants).
        self.slot.wait(self.id, cx.waker());
        if self.take_delivery() {
            return Poll::Ready(Some(()));
        }
        if let Some(site) = self.site {
            note_wait(Wait::new(WaitKind::Signal, site, self.kind.0 as u64));
        }
        Poll::Pending
    }

    /// A delivery not returned yet: take it.
    fn take_delivery(&mut self) -> bool {
        let now = self.slot.deliveries();
        if now == self.seen {
            return false;
        }
        self.seen = now;
        self.slot.forget(self.id);
        true
    }
}

impl Stream for Signal {
    type Item = ();

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<()>> {
        self.get_mut().poll_recv(cx)
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        self.slot.forget(self.id);
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal").field("kind", &self.kind).finish()
    }
}
