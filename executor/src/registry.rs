//! `Registry`: the state one pool shares between its workers, its handles and
//! its tasks, and the one door through which work enters (`schedule`).
//!
//! # Invariants
//!
//! * Every runnable enters through `schedule_task`: on a worker thread
//!   of this pool it goes to that worker (`WorkerThread::schedule_local`: its
//!   LIFO slot or its deque; a push onto the deque tickles the sleep manager
//!   as an internal job, no fence); anywhere else it goes into the injector
//!   and tickles as an injected job (after the seq-cst fence).
//! * Blocking tasks (`spawn_blocking`) enter through their own schedule
//!   function, into the blocking pool's queue: they never reach a worker.
//! * Once `shutting_down` is set, new spawns are cancelled at once, and no
//!   runnable is pushed without being dropped by the shutdown that follows
//!   (see `Pool::shutdown` for the order of the steps): a push into the
//!   injector that lands after shutdown drained it is drained by the pusher
//!   itself (`drained`, with a fence on each side).
//! * Each task's metadata owns an `Arc<Registry>`; the registry owns the
//!   queues that hold runnables. Shutdown empties the queues, which breaks
//!   those cycles.

use crate::blocking::{BlockingConfig, BlockingPool, BlockingTask};
use crate::deadlock::{DeadlockDetector, Handler};
use crate::io::Driver;
use crate::join::JobRef;
use crate::latch::CoreLatch;
use crate::lifo::LifoSlot;
use crate::metrics::{Metrics, WorkerStats};
use crate::owned::OwnedTasks;
use crate::sleep::{Park, Sleep};
use crate::sync::{fence, AtomicBool, Ordering};
use crate::task::{JoinHandle, Runnable, TaskFuture, TaskHeader};
use crate::trace::stall::StallConfig;
use crate::trace::timeline::Timeline;
use crate::trace::{CoarseClock, TaskId};
use crate::worker::WorkerThread;
use async_task::{ScheduleInfo, WithInfo};
use crossbeam_deque::{Injector, Steal, Stealer};
use crossbeam_utils::CachePadded;
use std::future::Future;
use std::panic::Location;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// What a worker's thread-start and thread-stop hooks are.
pub(crate) type Hook = Arc<dyn Fn() + Send + Sync + 'static>;

/// Per-worker state that other threads reach.
pub(crate) struct WorkerInfo {
    /// Set when the pool shuts down; the worker's main loop waits on it.
    pub(crate) terminate: CoreLatch,
    /// Counted by the worker only.
    pub(crate) stats: CachePadded<WorkerStats>,
    /// The other end of the worker's deque.
    pub(crate) stealer: Stealer<Runnable>,
    /// The other end of the worker's fork-join job deque.
    pub(crate) job_stealer: Stealer<JobRef>,
    /// The task the worker runs next (`lifo.rs`): the watcher may take it.
    pub(crate) lifo: LifoSlot<TaskHeader>,
}

/// What the `Builder` configures besides the worker count.
pub(crate) struct RegistryConfig {
    pub(crate) on_thread_start: Option<Hook>,
    pub(crate) on_thread_stop: Option<Hook>,
    pub(crate) deadlock_handler: Option<Handler>,
    pub(crate) blocking: BlockingConfig,
    /// The pool's I/O driver and timer store.
    pub(crate) io: Arc<Driver>,
    /// `Builder::on_stall`.
    pub(crate) stall: Option<StallConfig>,
    /// `Builder::trace`: where to write the timeline.
    pub(crate) trace: Option<PathBuf>,
}

pub(crate) struct Registry {
    pub(crate) injector: Injector<Runnable>,
    pub(crate) workers: Box<[WorkerInfo]>,
    pub(crate) sleep: Sleep,
    /// The I/O driver and timers; the sleep manager holds it too.
    pub(crate) io: Arc<Driver>,
    pub(crate) tasks: OwnedTasks,
    /// Counted by threads that are not workers of this pool.
    outside_stats: CachePadded<WorkerStats>,
    shutting_down: AtomicBool,
    /// Set once shutdown has drained the queues.
    drained: AtomicBool,
    pub(crate) blocking: BlockingPool,
    /// Workers that have left their main loop, for a bounded shutdown wait.
    /// (Not part of the sleep protocol, so plain `parking_lot`.)
    exited: parking_lot::Mutex<usize>,
    exited_cond: parking_lot::Condvar,
    pub(crate) on_thread_start: Option<Hook>,
    pub(crate) on_thread_stop: Option<Hook>,
    /// The coarse clock of task ages, published by the watcher.
    pub(crate) clock: CoarseClock,
    /// The stall detector's settings, for the watcher.
    pub(crate) stall: Option<StallConfig>,
    /// The workers' timeline, when the pool is traced.
    pub(crate) timeline: Option<Arc<Timeline>>,
}

