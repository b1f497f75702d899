//! `TimerEntry`: one timer in the current pool's timer store, as a future
//! of `time/` (`Sleep`) holds it.
//!
//! # Invariants
//!
//! * The entry belongs to the driver of the pool that was current when it
//!   was made, and keeps that driver alive.
//! * At most one registration at a time: it holds the key and a clone of
//!   the waker stored with it, so a poll with the same waker costs no lock,
//!   and a poll with another replaces the stored one.
//! * Dropping or cancelling the entry takes its timer out of the store.
//! * A deadline is never early: `poll_until` is ready only once `deadline`
//!   has passed, or the driver shut down (the pool is gone).

use super::timers::{Inserted, TimerKey};
use crate::scheduler::io_driver::{Driver, IoDriver};
use crate::sleep::park::Park;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

pub(crate) struct TimerEntry {
    driver: Arc<Driver>,
    /// The registered timer and the waker it holds, once polled.
    registered: Option<(TimerKey, Waker)>,
}

impl TimerEntry {
    /// An entry in the current pool's timer store, not registered yet.
    pub(crate) fn new() -> TimerEntry {
        TimerEntry::on(crate::context::current::enabled_driver())
    }

    /// An entry in `driver`'s timer store (a pool's, enabled for its
    /// sleepers), not registered yet.
    pub(crate) fn on(driver: Arc<Driver>) -> TimerEntry {
        TimerEntry {
            driver,
            registered: None,
        }
    }

    /// The time on the clock of the entry's pool.
    pub(crate) fn now(&self) -> Instant {
        self.driver.clock().now()
    }

    /// Is a timer registered?
    pub(crate) fn is_registered(&self) -> bool {
        self.registered.is_some()
    }

    /// Take the timer out of the store, if one is registered.
    pub(crate) fn cancel(&mut self) {
        if let Some((key, _)) = self.registered.take() {
            self.driver
                .timers()
                .remove(|| self.driver.timer_shard(), key);
        }
    }

    /// Ready once `deadline` (in the pool's time) has passed (or the pool
    /// is gone); until then the timer is registered with `cx`'s waker.
    pub(crate) fn poll_until(&mut self, deadline: Instant, cx: &mut Context<'_>) -> Poll<()> {
        if self.now() >= deadline || self.driver.is_shut_down() {
            self.cancel();
            return Poll::Ready(());
        }
        let timers = self.driver.timers();
        match &mut self.registered {
            None => match timers.insert(self.driver.timer_shard(), deadline, cx.waker().clone()) {
                Inserted::Yes { key, unpark } => {
                    if unpark {
                        self.driver.unpark();
                    }
                    self.registered = Some((key, cx.waker().clone()));
                }
                Inserted::ShutDown => return Poll::Ready(()),
            },
            Some((key, waker)) => {
                if !waker.will_wake(cx.waker()) {
                    if !timers.update(self.driver.timer_shard(), *key, cx.waker()) {
                        // Not before the deadline (checked above): the
                        // store shut down.
                        self.registered = None;
                        return Poll::Ready(());
                    }
                    waker.clone_from(cx.waker());
                }
            }
        }
        Poll::Pending
    }
}

impl Drop for TimerEntry {
    fn drop(&mut self) {
        self.cancel();
    }
}
