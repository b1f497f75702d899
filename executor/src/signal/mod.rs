//! Signals, delivered through the current pool's I/O driver: [`ctrl_c`],
//! and [`unix::signal`] for any catchable signal.
//!
//! No thread of the pool's or of a signal library's own waits for them: the
//! handler (installed through `signal-hook-registry`, which installs and
//! chains handlers correctly) writes to a pipe that the waiting pools watch
//! as I/O, so a signal wakes a pool asleep in its driver like a readable
//! socket does. Once a signal has a handler here, it keeps it for the life
//! of the process: SIGINT and SIGTERM then no longer end the process by
//! themselves (a service drains, then exits).
//!
//! # Examples
//!
//! A service that drains on SIGTERM or Ctrl-C:
//!
//! ```no_run
//! use futures::FutureExt;
//! use pool::signal::unix::{signal, SignalKind};
//!
//! #[pool::main]
//! async fn main() -> std::io::Result<()> {
//!     let mut term = signal(SignalKind::terminate())?;
//!     futures::select! {
//!         _ = term.recv().fuse() => println!("SIGTERM: draining"),
//!         r = pool::signal::ctrl_c().fuse() => { r?; println!("Ctrl-C: draining") }
//!     }
//!     Ok(())
//! }
//! ```

pub(crate) mod delivery;
pub mod unix;

use std::io;

/// Waits for the next Ctrl-C (SIGINT) from now on.
///
/// The first call installs the process's SIGINT handler (see the module
/// docs): from then on Ctrl-C no longer ends the process by itself.
///
/// # Errors
///
/// When the handler cannot be installed, or the pool that drives the wait
/// was dropped before a SIGINT came.
///
/// # Examples
///
/// ```
/// # pool::block_on(async {
/// let mut ctrl_c = Box::pin(pool::signal::ctrl_c());
/// // The first poll installs the handler and starts listening.
/// assert!(futures::poll!(&mut ctrl_c).is_pending());
/// // SAFETY: signalling this very process, which now handles SIGINT.
/// unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
/// ctrl_c.await.unwrap();
/// # });
/// ```
#[track_caller]
pub fn ctrl_c() -> impl std::future::Future<Output = io::Result<()>> {
    let site = crate::task::waits::site_of(std::panic::Location::caller());
    async move {
        let mut interrupt = unix::signal_at(unix::SignalKind::interrupt(), Some(site))?;
        interrupt.recv().await.ok_or_else(|| {
            io::Error::other("the pool that watched for Ctrl-C was shut down before it came")
        })
    }
}