impl Registry {
    pub(crate) fn new(
        stealers: Vec<(Stealer<Runnable>, Stealer<JobRef>)>,
        config: RegistryConfig,
    ) -> Registry {
        let n = stealers.len();
        let timeline = config.trace.map(|path| Arc::new(Timeline::new(path, n)));
        Registry {
            injector: Injector::new(),
            workers: stealers
                .into_iter()
                .map(|(stealer, job_stealer)| WorkerInfo {
                    terminate: CoreLatch::new(),
                    stats: CachePadded::new(WorkerStats::default()),
                    stealer,
                    job_stealer,
                    lifo: LifoSlot::new(),
                })
                .collect(),
            sleep: {
                let sleep = Sleep::new(
                    n,
                    config
                        .deadlock_handler
                        .map(|handler| DeadlockDetector::new(n, handler)),
                    Some(Arc::clone(&config.io) as Arc<dyn Park>),
                    timeline.clone(),
                );
                if config.stall.is_some() {
                    sleep.watching_wakes()
                } else {
                    sleep
                }
            },
            io: config.io,
            // Four shards per worker: outside spawns spread over them.
            tasks: OwnedTasks::new(4 * n),
            outside_stats: CachePadded::new(WorkerStats::default()),
            shutting_down: AtomicBool::new(false),
            drained: AtomicBool::new(false),
            blocking: BlockingPool::new(config.blocking),
            exited: parking_lot::Mutex::new(0),
            exited_cond: parking_lot::Condvar::new(),
            on_thread_start: config.on_thread_start,
            on_thread_stop: config.on_thread_stop,
            clock: CoarseClock::default(),
            stall: config.stall,
            timeline,
        }
    }

    pub(crate) fn num_workers(&self) -> usize {
        self.workers.len()
    }

    /// The current thread as a worker of this pool, if it is one.
    #[inline]
    fn local_worker(&self) -> Option<&WorkerThread> {
        WorkerThread::current().filter(|w| std::ptr::eq(&**w.registry(), self))
    }

    /// Count `n` events: into `local`'s own counters when the caller is that
    /// worker of this pool, else into the shared outside counters.
    #[inline]
    fn count(
        &self,
        local: Option<&WorkerThread>,
        counter: impl Fn(&WorkerStats) -> &std::sync::atomic::AtomicU64,
        n: u64,
    ) {
        match local {
            Some(w) => w.stats().bump_owned(counter, n),
            None => self.outside_stats.bump_shared(counter, n),
        }
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Spawn `future` onto this pool; `at` is where the user called spawn.
    #[inline]
    pub(crate) fn spawn<F>(
        self: &Arc<Self>,
        future: F,
        at: &'static Location<'static>,
    ) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let local = self.local_worker();
        self.count(local, |s| &s.spawned, 1);
        let (shard_hint, id) = match local {
            Some(w) => (w.index(), w.next_task_id()),
            None => crate::worker::outside_spawn(),
        };
        self.spawn_with(future, schedule_task, shard_hint, (id, at, false))
    }

