//! `TokioRuntimes`: a pool's tokio runtimes (feature `tokio-compat`), one
//! per worker, built when the pool starts and each taken by its worker
//! (`worker_runtime.rs`); the handles and metrics every worker reads of the
//! others (`Peer`); outside threads entering them: blocking threads in turn
//! (`Registry::enter_tokio`), a `block_on` future's polls the lightest, on
//! a short tokio budget (`Registry::poll_in_tokio`); and
//! shutdown's last step, for the runtimes no worker took.

use super::outside_polls::OutsidePolls;
use crate::context::thread_kind::ThreadKind;
use crate::scheduler::config::BlockingConfig;
use crate::scheduler::thread_name::set_kernel_name;
use parking_lot::Mutex;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};
use tokio::task::coop::{has_budget_remaining, poll_proceed, RestoreOnPending};

/// The pool's tokio runtimes: one per worker, taken by it when it starts.
#[derive(Debug)]
pub(crate) struct TokioRuntimes {
    runtimes: Box<[Mutex<Option<Runtime>>]>,
    /// Every runtime's handle and metrics, in worker order, shared with
    /// the workers (`WorkerRuntime::balance`).
    peers: Arc<[Peer]>,
    /// The next runtime an outside thread enters.
    next: AtomicUsize,
}

impl TokioRuntimes {
    /// Build one runtime per worker (none started: a runtime runs only
    /// inside its worker's `block_on` calls). Their blocking threads follow
    /// the pool's settings: its keep-alive, and its `max_blocking_threads`
    /// split between them (so tokio's blocking threads of the whole pool
    /// are at most as many as the pool's own).
    ///
    /// Each blocking thread calls `serve` when it starts, to serve the pool
    /// as its own blocking threads do, and `leave` when it stops.
    pub(crate) fn start(
        blocking: &BlockingConfig,
        workers: usize,
        thread_name: &str,
        serve: impl Fn() + Clone + Send + Sync + 'static,
        leave: fn(),
    ) -> io::Result<TokioRuntimes> {
        let max_blocking = (blocking.max_threads / workers).max(1);
        let mut runtimes = Vec::with_capacity(workers);
        for _ in 0..workers {
            let serve = serve.clone();
            let prefix = thread_name.to_owned();
            let (hooks, stop_hooks) = (blocking.hooks.clone(), blocking.hooks.clone());
            let on_start = move || {
                // Its short name in the kernel (tokio named it in full).
                set_kernel_name(&ThreadKind::TokioBlocking.short_name(&prefix));
                ThreadKind::TokioBlocking.enter();
                serve();
                hooks.run_start();
            };
            let on_stop = move || {
                stop_hooks.run_stop();
                leave();
            };
            let mut builder = tokio::runtime::Builder::new_current_thread();
            builder
                .enable_all()
                .max_blocking_threads(max_blocking)
                .thread_keep_alive(blocking.keep_alive)
                .thread_name(ThreadKind::TokioBlocking.full_name(thread_name))
                .on_thread_start(on_start)
                .on_thread_stop(on_stop);
            if let Some(bytes) = blocking.stack_size {
                builder.thread_stack_size(bytes);
            }
            runtimes.push(builder.build()?);
        }
        Ok(TokioRuntimes {
            peers: runtimes
                .iter()
                .map(|r| Peer {
                    handle: r.handle().clone(),
                    metrics: r.metrics(),
                })
                .collect(),
            runtimes: runtimes.into_iter().map(|r| Mutex::new(Some(r))).collect(),
            next: AtomicUsize::new(0),
        })
    }

    /// Worker `index`'s runtime, to drive for its life (once).
    pub(crate) fn take_runtime(&self, index: usize) -> Option<Runtime> {
        self.runtimes.get(index).and_then(|r| r.lock().take())
    }

    /// The time runtime `index`'s scheduler spent running its tasks so far
    /// (`WorkerRuntime::tokio_busy`, read by a metrics snapshot).
    pub(crate) fn busy(&self, index: usize) -> Duration {
        self.peers[index].metrics.worker_total_busy_duration(0)
    }

    /// Every runtime's handle and metrics, for a worker's runtime.
    pub(crate) fn peers(&self) -> Arc<[Peer]> {
        Arc::clone(&self.peers)
    }

