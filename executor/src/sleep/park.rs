//! `Park`: what the sleep manager needs of the I/O driver, so that one
//! sleeper can block in it instead of on its condvar.
//!
//! The pool's driver (`crate::io::Driver`) implements it over epoll and an
//! eventfd; the loom models implement it with a loom lock and condvar
//! (`crate::models::park`), so that the protocol code that blocks in the
//! driver and wakes it is the code the models explore.
//!
//! # Contract
//!
//! * At most one thread at a time holds the driver: `try_acquire` returning
//!   true makes the caller the holder until its `release`.
//! * `park` (holder only) returns after an I/O event or due timer (their
//!   wakers are pushed into `wakers`; a timer of a paused clock is due
//!   only once the clock jumped to it, and it jumps only while `is_quiet`),
//!   after an `unpark` made by any thread
//!   since the holder's previous `park` returned (an unpark is never lost,
//!   even one that comes before `park` is entered), or spuriously.

use std::fmt::Debug;
use std::task::{Context, Poll, Waker};

pub(crate) trait Park: Send + Sync + Debug {
    /// Become the holder; false if another thread holds the driver.
    fn try_acquire(&self) -> bool;

    /// The holder: block until readiness, a due timer, or an unpark. With
    /// the pool's clock paused, a due timer is one the clock jumped to:
    /// the driver may jump only after `is_quiet` returned true, read after
    /// a poll without blocking found nothing (`activity.rs`).
    fn park(&self, wakers: &mut Vec<Waker>, is_quiet: &dyn Fn() -> bool);

    /// The holder: stop holding the driver.
    fn release(&self);

    /// Any thread: make the holder's `park` return (or its next one).
    fn unpark(&self);

    /// Any thread: the pool just became quiet (`Activity::end`). A driver
    /// whose clock is paused unparks its holder, which decides again
    /// whether the clock may jump; else nothing.
    fn pool_quiet(&self);
}

/// A runtime that a sleeping worker's thread drives while it sleeps, in
/// place of its condvar: with `tokio-compat`, each worker's own tokio
/// runtime (`tokio_compat/worker_runtime.rs`), so that tokio's tasks and I/O on
/// that worker keep running while the pool counts it asleep. See
/// README.md, "Sleeping in a guest runtime".
///
/// # Contract
///
/// * `block_on` polls `until` as a future on the calling thread (with the
///   guest runtime's waker in its context) and returns once it is ready; between
///   polls it may run the guest runtime's own work, and it polls `until` again
///   whenever that waker is woken (and maybe spuriously).
/// * With `driver` given, the caller holds the pool's I/O driver: while it
///   waits, the guest runtime watches it too (readiness, due timers, `unpark`), and
///   when a poll of it brings work it leaves their wakers in `driver` and
///   polls `until` with `brought_work` true, which then returns ready (the
///   caller wakes them, as its own work, after `block_on` returns).
/// * Work the guest runtime runs meanwhile is not the sleeping worker's: it must not
///   see this thread as that worker (a spawn from it goes through the
///   injector and wakes a sleeper, maybe this one).
pub(crate) trait GuestRuntime {
    /// Can this thread block in the guest runtime now? (Not from inside it.)
    fn can_block(&self) -> bool;

    /// Drive the guest runtime until `until` is ready; see the contract.
    fn block_on(
        &self,
        driver: Option<&mut Vec<Waker>>,
        until: &mut dyn FnMut(&mut Context<'_>, bool) -> Poll<()>,
    );
}
