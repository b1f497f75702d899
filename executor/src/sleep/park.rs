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
//!   wakers are pushed into `wakers`), after an `unpark` made by any thread
//!   since the holder's previous `park` returned (an unpark is never lost,
//!   even one that comes before `park` is entered), or spuriously.

use std::fmt::Debug;
use std::task::Waker;

pub(crate) trait Park: Send + Sync + Debug {
    /// Become the holder; false if another thread holds the driver.
    fn try_acquire(&self) -> bool;

    /// The holder: block until readiness, a due timer, or an unpark.
    fn park(&self, wakers: &mut Vec<Waker>);

    /// The holder: stop holding the driver.
    fn release(&self);

    /// Any thread: make the holder's `park` return (or its next one).
    fn unpark(&self);
}
