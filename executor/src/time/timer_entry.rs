//! `TimerEntry`: one timer in the current pool's timer store, as a future
//! of `time/` (`Sleep`) holds it.
//!
//! # Invariants
//!
//! * The entry belongs to the driver of the pool that was current when it
//!   was made, and keeps that driver alive.
//! * At most one registration at a time: it holds the key and the
//!   identity (`WakerId`) of the waker stored with it, so a poll with the
//!   same waker costs no lock and no clone, and a poll with another
//!   replaces the stored one.
//! * A registered timer is ready once the store fired it: read without a
//!   lock (`Timers::fired`), and without reading the clock.
//!
//! # Why an identity, not a clone
//!
//! The store holds a clone of the waker while the timer is registered and
//! has not fired: what the identity points to cannot be freed and its
//! address given to another waker meanwhile. A poll compares the identity
//! with its waker's first, then asks whether the timer fired. If they are
//! equal and the timer has not fired, the stored waker is the poller's.
//! If the store's clone was dropped (the fire took it) before another
//! waker reused its address, the fire's store of `fired_until` came before
//! that drop, so the poll's later read of it sees the timer fired.
//! * Dropping or cancelling the entry takes its timer out of the store.
//! * A deadline is never early: `poll_until` is ready only once `deadline`
//!   has passed, or the driver shut down (the pool is gone).

use super::timers::{Inserted, TimerKey};
use crate::scheduler::io_driver::{Driver, IoDriver};
use crate::sleep::park::Park;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// A waker's identity, as `Waker::will_wake` compares them: its data and
/// vtable addresses (the module docs say why it is enough).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WakerId {
    data: usize,
    vtable: usize,
}

impl WakerId {
    fn of(waker: &Waker) -> WakerId {
        WakerId {
            data: waker.data() as usize,
            vtable: std::ptr::from_ref(waker.vtable()) as usize,
        }
    }
}

pub(crate) struct TimerEntry {
    driver: Arc<Driver>,
    /// The registered timer and the identity of the waker it holds, once
    /// polled.
    registered: Option<(TimerKey, WakerId)>,
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
        let timers = self.driver.timers();
        let Some((key, registered_id)) = &mut self.registered else {
            let now = self.now();
            if now >= deadline || self.driver.is_shut_down() {
                return Poll::Ready(());
            }
            let shard = self.driver.timer_shard();
            match timers.insert(shard, now, deadline, cx.waker().clone()) {
                Inserted::Yes { key, unpark } => {
                    if unpark {
                        self.driver.unpark();
                    }
                    self.registered = Some((key, WakerId::of(cx.waker())));
                    return Poll::Pending;
                }
                Inserted::ShutDown => return Poll::Ready(()),
            }
        };
        // The identity first, then whether it fired (the module docs).
        let id = WakerId::of(cx.waker());
        let same = *registered_id == id;
        if timers.fired(*key) {
            // Fired (its deadline has passed on the store's clock), or the
            // store shut down; the store holds it no more (but for the
            // store's one exception, which its next fire wakes in vain).
            self.registered = None;
            return Poll::Ready(());
        }
        if !same {
            if !timers.update(self.driver.timer_shard(), *key, cx.waker()) {
                // Gone: fired since the read above, or shut down.
                self.registered = None;
                return Poll::Ready(());
            }
            *registered_id = id;
        }
        Poll::Pending
    }
}

impl Drop for TimerEntry {
    fn drop(&mut self) {
        self.cancel();
    }
}
