//! `ScheduledIo`: the readiness of one registered source and the wakers
//! waiting for it.
//!
//! The readiness word packs a tick (bumped by every event the driver
//! delivers) with the ready bits, so that a task which saw "readable", tried
//! the read and got `WouldBlock` clears only the readiness it saw: if an
//! event arrived in between, the tick moved, the clear does nothing and the
//! task tries again. No edge is lost (epoll is edge-triggered: an event
//! comes once per change).
//!
//! ```text
//!   bits 0..8    READABLE, WRITABLE, SHUTDOWN, READ_CLOSED, WRITE_CLOSED
//!   bits 8..64   tick
//! ```
//!
//! # Invariants
//!
//! * The driver sets readiness *before* it takes the waiter lock to collect
//!   the wakers; a task re-reads readiness *under* that lock after storing
//!   its waker. So either the driver's lock comes after the task's (it finds
//!   the waker) or the task's re-read sees the readiness: no wake is lost.
//! * A source starts out readable and writable (optimistic): the first
//!   operation is tried at once, and only a `WouldBlock` makes the task wait.
//! * `SHUTDOWN` is set once (pool shut down or driver failed) and never
//!   cleared; with it every wait ends with an error.
//! * `READ_CLOSED` and `WRITE_CLOSED` are never cleared either: a close is
//!   one edge, and every later operation on that side returns at once (end
//!   of file, or an error), so the side stays ready.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

/// Readiness for reading (or a read-side close, or an error).
pub(crate) const READABLE: usize = 1 << 0;
/// Readiness for writing (or a write-side close, or an error).
pub(crate) const WRITABLE: usize = 1 << 1;
/// The driver is gone: every wait fails.
const SHUTDOWN: usize = 1 << 2;
/// The read side was closed (the peer shut down its writing, a pipe's last
/// writer went): with it reads stay ready, whatever `clear` does.
pub(crate) const READ_CLOSED: usize = 1 << 3;
/// The write side was closed: with it writes stay ready (they report it).
pub(crate) const WRITE_CLOSED: usize = 1 << 4;
const READY_MASK: usize = READABLE | WRITABLE | SHUTDOWN | READ_CLOSED | WRITE_CLOSED;
const TICK_SHIFT: u32 = 8;

/// Which half of a source a task waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

impl Direction {
    /// The readiness a `WouldBlock` (or a short transfer) clears.
    fn bit(self) -> usize {
        match self {
            Direction::Read => READABLE,
            Direction::Write => WRITABLE,
        }
    }

    /// The closed bit, which nothing clears: a close comes as one edge, so
    /// clearing it would leave the task waiting for an edge that never
    /// comes (data and a close in one event, read with a short read).
    fn closed_bit(self) -> usize {
        match self {
            Direction::Read => READ_CLOSED,
            Direction::Write => WRITE_CLOSED,
        }
    }
}

/// Proof that a direction was ready at a given tick: what `clear` needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadyEvent {
    tick: usize,
    direction: Direction,
}

#[derive(Debug, Default)]
struct Waiters {
    /// Every task waiting to read (several may share a socket: `&UdpSocket`).
    reader: Vec<Waker>,
    writer: Vec<Waker>,
}

/// Readiness and waiters of one registered source.
#[derive(Debug)]
pub(crate) struct ScheduledIo {
    readiness: AtomicUsize,
    waiters: Mutex<Waiters>,
}

impl ScheduledIo {
    pub(crate) fn new() -> ScheduledIo {
        ScheduledIo {
            readiness: AtomicUsize::new(READABLE | WRITABLE),
            waiters: Mutex::new(Waiters::default()),
        }
    }