    /// Run `f` on this pool's blocking threads.
    pub(crate) fn spawn_blocking<F, R>(
        self: &Arc<Self>,
        f: F,
        at: &'static Location<'static>,
    ) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let (shard_hint, id) = crate::worker::outside_spawn();
        self.spawn_with(
            BlockingTask::new(f),
            schedule_blocking,
            shard_hint,
            (id, at, true),
        )
    }

    /// Every live task of the pool, now.
    pub(crate) fn tasks(&self) -> Vec<crate::trace::TaskInfo> {
        crate::trace::dump::collect(self)
    }

    /// The stall detector reported a poll.
    pub(crate) fn count_stall(&self) {
        self.outside_stats.bump_shared(|s| &s.stalls, 1);
    }

    /// Make a task of `future` whose runnable goes to `schedule`, register
    /// it as live, and schedule it once. `schedule` is a fn item: zero-sized,
    /// so it costs the task no bytes.
    #[inline]
    fn spawn_with<F, S>(
        self: &Arc<Self>,
        future: F,
        schedule: S,
        shard_hint: usize,
        (id, at, blocking): (TaskId, &'static Location<'static>, bool),
    ) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
        S: Fn(Runnable, ScheduleInfo) + Send + Sync + 'static,
    {
        let builder = async_task::Builder::new().metadata(TaskHeader::new(
            Arc::clone(self),
            id,
            at,
            blocking,
        ));
        // SAFETY: `spawn_unchecked`'s obligations, one by one:
        // - the future is `Send` (`F: Send`, and `&TaskHeader` is `Send`
        //   because `TaskHeader: Sync`), so the `Runnable` may move between
        //   threads;
        // - it is not `'static` only because it borrows the task's own
        //   metadata, which async-task allows; it borrows nothing else;
        // - the schedule function is `Send + Sync + 'static` (a fn item), so
        //   wakers may be used and dropped anywhere.
        let (runnable, task) = unsafe {
            builder.spawn_unchecked(
                move |header: &TaskHeader| TaskFuture::new(future, header),
                WithInfo(schedule),
            )
        };
        let handle = JoinHandle::new(task);
        if self.is_shutting_down() {
            // Dropping the runnable drops the future: the handle reports
            // `cancelled`.
            crate::task::cancel(runnable);
            return handle;
        }
        let waker = runnable.waker();
        crate::task::note_waker(&waker, runnable.metadata());
        match self.tasks.insert(shard_hint, waker) {
            Some(slot) => runnable.metadata().set_slot(slot),
            None => {
                crate::task::cancel(runnable);
                return handle;
            }
        }
        runnable.schedule();
        handle
    }

    /// A task's future was dropped: take it out of the live tasks, at once on
    /// its own worker's shard (or from outside), batched on another worker.
    pub(crate) fn remove_task(&self, slot: crate::owned::Slot) {
        match self.local_worker() {
            Some(w) if slot.shard != self.tasks.shard_of(w.index()) => w.defer_removal(slot),
            _ => self.tasks.remove(slot),
        }
    }

    /// Push a runnable from a thread that is not a worker of this pool.
    fn inject(&self, runnable: Runnable) {
        self.injector.push(runnable);
        self.outside_stats.bump_shared(|s| &s.injected, 1);
        if self.is_shutting_down() {
            // Nobody is left to wake. If shutdown already drained the
            // injector, drain it here; the fence pairs with the one in
            // `drop_unfinished_tasks`, so either shutdown's last drain sees
            // this push or this load sees `drained`.
            fence(Ordering::SeqCst);
            if self.drained.load(Ordering::SeqCst) {
                self.drain_queues();
            }
            return;
        }
        let woken = self.sleep.new_injected_jobs(1);
        if woken > 0 {
            self.outside_stats.bump_shared(|s| &s.wakeups, woken as u64);
        }
    }

    /// The watcher took `runnable` out of the LIFO slot of a worker whose
    /// poll runs long: inject it, so a sleeper is woken for it.
    pub(crate) fn rescue(&self, runnable: Runnable) {
        self.outside_stats.bump_shared(|s| &s.rescued, 1);
        self.inject(runnable);
    }

    /// Is there work in the injector? This is the sleeper's final check: the
    /// `is_empty` of crossbeam's injector reads head and tail with `SeqCst`,
    /// the "ReadJob" of the fence argument.
    pub(crate) fn has_injected_jobs(&self) -> bool {
        !self.injector.is_empty()
    }

    /// The pool's I/O driver, for a new socket or timer: the first such use
    /// lets a sleeper block in the driver from then on (`Sleep::enable_driver`).
    #[inline]
    pub(crate) fn io_driver(&self) -> &Arc<Driver> {
        let woken = self.sleep.enable_driver();
        if woken > 0 {
            self.count(self.local_worker(), |s| &s.wakeups, woken as u64);
        }
        &self.io
    }

    /// Wake worker `index` if it sleeps (its latch was set), and count it.
    pub(crate) fn wake_worker(&self, index: usize) {
        if self.sleep.wake_specific_thread(index) {
            self.count(self.local_worker(), |s| &s.wakeups, 1);
        }
    }

    pub(crate) fn metrics(&self) -> Metrics {
        let mut m = Metrics {
            workers: self.num_workers(),
            ..Metrics::default()
        };
        for w in self.workers.iter() {
            w.stats.add_to(&mut m);
        }
        self.outside_stats.add_to(&mut m);
        m.deadlocks = self.sleep.deadlock().map_or(0, DeadlockDetector::events);
        m.blocking_threads = self.blocking.threads();
        m
    }

    /// Shutdown, step 1: refuse new work, tell every worker to stop and the
    /// blocking threads to start nothing new.
    pub(crate) fn terminate(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.sleep.watcher().stop();
        self.blocking.begin_shutdown();
        for (index, w) in self.workers.iter().enumerate() {
            if w.terminate.set() {
                self.wake_worker(index);
            }
        }
    }

    /// A worker left its main loop.
    pub(crate) fn worker_exited(&self) {
        *self.exited.lock() += 1;
        self.exited_cond.notify_one();
    }

    /// Shutdown, step 2: wait until `expected` workers have exited, or until
    /// `deadline`. True if they all did.
    pub(crate) fn wait_for_exits(&self, expected: usize, deadline: Option<Instant>) -> bool {
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

    /// Shutdown, step 3: drop every task that has not completed. Each live
    /// task is woken, which queues its runnable; every queue is then drained
    /// and its runnables dropped, which drops their futures exactly once.
    pub(crate) fn drop_unfinished_tasks(&self) {
        for waker in self.tasks.close_and_drain() {
            waker.wake();
        }
        self.blocking
            .drain()
            .into_iter()
            .for_each(crate::task::cancel);
        self.drain_queues();
        self.drained.store(true, Ordering::SeqCst);
        // Pairs with the fence in `inject`: a push this drain missed is
        // drained by its pusher.
        fence(Ordering::SeqCst);
        self.drain_queues();
        // Sockets and timers that outlive the pool: their waits fail (or, for
        // timers, complete) from now on. Their wakers belong to tasks of
        // other pools or to outside threads (this pool's tasks are gone).
        let mut wakers = Vec::new();
        self.io.shut_down(&mut wakers);
        wakers.into_iter().for_each(std::task::Waker::wake);
    }

    /// Drop every runnable in the injector and in the deques of workers that
    /// did not exit in time (through their stealers).
    fn drain_queues(&self) {
        loop {
            let mut dropped_any = false;
            while let Some(runnable) = steal_one(|| self.injector.steal()) {
                crate::task::cancel(runnable);
                dropped_any = true;
            }
            for w in self.workers.iter() {
                if let Some(runnable) = w.lifo.take() {
                    crate::task::cancel(runnable);
                    dropped_any = true;
                }
                while let Some(runnable) = steal_one(|| w.stealer.steal()) {
                    crate::task::cancel(runnable);
                    dropped_any = true;
                }
            }
            if !dropped_any {
                break;
            }
        }
    }
}

