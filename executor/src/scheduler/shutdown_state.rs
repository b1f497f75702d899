//! `ShutdownState`: what every spawn and injection reads of a shutdown, and
//! what the workers report to it. A leaf of the scheduler: the registry
//! holds one, and `shutdown.rs` runs the steps that change it.

use crate::sync::{fence, AtomicBool, Ordering};
use parking_lot::{Condvar, Mutex};
use std::time::Instant;

/// What every spawn and injection reads of a shutdown, and what the workers
/// report to it.
#[derive(Debug)]
pub(crate) struct ShutdownState {
    shutting_down: AtomicBool,
    /// Set once step 5 has drained the queues.
    drained: AtomicBool,
    /// Workers that have left their main loop, for a bounded wait. (Not
    /// part of the sleep protocol, so plain `parking_lot`.)
    exited: Mutex<usize>,
    exited_cond: Condvar,
}

impl ShutdownState {
    pub(super) fn new() -> ShutdownState {
        ShutdownState {
            shutting_down: AtomicBool::new(false),
            drained: AtomicBool::new(false),
            exited: Mutex::new(0),
            exited_cond: Condvar::new(),
        }
    }

    /// Step 1: from now on, new spawns are cancelled at once.
    pub(super) fn begin(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// Step 5 has drained the queues once; it drains them again after this,
    /// and a push that misses that drain is drained by its pusher.
    pub(super) fn drained(&self) {
        self.drained.store(true, Ordering::SeqCst);
        // Pairs with the fence of `late_push`: a push the drain after this
        // misses sees `drained`.
        fence(Ordering::SeqCst);
    }

    #[inline]
    pub(super) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// A push into the injector landed after shutdown began: must its pusher
    /// drain the queues itself? The fence pairs with the one in
    /// `drained`: either step 5's last drain sees the push, or
    /// this load sees `drained`.
    pub(super) fn late_push(&self) -> bool {
        fence(Ordering::SeqCst);
        self.drained.load(Ordering::SeqCst)
    }

    /// A worker left its main loop.
    pub(super) fn worker_exited(&self) {
        *self.exited.lock() += 1;
        self.exited_cond.notify_one();
    }

    /// Wait until `expected` workers have exited, or until `deadline`. True
    /// if they all did.
    pub(super) fn wait_for_exits(&self, expected: usize, deadline: Option<Instant>) -> bool {
        let mut exited = self.exited.lock();
        while *exited < expected {
            match deadline {
                None => self.exited_cond.wait(&mut exited),
                Some(d) => {
                    if self.exited_cond.wait_until(&mut exited, d).timed_out() {
                        return *exited >= expected;
                    }
                }
            }
        }
        true
    }
}
