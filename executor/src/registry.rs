//! `Registry`: the state one pool shares between its workers, its handles and
//! its tasks, and the one door through which work enters (`schedule`).
//!
//! # Invariants
//!
//! * Every runnable enters through [`Registry::schedule`]: on a worker thread
//!   of this pool it goes to that worker (`WorkerThread::schedule_local`: its
//!   LIFO slot or its deque; a push onto the deque tickles the sleep manager
//!   as an internal job, no fence); anywhere else it goes into the injector
//!   and tickles as an injected job (after the seq-cst fence).
//! * Once `shutting_down` is set, new spawns are cancelled at once, and no
//!   runnable is pushed without being dropped by the shutdown that follows
//!   (see `Pool::shutdown` for the order of the steps).

use crate::latch::CoreLatch;
use crate::metrics::{Metrics, WorkerStats};
use crate::owned::OwnedTasks;
use crate::sleep::Sleep;
use crate::sync::{AtomicBool, Ordering};
use crate::task::{JoinHandle, Runnable, TaskFuture, TaskHeader};
use crate::worker::WorkerThread;
use async_task::{ScheduleInfo, WithInfo};
use crossbeam_deque::{Injector, Steal, Stealer};
use crossbeam_utils::CachePadded;
use std::future::Future;
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
}

pub(crate) struct Registry {
    pub(crate) injector: Injector<Runnable>,
    pub(crate) workers: Box<[WorkerInfo]>,
    pub(crate) sleep: Sleep,
    pub(crate) tasks: OwnedTasks,
    /// Counted by threads that are not workers of this pool.
    outside_stats: CachePadded<WorkerStats>,
    shutting_down: AtomicBool,
    /// Workers that have left their main loop, for a bounded shutdown wait.
    /// (Not part of the sleep protocol, so plain `parking_lot`.)
    exited: parking_lot::Mutex<usize>,
    exited_cond: parking_lot::Condvar,
    pub(crate) on_thread_start: Option<Hook>,
    pub(crate) on_thread_stop: Option<Hook>,
}

impl Registry {
    pub(crate) fn new(
        stealers: Vec<Stealer<Runnable>>,
        on_thread_start: Option<Hook>,
        on_thread_stop: Option<Hook>,
    ) -> Registry {
        let n = stealers.len();
        Registry {
            injector: Injector::new(),
            workers: stealers
                .into_iter()
                .map(|stealer| WorkerInfo {
                    terminate: CoreLatch::new(),
                    stats: CachePadded::new(WorkerStats::default()),
                    stealer,
                })
                .collect(),
            sleep: Sleep::new(n),
            // Four shards per worker: outside spawns spread over them.
            tasks: OwnedTasks::new(4 * n),
            outside_stats: CachePadded::new(WorkerStats::default()),
            shutting_down: AtomicBool::new(false),
            exited: parking_lot::Mutex::new(0),
            exited_cond: parking_lot::Condvar::new(),
            on_thread_start,
            on_thread_stop,
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

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Spawn `future` onto this pool.
    pub(crate) fn spawn<F>(self: &Arc<Self>, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let schedule = {
            let registry = Arc::clone(self);
            WithInfo(move |runnable: Runnable, info: ScheduleInfo| {
                registry.schedule(runnable, info)
            })
        };
        let builder = async_task::Builder::new().metadata(TaskHeader::new(self));
        // SAFETY: `spawn_unchecked`'s obligations, one by one:
        // - the future is `Send` (`F: Send`, and `&TaskHeader` is `Send`
        //   because `TaskHeader: Sync`), so the `Runnable` may move between
        //   threads;
        // - it is not `'static` only because it borrows the task's own
        //   metadata, which async-task allows; it borrows nothing else;
        // - the schedule function is `Send + Sync + 'static` (it owns an
        //   `Arc<Registry>`), so wakers may be used and dropped anywhere.
        let (runnable, task) = unsafe {
            builder.spawn_unchecked(
                move |header: &TaskHeader| TaskFuture::new(future, header),
                schedule,
            )
        };
        let handle = JoinHandle::new(task);

        let shard_hint = match self.local_worker() {
            Some(w) => {
                w.stats().bump_owned(|s| &s.spawned, 1);
                w.index()
            }
            None => {
                self.outside_stats.bump_shared(|s| &s.spawned, 1);
                crate::worker::random_shard_hint()
            }
        };

        if self.is_shutting_down() {
            // Dropping the runnable drops the future: the handle reports
            // `cancelled`.
            drop(runnable);
            return handle;
        }
        match self.tasks.insert(shard_hint, runnable.waker()) {
            Some(slot) => runnable.metadata().set_slot(slot),
            None => {
                drop(runnable);
                return handle;
            }
        }
        runnable.schedule();
        handle
    }

    /// The schedule function of every task of this pool.
    fn schedule(&self, runnable: Runnable, info: ScheduleInfo) {
        match self.local_worker() {
            Some(worker) => worker.schedule_local(runnable, info),
            None => self.inject(runnable),
        }
    }

    /// Push a runnable from a thread that is not a worker of this pool.
    fn inject(&self, runnable: Runnable) {
        self.injector.push(runnable);
        self.outside_stats.bump_shared(|s| &s.injected, 1);
        if self.is_shutting_down() {
            // Nobody is left to wake: shutdown drains the injector.
            return;
        }
        let woken = self.sleep.new_injected_jobs(1);
        if woken > 0 {
            self.outside_stats.bump_shared(|s| &s.wakeups, woken as u64);
        }
    }

    /// Is there work in the injector? This is the sleeper's final check: the
    /// `is_empty` of crossbeam's injector reads head and tail with `SeqCst`,
    /// the "ReadJob" of the fence argument.
    pub(crate) fn has_injected_jobs(&self) -> bool {
        !self.injector.is_empty()
    }

    /// Wake worker `index` if it sleeps (its latch was set), and count it.
    pub(crate) fn wake_worker(&self, index: usize) {
        if self.sleep.wake_specific_thread(index) {
            match self.local_worker() {
                Some(w) => w.stats().bump_owned(|s| &s.wakeups, 1),
                None => self.outside_stats.bump_shared(|s| &s.wakeups, 1),
            }
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
        m
    }

    /// Shutdown, step 1: refuse new work and tell every worker to stop.
    pub(crate) fn terminate(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
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
        loop {
            let mut dropped_any = false;
            while let Some(runnable) = steal_one(|| self.injector.steal()) {
                drop(runnable);
                dropped_any = true;
            }
            // Deques of workers that did not exit in time: steal from them.
            for w in self.workers.iter() {
                while let Some(runnable) = steal_one(|| w.stealer.steal()) {
                    drop(runnable);
                    dropped_any = true;
                }
            }
            if !dropped_any {
                break;
            }
        }
    }
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