    /// Driver: an event brought `ready` (a mask of `READABLE`, `WRITABLE`
    /// and the closed bits, each closed bit with its direction's bit).
    /// Bumps the tick, sets the bits, and moves the wakers it satisfies into
    /// `wakers` (woken by the caller, outside every lock).
    pub(crate) fn set_ready(&self, ready: usize, wakers: &mut Vec<Waker>) {
        // AcqRel: the task's re-read under the waiter lock (Acquire) must see
        // these bits if our lock below comes after its own.
        let _ = self
            .readiness
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                let tick = (cur >> TICK_SHIFT).wrapping_add(1);
                Some((tick << TICK_SHIFT) | (cur & READY_MASK) | ready)
            });
        let mut w = self.waiters.lock();
        if ready & (READABLE | SHUTDOWN) != 0 {
            wakers.append(&mut w.reader);
        }
        if ready & (WRITABLE | SHUTDOWN) != 0 {
            wakers.append(&mut w.writer);
        }
    }

    /// Driver shutting down (or failed): every present and future wait fails.
    pub(crate) fn shut_down(&self, wakers: &mut Vec<Waker>) {
        self.set_ready(SHUTDOWN, wakers);
    }

    /// Task: is `direction` ready? If not, store the waker (one per task:
    /// a task that polls again replaces its own) and return `Pending`.
    pub(crate) fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
    ) -> Poll<Result<ReadyEvent, ShutDown>> {
        if let Some(r) = self.ready_now(direction) {
            return Poll::Ready(r);
        }
        let mut w = self.waiters.lock();
        let list = match direction {
            Direction::Read => &mut w.reader,
            Direction::Write => &mut w.writer,
        };
        // Re-read under the lock: see the module invariant.
        if let Some(r) = self.ready_now(direction) {
            return Poll::Ready(r);
        }
        if !list.iter().any(|x| x.will_wake(cx.waker())) {
            list.push(cx.waker().clone());
        }
        Poll::Pending
    }

    fn ready_now(&self, direction: Direction) -> Option<Result<ReadyEvent, ShutDown>> {
        let cur = self.readiness.load(Ordering::Acquire);
        if cur & SHUTDOWN != 0 {
            Some(Err(ShutDown))
        } else if cur & (direction.bit() | direction.closed_bit()) != 0 {
            Some(Ok(ReadyEvent {
                tick: cur >> TICK_SHIFT,
                direction,
            }))
        } else {
            None
        }
    }

    /// Task: the operation after `event` would block. Clear that readiness,
    /// unless an event came since (the tick moved): then try again.
    pub(crate) fn clear(&self, event: ReadyEvent) {
        let bit = event.direction.bit();
        let _ = self
            .readiness
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                (cur >> TICK_SHIFT == event.tick).then_some(cur & !bit)
            });
    }
}

/// The driver of a source is gone (its pool was dropped, or it failed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShutDown;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A new source, a counting waker, and the readable event every new
    /// source starts with.
    fn new_source() -> (ScheduledIo, Arc<Count>, Waker, ReadyEvent) {
        let io = ScheduledIo::new();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let Poll::Ready(Ok(seen)) =
            io.poll_ready(&mut Context::from_waker(&waker), Direction::Read)
        else {
            panic!("a new source starts out readable");
        };
        (io, count, waker, seen)
    }

    #[test]
    fn a_clear_after_a_newer_event_keeps_the_readiness() {
        let (io, _count, waker, seen) = new_source();
        let mut cx = Context::from_waker(&waker);
        // An event lands between the task's read and its clear.
        let mut wakers = Vec::new();
        io.set_ready(READABLE, &mut wakers);
        io.clear(seen);
        assert!(
            io.poll_ready(&mut cx, Direction::Read).is_ready(),
            "the newer event was cleared with the older readiness"
        );
    }

    #[test]
    fn a_close_stays_ready_after_the_short_read_that_clears() {
        let (io, _count, waker, seen) = new_source();
        let mut cx = Context::from_waker(&waker);
        io.clear(seen);
        // Data and the peer's close in one event; the task reads the data
        // in a short read and clears what it saw.
        let mut wakers = Vec::new();
        io.set_ready(READABLE | READ_CLOSED, &mut wakers);
        let Poll::Ready(Ok(event)) = io.poll_ready(&mut cx, Direction::Read) else {
            panic!("the event made the source readable");
        };
        io.clear(event);
        assert!(
            io.poll_ready(&mut cx, Direction::Read).is_ready(),
            "the close was cleared: the read of end-of-file would wait for an edge that never comes"
        );
        assert!(io.poll_ready(&mut cx, Direction::Write).is_ready());
    }

    #[test]
    fn a_waiting_task_is_woken_once_by_an_event_and_not_by_the_other_direction() {
        let (io, count, waker, seen) = new_source();
        let mut cx = Context::from_waker(&waker);
        io.clear(seen);
        assert!(io.poll_ready(&mut cx, Direction::Read).is_pending());
        assert!(io.poll_ready(&mut cx, Direction::Read).is_pending());
        let mut wakers = Vec::new();
        io.set_ready(WRITABLE, &mut wakers);
        assert!(wakers.is_empty(), "a writable event woke a reader");
        io.set_ready(READABLE, &mut wakers);
        assert_eq!(wakers.len(), 1, "one task polled twice is one waiter");
        wakers.drain(..).for_each(Waker::wake);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        let mut wakers = Vec::new();
        io.shut_down(&mut wakers);
        assert!(matches!(
            io.poll_ready(&mut cx, Direction::Write),
            Poll::Ready(Err(ShutDown))
        ));
    }
}
