//! `PollEvented`: a non-blocking `mio` source registered with a pool's
//! driver, and the one loop every socket operation goes through.
//!
//! # Invariants
//!
//! * The source is registered from `new` until `drop`, with the driver of
//!   the pool that was current at `new`; `drop` deregisters it before the
//!   source (and its file descriptor) is closed.
//! * An operation is tried while its direction looks ready; a `WouldBlock`
//!   (or a short stream transfer, `poll_transfer`) clears the readiness it
//!   was tried under (see `scheduled_io.rs`), and the task then waits for
//!   the next event.
//! * A wait for readiness records, for the task being polled, what it
//!   waits on (`task/waits.rs`): the source's type, descriptor and the line
//!   that made it; the pool's own sources (`internal`: a signal's pipe, a
//!   child's pidfd) record nothing, their futures say what they wait for.

use super::driver::{shut_down_error, Driver};
use super::scheduled_io::{Direction, ScheduledIo, ShutDown};
use crate::scheduler::coop;
use crate::task::noting::note_wait;
use crate::task::waits::{self, Resource, Wait, WaitKind};
use mio::event::Source;
use mio::Token;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, RawFd};
use std::panic::Location;
use std::ptr;
use std::sync::Arc;
use std::task::{Context, Poll};

#[derive(Debug)]
pub(crate) struct PollEvented<S: Source> {
    source: S,
    token: Token,
    io: Arc<ScheduledIo>,
    driver: Arc<Driver>,
    /// What a task waiting on this source records: its type, the site of
    /// the line that made it (`waits::site_of`) and its descriptor; `None`
    /// for an internal source.
    made: Option<(Resource, u16, RawFd)>,
}

impl<S: Source + AsRawFd> PollEvented<S> {
    /// Register `source`, a `resource` made at `at`, with the current
    /// pool's driver.
    pub(crate) fn new(
        source: S,
        resource: Resource,
        at: &'static Location<'static>,
    ) -> io::Result<PollEvented<S>> {
        let fd = source.as_raw_fd();
        PollEvented::register(source, Some((resource, waits::site_of(at), fd)))
    }

    /// Register one of the pool's own sources, whose futures record what
    /// they wait for themselves.
    pub(crate) fn internal(source: S) -> io::Result<PollEvented<S>> {
        PollEvented::register(source, None)
    }

    fn register(mut source: S, made: Option<(Resource, u16, RawFd)>) -> io::Result<PollEvented<S>> {
        let driver = crate::context::current::enabled_driver();
        let (token, io) = driver.register(&mut source)?;
        driver.did_io();
        Ok(PollEvented {
            source,
            token,
            io,
            driver,
            made,
        })
    }
}

impl<S: Source> PollEvented<S> {
    pub(crate) fn source(&self) -> &S {
        &self.source
    }

    /// The driver the source is registered with (its pool's).
    pub(crate) fn driver(&self) -> &Driver {
        &self.driver
    }

    /// Take the source back out, deregistered from the driver.
    pub(crate) fn into_inner(self) -> S {
        let mut this = ManuallyDrop::new(self);
        let PollEvented {
            source,
            token,
            driver,
            ..
        } = &mut *this;
        driver.deregister(*token, source);
        // SAFETY: `this` is never dropped (`ManuallyDrop`), so each field is
        // read out exactly once here and dropped (or returned) once.
        let (source, io, driver) = unsafe {
            (
                ptr::read(&this.source),
                ptr::read(&this.io),
                ptr::read(&this.driver),
            )
        };
        drop((io, driver));
        source
    }

