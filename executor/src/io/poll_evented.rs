//! `PollEvented`: a non-blocking `mio` source registered with a pool's
//! driver, and the one loop every socket operation goes through.
//!
//! # Invariants
//!
//! * The source is registered from `new` until `drop`, with the driver of
//!   the pool that was current at `new`; `drop` deregisters it before the
//!   source (and its file descriptor) is closed.
//! * An operation is tried while its direction looks ready; only a
//!   `WouldBlock` clears the readiness it was tried under (see
//!   `scheduled_io.rs`), and then the task waits for the next event.

use super::driver::{shut_down_error, Driver};
use super::scheduled_io::{Direction, ScheduledIo, ShutDown};
use mio::event::Source;
use mio::Token;
use std::io;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

#[derive(Debug)]
pub(crate) struct PollEvented<S: Source> {
    source: S,
    token: Token,
    io: Arc<ScheduledIo>,
    driver: Arc<Driver>,
}

impl<S: Source> PollEvented<S> {
    /// Register `source` with the current pool's driver.
    pub(crate) fn new(mut source: S) -> io::Result<PollEvented<S>> {
        let driver = crate::pool::with_current(|registry| Arc::clone(registry.io_driver()));
        let (token, io) = driver.register(&mut source)?;
        Ok(PollEvented {
            source,
            token,
            io,
            driver,
        })
    }

    pub(crate) fn source(&self) -> &S {
        &self.source
    }

    /// Run `op` on the source until it does not block, waiting for
    /// `direction` between tries.
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        loop {
            let event = match ready!(self.io.poll_ready(cx, direction)) {
                Ok(event) => event,
                Err(ShutDown) => return Poll::Ready(Err(shut_down_error())),
            };
            match op(&self.source) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.io.clear(event),
                result => return Poll::Ready(result),
            }
        }
    }
}

impl<S: Source> Drop for PollEvented<S> {
    fn drop(&mut self) {
        self.driver.deregister(self.token, &mut self.source);
    }
}
