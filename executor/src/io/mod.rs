//! Any file descriptor on the current pool's I/O driver: [`Async`].
//!
//! Each pool has one I/O driver (an epoll instance, through `mio`) that its
//! own workers drive: the worker asleep in it blocks until an event, and
//! busy workers look at it now and then. The pool's sockets
//! ([`crate::net`]), process pipes and exits ([`crate::process`]) and
//! signals ([`crate::signal`]) are on it; [`Async`] puts any other
//! descriptor there (a pipe, an eventfd, inotify, a netlink socket).
//!
//! (Inside the crate `io/` is the driver itself, a floor above `scheduler/`
//! and `time/`: `README.md` beside this file describes who
//! polls it when, and why no readiness and no wakeup is lost. Its files:
//! `driver.rs`, the epoll instance, the source slots, polling and
//! dispatching, shutdown; `scheduled_io.rs`, one source's readiness and
//! waiters; `poll_evented.rs`, a registered source and `poll_io`, the
//! try-then-wait loop of every socket, pipe and descriptor operation;
//! `async_fd.rs`, `Async`; `tokio_io.rs`, tokio's I/O traits on every
//! stream, feature `tokio-io`; `uring.rs`, an io_uring of `pool::fs`; `ring_slots.rs`, the driver's
//! rings, one per worker. The
//! timer store the driver fires, and the pool's clock, are in `time/`.)

pub(crate) mod async_fd;
pub(crate) mod driver;
pub(crate) mod io_grace;
pub(crate) mod poll_evented;
#[cfg(target_os = "linux")]
pub(crate) mod ring_slots;
pub(crate) mod scheduled_io;
#[cfg(feature = "tokio-io")]
pub(crate) mod tokio_io;
#[cfg(target_os = "linux")]
pub(crate) mod uring;

pub use async_fd::Async;
