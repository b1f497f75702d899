//! The I/O driver of a pool: readiness from the OS (through `mio`),
//! registered sources, timers, and the loop every socket operation goes
//! through. A floor above the scheduler: it finds the current pool's driver
//! through `context.rs`, and the scheduler sees the driver only through
//! `scheduler::IoDriver` (implemented in `driver.rs`) and the sleep
//! protocol's `Park`.
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
//! * `timers.rs`: the timer store (an ordered map, one per driver).
//! * `timer_entry.rs`: one timer of the store, as `time::Sleep` holds it.
//!
//! The public types built on it are in `../net/` (sockets) and `../time/`
//! (timers): they keep only the public API.

mod driver;
mod poll_evented;
mod scheduled_io;
mod timer_entry;
mod timers;

pub(crate) use poll_evented::PollEvented;
pub(crate) use scheduled_io::Direction;
pub(crate) use timer_entry::TimerEntry;
