//! The blocking pool: an elastic set of threads, owned by a pool, that run
//! `spawn_blocking` closures and never a task.
//!
//! A closure becomes a task like any other (one `async_task` allocation, its
//! panics caught, its handle a `JoinHandle`), whose future calls the closure
//! on its first poll and whose schedule function pushes it onto this pool's
//! FIFO queue instead of a worker's deque. So it can only ever run on a
//! blocking thread.
//!
//! Light calls (one file operation each, `pool::fs`) do not become tasks:
//! `light_calls.rs` batches them onto drainers, which are blocking tasks.
//!
//! # Invariants
//!
//! * `threads` counts the blocking threads alive; it never exceeds
//!   `max_threads`. `idle` counts those waiting on `condvar` that nobody has
//!   notified yet; `notified` counts notifications not yet consumed. The
//!   notifier moves a thread from `idle` to `notified`, so two closures
//!   pushed back to back never count on the same idle thread.
//! * `returning` lists the threads whose closure has returned (or
//!   unwound) and that have not yet come back to the queue. A closure's
//!   result wakes its awaiter before its thread takes the lock again, so an
//!   awaiter that spawns its next closure at once would otherwise find no
//!   idle thread: the queue bound would refuse it and the pool would start
//!   a thread it does not need. A returning thread takes from the queue
//!   before it waits, so it counts as ready, like a notified one.
//! * Closures run in the order they were queued.
//! * With a queue bound (`Builder::max_blocking_queue`), a closure that
//!   would wait behind `max_queue` others for a busy thread is refused
//!   before it is queued: its task is marked rejected and cancelled on the
//!   spawning thread, so its handle resolves to a `JoinError` whose
//!   `is_rejected()` is true. A closure that was queued is never refused
//!   later: every accepted closure runs (or is cancelled by shutdown).
//!   Light calls' drainers (`schedule_drainer`) are never refused: the
//!   file operations they carry were accepted already.
//! * Once `shutdown` is set no queued closure starts; once `drained` is set
//!   nothing is queued any more (a late closure is dropped at once, which
//!   cancels it).

use super::config::BlockingConfig;
use crate::context::plain_cells::with_blocking_task;
use crate::context::thread_kind::ThreadKind;
use crate::sleep::block_on_wake::WakePool;
use crate::sleep::manager::SleepManager;
use crate::task::future::{cancel, reject};
use crate::task::header::Runnable;
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::{self, ThreadId};
use std::time::Instant;

/// What the blocking pool needs of the pool it serves (the scheduler's
/// `Registry`, in `scheduler/registry.rs`), so that this file names no
/// file of the scheduler's core. Its sleep manager (`WakePool`): queued and
/// running closures hold the pool's paused clock.
pub(crate) trait BlockingPoolOwner: WakePool {
    /// The blocking pool itself (a thread reaches it through its owner).
    fn blocking_pool(&self) -> &BlockingPool;
    /// Run `body`, a blocking thread's whole life, as a thread that serves
    /// this pool (its current pool; with `tokio-compat`, in its tokio
    /// context).
    fn serve(self: &Arc<Self>, body: impl FnOnce());
}

#[derive(Default)]
struct State {
    queue: VecDeque<Runnable>,
    threads: usize,
    idle: usize,
    notified: usize,
    /// The threads whose closure returned, until they lock the state again.
    returning: Vec<ThreadId>,
    shutdown: bool,
    drained: bool,
    /// Names blocking threads `NAME-blocking-K`.
    next_id: usize,
    /// Threads not yet joined; a thread that exits on its own removes itself.
    handles: HashMap<usize, thread::JoinHandle<()>>,
}

impl State {
    /// Threads that take from the queue before they wait again: notified
    /// and returning ones.
    fn ready(&self) -> usize {
        self.notified + self.returning.len()
    }
}

pub(crate) struct BlockingPool {
    state: Mutex<State>,
    /// Closures refused by the queue bound (`Metrics::rejected_blocking`).
    rejected: AtomicU64,
    /// Idle threads wait here for work.
    condvar: Condvar,
    /// Shutdown waits here for the last thread to exit.
    exited: Condvar,
    config: BlockingConfig,
}

impl BlockingPool {
    /// The settings it was built with.
    pub(crate) fn config(&self) -> &BlockingConfig {
        &self.config
    }

