//! The blocking pool: an elastic set of threads, owned by a pool, that run
//! `spawn_blocking` closures and never a task.
//!
//! A closure becomes a task like any other (one `async_task` allocation, its
//! panics caught, its handle a `JoinHandle`), whose future calls the closure
//! on its first poll and whose schedule function pushes it onto this pool's
//! FIFO queue instead of a worker's deque. So it can only ever run on a
//! blocking thread.
//!
//! Light jobs (one file operation each, `pool::fs`) do not become tasks:
//! they go onto a queue of their own, `Batch`, which *drainers* empty. A
//! drainer is one blocking task that runs jobs until the queue is empty and,
//! if no other drainer is lingering, stays empty for `LINGER`; so a burst of
//! small operations, or one task's operations back to back, pays one thread
//! hand-off rather than one each. A new drainer starts only while the queue
//! holds more jobs than there are free drainers, up to `MAX_DRAINERS`
//! running recent jobs.
//!
//! # Invariants
//!
//! * `threads` counts the blocking threads alive; it never exceeds
//!   `max_threads`. `idle` counts those waiting on `condvar` that nobody has
//!   notified yet; `notified` counts notifications not yet consumed. The
//!   notifier moves a thread from `idle` to `notified`, so two closures
//!   pushed back to back never count on the same idle thread.
//! * Closures run in the order they were queued.
//! * Once `shutdown` is set no queued closure starts; once `drained` is set
//!   nothing is queued any more (a late closure is dropped at once, which
//!   cancels it).

use super::config::BlockingConfig;
use super::registry::Registry;
use super::thread_name::ThreadKind;
use crate::context::pool_cells;
use crate::task::future::cancel;
use crate::task::header::Runnable;
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

/// A light job: one file operation (`pool::fs`), run by a drainer.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The most drainers at once that run jobs started less than `STUCK` ago:
/// enough to keep a device's queue full with positional reads in flight,
/// few enough that a burst does not start a thread per job. A drainer whose
/// job has run for `STUCK` (a FIFO's open waiting for its other end, a
/// hung network file system) does not count, so such jobs never starve the
/// queue behind them (while jobs keep coming: the check is made at each
/// submission).
const MAX_DRAINERS: usize = 16;

/// See `MAX_DRAINERS`.
const STUCK: Duration = Duration::from_millis(10);

/// How long a drainer whose queue emptied waits for the next job before it
/// ends: about one task's turn around (a wake, a poll, the next
/// operation's submission), so a task's operations back to back find it.
const LINGER: Duration = Duration::from_micros(50);

/// The queue of light jobs and the drainers emptying it.
#[derive(Default)]
struct Batch {
    jobs: VecDeque<Job>,
    /// The drainers, by slot (a drainer keeps its slot while it lives).
    slots: Vec<Drainer>,
    /// Drainers not running a job (starting, or lingering): each takes a
    /// queued job without a new thread hand-off.
    free: usize,
    /// A drainer is waiting `LINGER` for the next job.
    lingering: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Drainer {
    Vacant,
    Free,
    /// Running a job since then.
    Busy(Instant),
}

impl Batch {
    /// A new drainer's slot, counted free.
    fn add_drainer(&mut self) -> usize {
        self.free += 1;
        match self.slots.iter().position(|d| *d == Drainer::Vacant) {
            Some(i) => {
                self.slots[i] = Drainer::Free;
                i
            }
            None => {
                self.slots.push(Drainer::Free);
                self.slots.len() - 1
            }
        }
    }

    /// Free drainer `me` ends.
    fn remove_drainer(&mut self, me: usize) {
        debug_assert!(self.slots[me] == Drainer::Free);
        self.slots[me] = Drainer::Vacant;
        self.free -= 1;
    }