/// The schedule function of every task (`spawn`). It captures nothing, and
/// so must not rely on the task's own `Arc<Registry>` once it has handed the
/// runnable on: a worker may run it to completion and free it at once
/// (async-task keeps a zero-sized schedule function's task alive only for
/// the caller's reference, which a by-value wake moves into the runnable).
/// So the registry it works with after the hand-off is kept alive by its own
/// reference: the worker's, or a clone.
fn schedule_task(runnable: Runnable, info: ScheduleInfo) {
    runnable.metadata().mark_scheduled();
    let registry = Arc::as_ptr(&runnable.metadata().registry);
    match WorkerThread::current().filter(|w| std::ptr::eq(Arc::as_ptr(w.registry()), registry)) {
        Some(worker) => worker.schedule_local(runnable, info),
        None => Arc::clone(&runnable.metadata().registry).inject(runnable),
    }
}

/// The schedule function of blocking tasks (`spawn_blocking`): into the
/// blocking pool's queue, never onto a worker. Keeps its own reference to the
/// registry for the reason given at `schedule_task`.
fn schedule_blocking(runnable: Runnable, _: ScheduleInfo) {
    runnable.metadata().mark_scheduled();
    let registry = Arc::clone(&runnable.metadata().registry);
    registry.blocking.schedule(&registry, runnable);
}

/// Retry a steal until it gives a task or reports the queue empty.
pub(crate) fn steal_one<T>(mut steal: impl FnMut() -> Steal<T>) -> Option<T> {
    loop {
        match steal() {
            Steal::Success(t) => return Some(t),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}