    pub(crate) fn new(config: BlockingConfig) -> BlockingPool {
        BlockingPool {
            state: Mutex::new(State::default()),
            rejected: AtomicU64::new(0),
            condvar: Condvar::new(),
            exited: Condvar::new(),
            config,
        }
    }

    /// Blocking threads alive now, and closures waiting for one.
    pub(crate) fn threads_and_queue(&self) -> (usize, usize) {
        let st = self.state.lock();
        (st.threads, st.queue.len())
    }

    /// Closures refused by the queue bound so far.
    pub(crate) fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    /// The schedule function of blocking tasks: queue the runnable, then
    /// hand it to an idle thread or start a new one, up to the cap; or,
    /// `bounded` and the queue full, refuse it (see the invariants).
    pub(crate) fn schedule<H: BlockingPoolOwner>(
        &self,
        owner: &Arc<H>,
        runnable: Runnable,
        bounded: bool,
    ) {
        let mut st = self.state.lock();
        if st.drained {
            // The pool is gone: cancel it (its future is dropped).
            drop(st);
            cancel(runnable);
            return;
        }
        if bounded && self.is_full(&st) {
            drop(st);
            // Relaxed: a count, read by the metrics alone.
            self.rejected.fetch_add(1, Ordering::Relaxed);
            reject(runnable);
            return;
        }
        // Queued or running, the closure holds a paused clock; its thread
        // lets go after it ran, that is after its result woke its awaiter
        // (`sleep/activity.rs`).
        owner.sleep_manager().hold();
        st.queue.push_back(runnable);
        if st.shutdown || self.config.simulated {
            // Shutdown drains the queue; a seeded pool runs it at its
            // steps (`run_simulated`).
            return;
        }
        if st.idle > 0 {
            st.idle -= 1;
            st.notified += 1;
            self.condvar.notify_one();
            return;
        }
        if st.queue.len() <= st.ready() {
            return; // a returning or notified thread takes it
        }
        if st.threads == self.config.max_threads {
            return; // the closure waits its turn
        }
        let id = st.next_id;
        let mut builder = thread::Builder::new();
        if let Some(bytes) = self.config.stack_size {
            builder = builder.stack_size(bytes);
        }
        let thread_owner = Arc::clone(owner);
        let kind = ThreadKind::Blocking(id);
        match kind.spawn(&self.config.thread_name, builder, move || {
            let sleep = thread_owner.sleep_manager();
            thread_owner.serve(|| {
                let pool = thread_owner.blocking_pool();
                pool.config.hooks.run_start();
                pool.run_thread(sleep, id);
                pool.config.hooks.run_stop();
            });
        }) {
            Ok(handle) => {
                st.next_id += 1;
                st.threads += 1;
                st.handles.insert(id, handle);
            }
            Err(_) if st.threads == 0 => {
                // No thread can run it, now or later: cancel it rather than
                // leave its handle waiting forever.
                let runnable = st.queue.pop_back();
                drop(st);
                if let Some(runnable) = runnable {
                    cancel(runnable);
                    owner.sleep_manager().release_hold();
                }
            }
            Err(_) => {} // a running thread will get to it
        }
    }

    /// Would a closure queued now wait behind `max_queue` others for a busy
    /// thread? Not if an idle thread (not yet notified) or a new thread
    /// would take it, nor if the threads that take from the queue before
    /// they wait (notified and returning) outnumber the closures queued.
    /// Never during shutdown, which cancels what it finds queued.
    fn is_full(&self, st: &State) -> bool {
        let Some(max) = self.config.max_queue else {
            return false;
        };
        if st.shutdown {
            return false;
        }
        if self.config.simulated {
            // No thread: every closure waits for a seeded step.
            return st.queue.len() >= max;
        }
        let starts_now = st.idle > 0 || st.threads < self.config.max_threads;
        !starts_now && st.queue.len() >= st.ready() + max
    }

    /// This thread's closure returned (or unwound): until it locks the
    /// state again it counts as ready (see the invariants). Its result
    /// wakes the awaiter after this. Not a seeded pool's: no thread runs
    /// its closures.
    fn closure_returned(&self) {
        if !self.config.simulated {
            self.state.lock().returning.push(thread::current().id());
        }
    }

    /// A seeded pool's: is a closure queued?
    pub(crate) fn has_simulated(&self) -> bool {
        self.config.simulated && !self.state.lock().queue.is_empty()
    }