    /// Drainers free, or running a job started less than `STUCK` ago.
    fn running(&self) -> usize {
        self.slots
            .iter()
            .filter(|d| match d {
                Drainer::Vacant => false,
                Drainer::Free => true,
                Drainer::Busy(since) => since.elapsed() < STUCK,
            })
            .count()
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Runnable>,
    threads: usize,
    idle: usize,
    notified: usize,
    shutdown: bool,
    drained: bool,
    /// Names blocking threads `NAME-blocking-K`.
    next_id: usize,
    /// Threads not yet joined; a thread that exits on its own removes itself.
    handles: HashMap<usize, thread::JoinHandle<()>>,
}

pub(crate) struct BlockingPool {
    state: Mutex<State>,
    /// Idle threads wait here for work.
    condvar: Condvar,
    /// Shutdown waits here for the last thread to exit.
    exited: Condvar,
    config: BlockingConfig,
    batch: Mutex<Batch>,
    /// `batch.jobs.len()`, for a lingering drainer to watch without the
    /// lock (written under it).
    batch_len: AtomicUsize,
    /// Set by `begin_shutdown`: drainers stop, dropping their jobs.
    closing: AtomicBool,
    /// Light jobs run so far (`Metrics::fs_blocking_ops`).
    light_jobs_run: AtomicU64,
}

impl BlockingPool {
    /// The settings it was built with.
    #[cfg_attr(not(feature = "tokio-compat"), allow(dead_code))]
    pub(super) fn config(&self) -> &BlockingConfig {
        &self.config
    }

    pub(crate) fn new(config: BlockingConfig) -> BlockingPool {
        BlockingPool {
            state: Mutex::new(State::default()),
            condvar: Condvar::new(),
            exited: Condvar::new(),
            config,
            batch: Mutex::new(Batch::default()),
            batch_len: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            light_jobs_run: AtomicU64::new(0),
        }
    }

    /// Run `job` on a blocking thread, batched with the other light jobs
    /// (see the module docs). A job the pool never runs (it shut down) is
    /// dropped: its owner learns it from what the job owned.
    pub(crate) fn run_batched(&self, registry: &Arc<Registry>, job: Job) {
        if self.closing.load(Ordering::Acquire) {
            return; // dropped: the pool is going
        }
        let mut batch = self.batch.lock();
        batch.jobs.push_back(job);
        self.batch_len.store(batch.jobs.len(), Ordering::Release);
        if batch.jobs.len() <= batch.free {
            return; // a free drainer (starting or lingering) takes it
        }
        if batch.running() >= MAX_DRAINERS {
            return; // the busy drainers get to it soon
        }
        let me = batch.add_drainer();
        drop(batch);
        let r = Arc::clone(registry);
        let drainer = registry.spawn_blocking(
            move || r.blocking().drain_batch(me),
            std::panic::Location::caller(),
        );
        drop(drainer); // detached
    }

    /// Light jobs run so far.
    pub(crate) fn light_jobs_run(&self) -> u64 {
        self.light_jobs_run.load(Ordering::Relaxed)
    }

    /// Drainer `me`: run light jobs until none comes for `LINGER`.
    fn drain_batch(&self, me: usize) {
        let mut batch = self.batch.lock();
        loop {
            if self.closing.load(Ordering::Acquire) {
                batch.remove_drainer(me);
                self.batch_len.store(0, Ordering::Release);
                let jobs = std::mem::take(&mut batch.jobs);
                drop(batch);
                drop(jobs); // their owners see the pool gone
                return;
            }
            if let Some(job) = batch.jobs.pop_front() {
                self.batch_len.store(batch.jobs.len(), Ordering::Release);
                batch.slots[me] = Drainer::Busy(Instant::now());
                batch.free -= 1;
                drop(batch);
                // Counted before it runs: its owner, woken by it, sees it.
                self.light_jobs_run.fetch_add(1, Ordering::Relaxed);
                // A job catches its own panics (it is an operation and a
                // channel to its owner).
                job();
                batch = self.batch.lock();
                batch.slots[me] = Drainer::Free;
                batch.free += 1;
                continue;
            }
            // One drainer lingers at a time: more would spin on the
            // workers' cores for the same next job.
            let came = if batch.lingering {
                false
            } else {
                batch.lingering = true;
                drop(batch);
                let came = self.linger();
                batch = self.batch.lock();
                batch.lingering = false;
                came
            };
            if !came && batch.jobs.is_empty() {
                // Under the lock submitters read `free` under: a job pushed
                // after this starts a drainer of its own.
                batch.remove_drainer(me);
                return;
            }
        }
    }