    /// Ready once `direction` is ready for real: when the readiness the
    /// driver reported (or the optimistic one of a new source) is seen, the
    /// descriptor is asked with `poll(2)`, and a stale readiness is cleared
    /// and waited for again. So a caller that finds nothing to read after it
    /// does not spin, and one that left data unread is not left waiting for
    /// an edge that will not come.
    pub(crate) fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
    ) -> Poll<io::Result<()>>
    where
        S: AsRawFd,
    {
        self.poll_io(cx, direction, |s| {
            if fd_is_ready(s.as_raw_fd(), direction)? {
                Ok(())
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            }
        })
    }

    /// Run `op` on the source until it does not block, waiting for
    /// `direction` between tries.
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_until(cx, direction, op, |_| false)
    }

    /// `poll_io` for a stream transfer of up to `len` bytes. A short one
    /// (some bytes, fewer than asked) emptied the receive buffer or filled
    /// the send buffer, so it clears the readiness it ran under, as a
    /// `WouldBlock` would: the next transfer waits for the next edge instead
    /// of trying and failing first. That is one system call less per request
    /// of a request-response protocol (tokio does the same on epoll). Data
    /// that arrives after the transfer brings a new edge, and an edge that
    /// came since the readiness was read moved its tick: the clear then does
    /// nothing.
    pub(crate) fn poll_transfer(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        len: usize,
        op: impl FnMut(&S) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        self.poll_io_until(cx, direction, op, |&n| n > 0 && n < len)
    }

    /// A stream read into `buf` (see `poll_transfer`): what every
    /// `AsyncRead::poll_read` of a socket or pipe is.
    pub(crate) fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>>
    where
        for<'a> &'a S: Read,
    {
        self.poll_transfer(cx, Direction::Read, buf.len(), |mut s| s.read(buf))
    }

    /// A vectored stream read (see `poll_transfer`).
    pub(crate) fn poll_read_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
    ) -> Poll<io::Result<usize>>
    where
        for<'a> &'a S: Read,
    {
        let len = bufs.iter().map(|b| b.len()).sum();
        self.poll_transfer(cx, Direction::Read, len, |mut s| s.read_vectored(bufs))
    }

    /// A stream write of `buf` (see `poll_transfer`).
    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>>
    where
        for<'a> &'a S: Write,
    {
        self.poll_transfer(cx, Direction::Write, buf.len(), |mut s| s.write(buf))
    }

    /// A vectored stream write (see `poll_transfer`).
    pub(crate) fn poll_write_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>>
    where
        for<'a> &'a S: Write,
    {
        let len = bufs.iter().map(|b| b.len()).sum();
        self.poll_transfer(cx, Direction::Write, len, |mut s| s.write_vectored(bufs))
    }

    fn poll_io_until<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        op: impl FnMut(&S) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        // Every socket, pipe and descriptor operation spends the task's
        // cooperative budget when it completes: a task on an always-ready
        // source yields now and then (`scheduler/coop.rs`).
        coop::budget_poll(cx, |cx| self.poll_io_loop(cx, direction, op, drained))
    }

    fn poll_io_loop<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        loop {
            let event = match self.io.poll_ready(cx, direction) {
                Poll::Ready(Ok(event)) => event,
                Poll::Ready(Err(ShutDown)) => return Poll::Ready(Err(shut_down_error())),
                Poll::Pending => {
                    if let Some((resource, site, fd)) = self.made {
                        let kind = match direction {
                            Direction::Read => WaitKind::Read,
                            Direction::Write => WaitKind::Write,
                        };
                        note_wait(Wait {
                            kind,
                            on: resource as u8,
                            site,
                            a: fd as u64,
                        });
                    }
                    return Poll::Pending;
                }
            };
            match op(&self.source) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.io.clear(event),
                Ok(r) => {
                    if drained(&r) {
                        self.io.clear(event);
                    }
                    // Its answer may be in flight: a paused clock waits a
                    // little before it jumps (`Driver::paused_park`).
                    self.driver.did_io();
                    return Poll::Ready(Ok(r));
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl<S: Source> Drop for PollEvented<S> {
    fn drop(&mut self) {
        self.driver.deregister(self.token, &mut self.source);
    }
}

/// Is `fd` readable (or writable) now? One `poll(2)` with no timeout; a
/// hang-up or an error counts as ready (the operation will report it).
fn fd_is_ready(fd: RawFd, direction: Direction) -> io::Result<bool> {
    let events = match direction {
        Direction::Read => libc::POLLIN,
        Direction::Write => libc::POLLOUT,
    };
    let mut pollfd = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    loop {
        // SAFETY: `pollfd` is one valid `struct pollfd`, and its count is 1.
        let n = unsafe { libc::poll(&mut pollfd, 1, 0) };
        if n >= 0 {
            return Ok(
                pollfd.revents & (events | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0,
            );
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
