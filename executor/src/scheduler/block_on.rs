//! `block_on`: run a future on the calling thread, sleeping on the thread's
//! own `CoreLatch` between polls.
//!
//! The future's waker sets the latch of the thread that runs `block_on` and
//! nothing else: it wakes that thread only (if it sleeps), never a worker on
//! the future's behalf, and touches no pool's counters.
//!
//! On a plain thread the latch comes with its own lock and condvar
//! ([`ThreadLatch`]). On a worker thread the latch is slept on through the
//! worker's own sleep state, with the full sleep protocol
//! (`WorkerThread::wait_until`): while the latch is unset the worker keeps
//! running its pool's tasks, and when it sleeps it is counted as sleeping, so
//! new work wakes it too. A one-worker pool therefore never deadlocks on a
//! `block_on` inside one of its tasks.
//!
//! A seeded pool's `block_on` on a thread that is not one of its logical
//! workers runs the pool itself (`seeded/`); on one of them, the latch is
//! waited on through the worker's `wait_until`, which steps the pool too.
//!
//! # Invariants
//!
//! * The latch is reset *before* each poll: a wake that lands during the poll
//!   leaves it SET, and the wait that follows returns at once. No wake is
//!   lost.
//! * Each thread caches one signal (`context/pool_cells.rs`) and lends it to one
//!   `block_on` at a time; a nested `block_on` on the same thread makes its
//!   own, so the outer call's wakes are never consumed by the inner loop.

use super::coop;
use super::registry::Registry;
use crate::context::pool_cells;
use crate::inspect::timeline::Kind;
use crate::sleep::block_on_wake::BlockOnWake;
use crate::sleep::latch::{CoreLatch, ThreadLatch};
use crate::task::error::hint_tokio_panic;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// For this thread; a plain thread in `pool`'s `block_on` holds its
/// clock.
fn signal_for_current_thread(pool: Option<&Arc<Registry>>) -> Arc<BlockOnWake<Registry>> {
    Arc::new(match (pool_cells::worker(), pool) {
        (Some(w), _) => BlockOnWake::Worker {
            latch: CoreLatch::new(),
            pool: Arc::clone(w.registry()),
            index: w.index(),
        },
        (None, Some(registry)) => BlockOnWake::PoolThread {
            latch: ThreadLatch::new(),
            pool: Arc::clone(registry),
        },
        (None, None) => BlockOnWake::Thread(ThreadLatch::new()),
    })
}

/// Was `signal` made for the thread's current role? (A worker thread
/// stops being one when its main loop ends.) Only a `Thread` or a
/// `Worker` signal is cached.
fn fits_current_thread(signal: &BlockOnWake<Registry>) -> bool {
    match (signal, pool_cells::worker()) {
        (BlockOnWake::Thread(_), None) => true,
        (BlockOnWake::Worker { pool, index, .. }, Some(w)) => {
            Arc::ptr_eq(pool, w.registry()) && *index == w.index()
        }
        _ => false,
    }
}

/// Owner: wait until the latch is set.
fn wait(signal: &BlockOnWake<Registry>) {
    match signal {
        BlockOnWake::Thread(t) => t.wait(),
        BlockOnWake::PoolThread { latch, pool } => {
            latch.wait_then(|| pool.sleep_manager().release_hold());
        }
        BlockOnWake::Worker { latch, .. } => {
            let worker = pool_cells::worker()
                .expect("a worker's block_on signal is only waited on by that worker");
            let start = worker.trace_now();
            worker.wait_until(latch);
            worker.trace(Kind::BlockOn, start, 0);
        }
    }
}

/// Gives the borrowed signal back to the thread's cache, also on a panic
/// (not a `PoolThread` one: it keeps its pool alive).
struct Lend(Option<Arc<BlockOnWake<Registry>>>);

impl Drop for Lend {
    fn drop(&mut self) {
        if let Some(signal) = self.0.take() {
            if !matches!(&*signal, BlockOnWake::PoolThread { .. }) {
                pool_cells::return_block_on_signal(signal);
            }
        }
    }
}

/// A plain thread in `pool`'s `block_on` holds its clock while awake:
/// from entry to exit (also on a panic), except while it sleeps. A nested
/// `block_on` of the same pool counts the thread once: its sleeps are the
/// thread's.
struct Holding<'a> {
    registry: &'a Arc<Registry>,
    /// What the thread held before (`context::plain_cells::replace_clock_held`).
    outer: usize,
}

impl<'a> Holding<'a> {
    fn enter(registry: &'a Arc<Registry>) -> Holding<'a> {
        let key = Arc::as_ptr(registry) as usize;
        let outer = crate::context::plain_cells::replace_clock_held(key);
        if outer != key {
            // Awake from here until the first sleep (or the end).
            registry.sleep_manager().hold();
        }
        Holding { registry, outer }
    }
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        let key = crate::context::plain_cells::replace_clock_held(self.outer);
        if self.outer != key {
            self.registry.sleep_manager().release_hold();
        }
    }
}

/// Run `future` to completion on this thread.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    block_on_in(None, future)
}

/// Run `future` to completion on this thread; on a plain thread, holding
/// `pool`'s clock while the future is polled or woken
/// (`sleep/activity.rs`).
pub(crate) fn block_on_in<F: Future>(pool: Option<&Arc<Registry>>, future: F) -> F::Output {
    if let Some((registry, seeded)) = pool.and_then(|r| Some((r, r.seeded()?))) {
        match pool_cells::worker() {
            // No thread sleeps here: this one steps the logical workers.
            None => return seeded.block_on(future),
            Some(w) if !Arc::ptr_eq(registry, w.registry()) => panic!(
                "a seeded pool's block_on was called inside a task of another pool: \
                 call it from a thread of its own (a #[pool::test] or main)"
            ),
            // One of its logical workers: `wait_until` steps the pool.
            Some(_) => {}
        }
    }
    let pool = pool.filter(|_| pool_cells::worker().is_none());
    let _holding = pool.map(Holding::enter);
    let signal = match pool {
        Some(registry) => signal_for_current_thread(Some(registry)),
        None => pool_cells::take_block_on_signal()
            .filter(|s| fits_current_thread(s))
            .unwrap_or_else(|| signal_for_current_thread(None)),
    };
    let lend = Lend(Some(Arc::clone(&signal)));
    let waker = Waker::from(Arc::clone(&signal));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    let output = hint_tokio_panic(|| loop {
        signal.latch().reset();
        if let Poll::Ready(output) = coop::budgeted(|| future.as_mut().poll(&mut cx)) {
            break output;
        }
        wait(&signal);
    });
    drop(lend);
    output
}