    /// Wait up to `LINGER` for a light job; true if one came.
    fn linger(&self) -> bool {
        let start = Instant::now();
        loop {
            // Acquire: pairs with the submitter's Release store; the job
            // itself is read under the lock anyway.
            if self.batch_len.load(Ordering::Acquire) > 0 {
                return true;
            }
            if start.elapsed() >= LINGER {
                return false;
            }
            thread::yield_now();
        }
    }

    /// Blocking threads alive now, and closures waiting for one.
    pub(crate) fn threads_and_queue(&self) -> (usize, usize) {
        let st = self.state.lock();
        (st.threads, st.queue.len())
    }

    /// The schedule function of blocking tasks: queue the runnable, then
    /// hand it to an idle thread or start a new one, up to the cap.
    pub(crate) fn schedule(&self, registry: &Arc<Registry>, runnable: Runnable) {
        let mut st = self.state.lock();
        if st.drained {
            // The pool is gone: cancel it (its future is dropped).
            drop(st);
            cancel(runnable);
            return;
        }
        // Queued or running, the closure holds a paused clock; its thread
        // lets go after it ran, that is after its result woke its awaiter
        // (`sleep/activity.rs`).
        registry.sleep_manager().hold();
        st.queue.push_back(runnable);
        if st.shutdown {
            return; // shutdown drains the queue
        }
        if st.idle > 0 {
            st.idle -= 1;
            st.notified += 1;
            self.condvar.notify_one();
            return;
        }
        if st.threads == self.config.max_threads {
            return; // the closure waits its turn
        }
        let id = st.next_id;
        let mut builder = thread::Builder::new();
        if let Some(bytes) = self.config.stack_size {
            builder = builder.stack_size(bytes);
        }
        let r = Arc::clone(registry);
        let kind = ThreadKind::Blocking(id);
        match kind.spawn(&self.config.thread_name, builder, move || {
            r.blocking().run_thread(&r, id)
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
                    registry.sleep_manager().release_hold();
                }
            }
            Err(_) => {} // a running thread will get to it
        }
    }

    /// The body of one blocking thread.
    fn run_thread(&self, registry: &Arc<Registry>, id: usize) {
        let _current = pool_cells::enter_blocking_thread(registry);
        let _tokio = registry.enter_tokio();
        let mut st = self.state.lock();
        'work: loop {
            while !st.shutdown {
                let Some(runnable) = st.queue.pop_front() else {
                    break;
                };
                drop(st);
                // Panics of the closure are caught inside `TaskFuture`.
                let id = runnable.metadata().id();
                crate::context::plain_cells::with_blocking_task(id, || runnable.run());
                registry.sleep_manager().release_hold();
                st = self.state.lock();
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
        self.closing.store(true, Ordering::Release);
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
    pub(crate) fn drain(&self, registry: &Registry) -> VecDeque<Runnable> {
        let mut st = self.state.lock();
        st.drained = true;
        let drained = std::mem::take(&mut st.queue);
        // They never run: none holds the clock any more.
        drained.iter().for_each(|_| registry.sleep_manager().release_hold());
        drained
    }
}

/// The future of a blocking task: calls the closure on its first poll.
pub(crate) struct BlockingTask<F>(Option<F>);

impl<F> BlockingTask<F> {
    pub(crate) fn new(f: F) -> Self {
        BlockingTask(Some(f))
    }
}

impl<F> Unpin for BlockingTask<F> {}

impl<F: FnOnce() -> R, R> Future for BlockingTask<F> {
    type Output = R;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<R> {
        let f = self
            .0
            .take()
            .expect("a blocking task is polled once: it completes on its first poll");
        Poll::Ready(f())
    }
}
