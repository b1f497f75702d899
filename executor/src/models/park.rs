//! A stand-in for the I/O driver (`io::Driver`), for the models: the
//! same `Park` contract over a loom lock and condvar. An unpark sets a flag
//! the next `park` consumes (as the driver's eventfd stays readable until
//! polled), and `deliver` stands for the OS reporting readiness: it queues
//! a waker and wakes the holder.

use crate::sleep::park::Park;
use crate::sync::{AtomicBool, Condvar, Mutex, Ordering};
use loom::sync::Arc;
use std::task::Waker;

#[derive(Debug, Default)]
struct Pending {
    unparked: bool,
    ready: Vec<Waker>,
}

#[derive(Debug, Default)]
pub(super) struct StandInDriver {
    held: AtomicBool,
    pending: Mutex<Pending>,
    condvar: Condvar,
}

impl StandInDriver {
    /// The OS reports readiness of a source whose task waits with `waker`.
    pub(super) fn deliver(&self, waker: Waker) {
        self.pending.lock().ready.push(waker);
        self.condvar.notify_one();
    }
}

impl Park for StandInDriver {
    fn try_acquire(&self) -> bool {
        self.held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    fn park(&self, wakers: &mut Vec<Waker>, _is_quiet: &dyn Fn() -> bool) {
        let mut pending = self.pending.lock();
        while !pending.unparked && pending.ready.is_empty() {
            pending = self.condvar.wait(pending);
        }
        pending.unparked = false;
        wakers.append(&mut pending.ready);
    }

    fn release(&self) {
        self.held.store(false, Ordering::Release);
    }

    fn unpark(&self) {
        self.pending.lock().unparked = true;
        self.condvar.notify_one();
    }

    /// No clock here (`paused_jump.rs` models one).
    fn pool_quiet(&self) {}
}

/// `SleepManager` holds a `std::sync::Arc<dyn Park>`; a model keeps a loom `Arc`
/// to the same stand-in (to deliver readiness, to read its clock).
#[derive(Debug)]
pub(super) struct Forward<P>(pub(super) Arc<P>);

impl<P: Park> Park for Forward<P> {
    fn try_acquire(&self) -> bool {
        self.0.try_acquire()
    }
    fn park(&self, wakers: &mut Vec<Waker>, is_quiet: &dyn Fn() -> bool) {
        self.0.park(wakers, is_quiet)
    }
    fn release(&self) {
        self.0.release()
    }
    fn unpark(&self) {
        self.0.unpark()
    }
    fn pool_quiet(&self) {
        self.0.pool_quiet()
    }
}