    /// A seeded pool's step of its logical blocking thread: run the oldest
    /// queued closure on this thread, serving `owner`.
    pub(crate) fn run_simulated<H: BlockingPoolOwner>(&self, owner: &Arc<H>) {
        let runnable = self.state.lock().queue.pop_front();
        if let Some(runnable) = runnable {
            owner.serve(|| run_one(runnable, owner.sleep_manager()));
        }
    }

    /// The body of one blocking thread.
    fn run_thread(&self, sleep: &SleepManager, id: usize) {
        let me = thread::current().id();
        let mut st = self.state.lock();
        'work: loop {
            while !st.shutdown {
                let Some(runnable) = st.queue.pop_front() else {
                    break;
                };
                drop(st);
                run_one(runnable, sleep);
                st = self.state.lock();
                if let Some(at) = st.returning.iter().position(|t| *t == me) {
                    st.returning.swap_remove(at);
                }
            }
            if st.shutdown {
                break;
            }
            st.idle += 1;
            loop {
                let timed_out = self
                    .condvar
                    .wait_for(&mut st, self.config.keep_alive)
                    .timed_out();
                if st.notified > 0 {
                    st.notified -= 1;
                    continue 'work;
                }
                if st.shutdown || timed_out {
                    st.idle -= 1;
                    if !st.shutdown {
                        // Idle for the keep-alive: leave, detached.
                        st.handles.remove(&id);
                    }
                    break 'work;
                }
                // A spurious wakeup: keep waiting.
            }
        }
        st.threads -= 1;
        if st.threads == 0 {
            self.exited.notify_all();
        }
    }

    /// Shutdown, step 1: no queued closure starts any more.
    pub(crate) fn begin_shutdown(&self) {
        self.state.lock().shutdown = true;
        self.condvar.notify_all();
    }

    /// Shutdown, step 2: wait (until `deadline`, if any) for the running
    /// closures to return, and join the threads that exited.
    pub(crate) fn wait_for_threads(&self, deadline: Option<Instant>) {
        let mut st = self.state.lock();
        while st.threads > 0 {
            match deadline {
                None => self.exited.wait(&mut st),
                Some(d) => {
                    if self.exited.wait_until(&mut st, d).timed_out() {
                        break;
                    }
                }
            }
        }
        let all_exited = st.threads == 0;
        let handles: Vec<_> = st.handles.drain().map(|(_, h)| h).collect();
        drop(st);
        let me = thread::current().id();
        for h in handles {
            // A closure still running past the deadline keeps its thread,
            // detached.
            if h.thread().id() != me && (all_exited || h.is_finished()) {
                let _ = h.join();
            }
        }
    }

    /// Shutdown, step 3: take every closure that never started.
    pub(crate) fn drain(&self, sleep: &SleepManager) -> VecDeque<Runnable> {
        let mut st = self.state.lock();
        st.drained = true;
        let drained = std::mem::take(&mut st.queue);
        // They never run: none holds the clock any more.
        drained.iter().for_each(|_| sleep.release_hold());
        drained
    }
}

/// Run one blocking closure's task and let go of the paused clock it held.
fn run_one(runnable: Runnable, sleep: &SleepManager) {
    // Panics of the closure are caught inside `TaskFuture`.
    let id = runnable.metadata().id();
    with_blocking_task(id, || runnable.run());
    sleep.release_hold();
}

/// The future of a blocking task: calls the closure on its first poll,
/// and tells the blocking pool of `owner` when the closure is done, before
/// its result wakes the awaiter (`BlockingPool::closure_returned`).
pub(crate) struct BlockingTask<F, H: BlockingPoolOwner> {
    f: Option<F>,
    owner: Arc<H>,
}

impl<F, H: BlockingPoolOwner> BlockingTask<F, H> {
    pub(crate) fn new(f: F, owner: Arc<H>) -> Self {
        BlockingTask { f: Some(f), owner }
    }
}

impl<F, H: BlockingPoolOwner> Unpin for BlockingTask<F, H> {}

impl<F: FnOnce() -> R, R, H: BlockingPoolOwner> Future for BlockingTask<F, H> {
    type Output = R;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<R> {
        let f = self
            .f
            .take()
            .expect("a blocking task is polled once: it completes on its first poll");
        /// Tells the pool on return and on unwind alike.
        struct Returned<'a>(&'a BlockingPool);
        impl Drop for Returned<'_> {
            fn drop(&mut self) {
                self.0.closure_returned();
            }
        }
        let _returned = Returned(self.owner.blocking_pool());
        Poll::Ready(f())
    }
}