    /// Enter the next worker's runtime context on this (outside) thread
    /// until the guard drops.
    pub(crate) fn enter_next(&self) -> tokio::runtime::EnterGuard<'_> {
        // Relaxed: only spreads threads over runtimes.
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.peers.len();
        self.peers[i].handle.enter()
    }

    /// Poll a `block_on` future (`poll`) on a thread outside the pool, in
    /// the context of the runtime with the fewest tokio tasks alive (the
    /// next one in turn among equals), so that what the poll spawns (an
    /// accept loop's connections: `axum::serve` in `#[pool::main]`) and the
    /// sockets it makes go there.
    ///
    /// A thread in no tokio context (`main`, a thread of the user's) polls
    /// a future that uses tokio (`OutsidePolls`) on a tokio budget of
    /// `OPERATIONS_PER_POLL` operations, where tokio's own `block_on` polls
    /// on one of 128: the first 4 of the poll's tokio operations (an
    /// `accept`, a `recv`) proceed, the next returns `Pending` with the
    /// future woken, and the next poll, at once, enters the runtime that is
    /// then the lightest. A burst of connections in the backlog spreads over
    /// the runtimes 4 by 4, where it would all land on the one runtime this
    /// poll entered. The poll runs inside the runtime's
    /// `tokio::runtime::Handle::block_on`, which alone starts a budget; its
    /// future is ready at its first poll, so tokio never parks the thread
    /// (the pool's `block_on` sleeps as it always does, on its own latch:
    /// `sleep/README.md`, "A `block_on` future polled inside tokio's
    /// `block_on`"). It also marks the thread as inside a runtime, as
    /// `#[tokio::main]`'s body is: `block_in_place` works, starting another
    /// runtime there is refused with tokio's words.
    ///
    /// A thread in a tokio context already (the pool's and tokio's blocking
    /// threads, a `block_on` nested in another, a thread of a runtime of
    /// the user's), and a future that has stopped using tokio, only enter
    /// the runtime for the poll: tokio refuses a `block_on` inside a
    /// runtime, and the budget costs about 0.6 us a poll (tokio's budget is
    /// spent one unit at a time: `leave_operations`; `block_on_poll`).
    pub(crate) fn poll_outside<R>(&self, polls: &mut OutsidePolls, poll: impl FnOnce() -> R) -> R {
        let (peer, alive) = self.lightest();
        let budgeted = polls.budgeted()
            && matches!(tokio::runtime::Handle::try_current(), Err(none) if none.is_missing_context());
        let (out, operated) = if budgeted {
            let mut poll = Some(poll);
            peer.handle.block_on(std::future::poll_fn(|_| {
                leave_operations();
                let poll = poll.take().expect("a ready future is polled once");
                let out = poll();
                std::task::Poll::Ready((out, !has_budget_remaining()))
            }))
        } else {
            let _guard = peer.handle.enter();
            (poll(), false)
        };
        // A spawn onto the runtime, or (on a budget) tokio operations
        // refused for it.
        polls.polled(operated || alive_tasks(&peer.metrics) > alive);
        out
    }

    /// The runtime with the fewest tokio tasks alive, from the next one in
    /// turn (so that equals take turns), and those tasks.
    fn lightest(&self) -> (&Peer, usize) {
        let n = self.peers.len();
        // Relaxed: only spreads polls over runtimes.
        let first = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut lightest = first;
        let mut least = usize::MAX;
        for i in (first..n).chain(0..first) {
            let alive = alive_tasks(&self.peers[i].metrics);
            if alive < least {
                (lightest, least) = (i, alive);
            }
        }
        (&self.peers[lightest], least)
    }

    /// Shut down the runtimes no worker took (shutdown's last step).
    pub(crate) fn stop(&self) {
        for slot in self.runtimes.iter() {
            if let Some(runtime) = slot.lock().take() {
                runtime.shutdown_background();
            }
        }
    }
}

/// The tokio operations a budgeted poll may complete (`poll_outside`).
const OPERATIONS_PER_POLL: usize = 4;

/// Spend the tokio budget of this poll (a fresh one: `poll_outside`) down
/// to `OPERATIONS_PER_POLL`, whatever tokio's initial budget is: every unit
/// is taken, the last `OPERATIONS_PER_POLL` of them held, and those are
/// given back, newest first (a `RestoreOnPending` dropped without
/// `made_progress` puts the budget back to what it was before its unit).
/// The units are asked for with a no-op waker: the refusal that says the
/// budget is empty wakes that one, not the thread's. Bounded, should a
/// later tokio poll `block_on` unconstrained.
fn leave_operations() {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut held: [Option<RestoreOnPending>; OPERATIONS_PER_POLL] = Default::default();
    for taken in 0..1024 {
        let std::task::Poll::Ready(unit) = poll_proceed(&mut cx) else {
            // Empty: give back the newest first.
            for i in (taken..taken + OPERATIONS_PER_POLL).rev() {
                drop(held[i % OPERATIONS_PER_POLL].take());
            }
            return;
        };
        // An older unit stays taken: forgotten, it never restores (as
        // after `made_progress`, without the two calls).
        std::mem::forget(held[taken % OPERATIONS_PER_POLL].replace(unit));
    }
    // Never empty: keep what was taken.
    std::mem::forget(held);
}

/// A runtime's tokio tasks alive, its runner (if started) not counted.
#[inline]
pub(super) fn alive_tasks(metrics: &tokio::runtime::RuntimeMetrics) -> usize {
    metrics.num_alive_tasks().saturating_sub(1)
}

/// One of the pool's runtimes, as any thread sees it.
#[derive(Debug)]
pub(crate) struct Peer {
    pub(super) handle: Handle,
    pub(super) metrics: tokio::runtime::RuntimeMetrics,
}
