//! The I/O driver of a pool: readiness from the OS (through `mio`),
//! registered sources, and the loop every socket operation goes through.
//!
//! The driver has no thread of its own: the pool's workers drive it, and the
//! sleep protocol decides which one blocks in it. `README.md` beside this
//! file describes who polls it when, and why no readiness and no wakeup is
//! lost; `../sleep/README.md` has the driver-blocked sleeper's state and its
//! invariant.
//!
//! * `driver.rs`: the epoll instance, the source slots, polling and
//!   dispatching events and due timers, shutdown.
//! * `scheduled_io.rs`: one source's readiness (with its tick) and waiters.
//! * `poll_evented.rs`: a registered `mio` source and `poll_io`, the
//!   try-then-wait loop of every socket operation.
//!
//! The public types built on it are in `../net/` (sockets) and `../time/`
//! (timers, whose store the driver owns).

mod driver;
mod poll_evented;
mod scheduled_io;

pub(crate) use driver::Driver;
pub(crate) use poll_evented::PollEvented;
pub(crate) use scheduled_io::Direction;
