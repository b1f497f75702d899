//! `Registry`: the state one pool shares between its workers, its handles and
//! its tasks.
//!
//! # Invariants
//!
//! * A runnable enters through one of three doors, its task's schedule
//!   function (`spawn.rs`). A task of `spawn` through `schedule_task`: on a
//!   worker thread of this pool it goes to that worker
//!   (`WorkerThread::schedule_local`: its LIFO slot or its deque; a push
//!   onto the deque tickles the sleep manager as an internal job, no fence);
//!   anywhere else it goes into the injector (`inject`) and tickles as an
//!   injected job (after the seq-cst fence).
//! * A `spawn_local` task through `schedule_pinned`: on its worker's thread
//!   into its local queue, from anywhere else into its inbox (`send_home`,
//!   which wakes that worker if it sleeps: `sleep/inbox.rs`).
//! * A blocking task (`spawn_blocking`) through `schedule_blocking`, into
//!   the blocking pool's queue: it never reaches a worker.
//! * Once shutdown has begun, new spawns are cancelled at once, and no
//!   runnable is pushed without being dropped by the shutdown that follows
//!   (`shutdown.rs` has the steps in order): a push into the injector that
//!   lands after shutdown drained it is drained by the pusher itself.
//! * Each task's metadata holds a share of the registry (`task/share.rs`:
//!   while shares are out, they hold one strong count of its `Arc`); the
//!   registry owns the queues that hold runnables. Shutdown empties the
//!   queues, which breaks those cycles.
//! * The fields are private: the other files of the scheduler, and the
//!   floors above, read what they need through the methods here.

use super::blocking::{BlockingPool, BlockingPoolOwner};
use super::config::{Config, ThreadHooks};
use super::coop;
use super::io_driver::Driver;
use super::light_calls::LightCalls;
use super::schedule_delay::ScheduleDelay;
use super::shutdown_state::ShutdownState;
use super::slot::TaskSlot;
use super::task_limit::TaskLimit;
use super::worker::worker_thread::WorkerThread;
use crate::context::pool_cells;
use crate::inspect::metrics::{BusyClock, WorkerStats};
use crate::inspect::ticks::TickRate;
use crate::inspect::timeline::Timeline;
use crate::join::job_ref::JobRef;
use crate::seeded::pool_seed::Seeded;
use crate::sleep::block_on_wake::WakePool;
use crate::sleep::deadlock::DeadlockDetector;
use crate::sleep::deadlock::Handler as DeadlockHandler;
use crate::sleep::inbox::Inbox;
use crate::sleep::latch::CoreLatch;
use crate::sleep::manager::{SleepManager, WakeNote};
use crate::sleep::park::Park;
use crate::task::coarse_clock::CoarseClock;
use crate::task::header::Runnable;
use crate::task::header::TaskHeader;
use crate::task::owned::LiveSlot;
use crate::task::owned::OwnedTasks;
use crate::task::schedule;
use crate::task::share::TaskShares;
use crate::task::waits::Wait;
use crate::tokio_compat::outside_polls::OutsidePolls;
#[cfg(feature = "tokio-compat")]
use crate::tokio_compat::runtimes::TokioRuntimes;
use crossbeam_deque::{Injector, Stealer};
use crossbeam_utils::CachePadded;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::task::{Context, Poll};

/// Per-worker state that other threads reach.
pub(crate) struct WorkerInfo {
    /// Set when the pool shuts down; the worker's main loop waits on it.
    pub(super) terminate: CoreLatch,
    /// Counted by the worker only.
    pub(crate) stats: CachePadded<WorkerStats>,
    /// The other end of the worker's deque.
    pub(crate) stealer: Stealer<Runnable>,
    /// The other end of the worker's fork-join job deque.
    pub(super) job_stealer: Stealer<JobRef>,
    /// The task the worker runs next (`slot.rs`): the watcher may take it.
    pub(crate) lifo: TaskSlot<TaskHeader>,
    /// The task its budget made yield while nothing else was queued on the
    /// worker (`WorkerThread::schedule_local`): the last thing the
    /// worker's search returns. The watcher may take it (`slot.rs`).
    pub(crate) deferred: TaskSlot<TaskHeader>,
    /// Its `spawn_local` tasks woken by other threads (`send_home`).
    pub(super) inbox: Inbox<Runnable>,
    /// Another worker found its job deque empty: its next `join` offers
    /// its oldest unoffered half (`join/lazy_jobs.rs`). On a line of its
    /// own: thieves write it, the worker reads it at every `join`.
    pub(super) wants_jobs: CachePadded<AtomicBool>,
}

/// What `Registry::enter_tokio` returns: the runtime's enter guard, or
/// (with no `tokio-compat`) nothing.
#[cfg(feature = "tokio-compat")]
pub(crate) type TokioGuard<'a> = Option<tokio::runtime::EnterGuard<'a>>;
/// What `Registry::enter_tokio` returns: the runtime's enter guard, or
/// (with no `tokio-compat`) nothing.
#[cfg(not(feature = "tokio-compat"))]
pub(crate) type TokioGuard<'a> = Option<std::marker::PhantomData<&'a ()>>;

pub(crate) struct Registry {
    injector: Injector<Runnable>,
    workers: Box<[WorkerInfo]>,
    sleep: SleepManager,
    /// The I/O driver and timers; the sleep manager holds it too.
    io: Arc<Driver>,
    tasks: OwnedTasks,
    /// The shares of this pool that task headers and workers' caches hold
    /// (`task/share.rs`), on a line of their own: outside spawns and
    /// batches of workers' caches write it.
    shares: CachePadded<TaskShares>,
    /// Counted by threads that are not workers of this pool.
    outside_stats: CachePadded<WorkerStats>,
    shutdown: ShutdownState,
    blocking: BlockingPool,
    /// The light calls of `pool::fs` on the blocking engine.
    light_calls: LightCalls,
    /// The coarse clock of task ages, published by the watcher.
    clock: CoarseClock,
    /// The workers' timeline, when the pool is traced.
    timeline: Option<Arc<Timeline>>,
    /// The clock of the workers' busy time (`Metrics::busy`).
    busy_clock: BusyClock,
    /// `Builder::poll_time_histogram`: workers time each poll, with this.
    time_polls: Option<TickRate>,
    /// The pool's tokio runtimes, one per worker (`tokio_compat/`), set
    /// once at start.
    #[cfg(feature = "tokio-compat")]
    tokio: std::sync::OnceLock<TokioRuntimes>,
    /// `Builder::io_uring`: file operations may use the driver's ring.
    io_uring: bool,
    /// A seeded pool's seed, ids, schedule hash and runner (`seeded/`); `None`
    /// for a pool of worker threads.
    seeded: Option<Seeded>,
    /// `Builder::max_tasks`, if set (`task_limit.rs`).
    task_limit: Option<TaskLimit>,
    /// The load signal: the delay between a task's wake and its poll
    /// (`schedule_delay.rs`).
    schedule_delay: CachePadded<ScheduleDelay>,
    /// The task table tokio-console is served from (`Builder::console`).
    #[cfg(feature = "console")]
    console: Option<crate::inspect::console::record::Console>,
}

/// The scheduler's registry is what owns tasks (`task::Schedule`).
impl WakePool for Registry {
    fn sleep_manager(&self) -> &SleepManager {
        Registry::sleep_manager(self)
    }

    fn wake_worker(&self, index: usize) {
        Registry::wake_worker(self, index);
    }
}

impl BlockingPoolOwner for Registry {
    fn blocking_pool(&self) -> &BlockingPool {
        &self.blocking
    }

    fn serve(self: &Arc<Self>, body: impl FnOnce()) {
        let _current = pool_cells::enter_blocking_thread(self);
        let _tokio = self.enter_tokio();
        body();
    }
}

impl schedule::RegistryBinding for schedule::RegistryBound {
    type Registry = Registry;
}

impl schedule::Schedule for Registry {
    fn live_tasks(&self) -> &OwnedTasks {
        &self.tasks
    }

    /// At once on this worker's own shard (or from outside), batched on
    /// another worker's (`WorkerThread::defer_removal`).
    fn release(&self, header: &TaskHeader, slot: Option<LiveSlot>, local: bool, blocking: bool) {
        #[cfg(feature = "console")]
        if let Some(console) = &self.console {
            console.table().finished(header.id());
        }
        if let Some(seeded) = &self.seeded {
            seeded.task_ended(header.id());
        }
        let worker = self.local_worker();
        if let Some(w) = worker {
            w.task_ended();
        }
        if !blocking {
            self.count(worker, |s| &s.ended, 1);
            if let Some(limit) = &self.task_limit {
                limit.release();
            }
        }
        let Some(slot) = slot else {
            return;
        };
        if local {
            // On its own worker: nowhere else may a local future be dropped.
            if let Some(w) = worker {
                w.local_task_ended();
            }
        }
        match worker {
            Some(w) if slot.shard != self.tasks.shard_of(w.index()) => w.defer_removal(slot),
            _ => self.tasks.remove(slot),
        }
    }

    #[inline(always)]
    fn poll_future<R>(
        &self,
        header: &TaskHeader,
        cx: &mut Context<'_>,
        poll: impl FnOnce(&mut Context<'_>) -> R,
    ) -> R {
        #[cfg(feature = "console")]
        if let Some(console) = &self.console {
            return console.poll(header.id(), cx, poll);
        }
        #[cfg(not(feature = "console"))]
        let _ = header;
        poll(cx)
    }

    #[inline]
    fn poll_proceed(cx: &mut Context<'_>) -> Poll<()> {
        coop::poll_proceed(cx)
    }

    #[inline]
    fn made_progress() {
        coop::made_progress();
    }

    #[inline]
    fn note_wait(wait: Wait) {
        if let Some(worker) = pool_cells::worker() {
            worker.note_wait(wait);
        }
    }

    /// Into this thread's worker's cache if it is a worker of this pool (no
    /// atomic operation), else to the count.
    #[inline]
    unsafe fn share_dropped(this: NonNull<Self>) {
        // SAFETY: the header's share keeps the pool alive until it is given
        // back below (our caller's contract).
        if let Some(w) = unsafe { this.as_ref() }.local_worker() {
            w.give_back_share();
            return;
        }
        // SAFETY: the header's one share, given back once.
        unsafe { Registry::give_back_shares(this, 1) };
    }
}

impl Registry {
    /// The registry of a pool with one worker per pair of `stealers`
    /// (its task deque's and its job deque's), driven by `io`; `watch_wakes`
    /// when the watcher runs a stall detector, which must see every wake.
    pub(crate) fn new(
        stealers: Vec<(Stealer<Runnable>, Stealer<JobRef>)>,
        config: Config,
        io: Arc<Driver>,
        watch_wakes: bool,
    ) -> Registry {
        let n = stealers.len();
        #[cfg(feature = "console")]
        let console = config
            .console_addr
            .map(crate::inspect::console::record::Console::new);
        let timeline = config.trace.map(|path| Arc::new(Timeline::new(path, n)));
        // The user's handler runs with this thread marked as in it, so that
        // `mark_blocked` there panics instead of deadlocking.
        let deadlock = config.deadlock_handler.map(|user| {
            let handler: DeadlockHandler =
                Arc::new(move || crate::context::plain_cells::run_deadlock_handler(&*user));
            DeadlockDetector::new(n, handler)
        });
        let sleep = SleepManager::new(
            n,
            deadlock,
            Some(Arc::clone(&io) as Arc<dyn Park>),
            timeline.clone().map(|t| t as Arc<dyn WakeNote>),
        );
        Registry {
            injector: Injector::new(),
            workers: stealers
                .into_iter()
                .map(|(stealer, job_stealer)| WorkerInfo {
                    terminate: CoreLatch::new(),
                    stats: CachePadded::new(WorkerStats::default()),
                    stealer,
                    job_stealer,
                    lifo: TaskSlot::new(),
                    deferred: TaskSlot::new(),
                    inbox: Inbox::new(),
                    wants_jobs: CachePadded::new(AtomicBool::new(false)),
                })
                .collect(),
            sleep: if watch_wakes {
                sleep.watching_wakes()
            } else {
                sleep
            },
            io,
            // Four shards per worker: each worker's own, and outside spawns
            // spread over the rest (`outside_spawn`, `spawn.rs`).
            tasks: OwnedTasks::new(4 * n),
            shares: CachePadded::default(),
            outside_stats: CachePadded::new(WorkerStats::default()),
            shutdown: ShutdownState::new(),
            blocking: BlockingPool::new(config.blocking),
            light_calls: LightCalls::default(),
            clock: CoarseClock::default(),
            timeline,
            busy_clock: BusyClock::new(),
            time_polls: config.poll_time_histogram.then(TickRate::calibrate),
            #[cfg(feature = "tokio-compat")]
            tokio: std::sync::OnceLock::new(),
            io_uring: config.io_uring && config.seed.is_none(),
            seeded: config
                .seed
                .map(|seed| Seeded::new(seed, config.seed_strategy, config.network.clone())),
            task_limit: config.max_tasks.map(TaskLimit::new),
            schedule_delay: CachePadded::new(ScheduleDelay::new()),
            #[cfg(feature = "console")]
            console,
        }
    }

    /// A seeded pool's state (`Builder::seed`), if this pool is one.
    #[inline]
    pub(crate) fn seeded(&self) -> Option<&Seeded> {
        self.seeded.as_ref()
    }

    /// The pool's task limit (`Builder::max_tasks`), if it has one.
    #[inline]
    pub(crate) fn task_limit(&self) -> Option<&TaskLimit> {
        self.task_limit.as_ref()
    }

    /// The load signal's sampler (`schedule_delay.rs`).
    #[inline]
    pub(crate) fn schedule_delay(&self) -> &ScheduleDelay {
        &self.schedule_delay
    }

    /// The console's task table and address, if the pool serves
    /// tokio-console.
    #[cfg(feature = "console")]
    pub(crate) fn console(&self) -> Option<&crate::inspect::console::record::Console> {
        self.console.as_ref()
    }

    /// Poll a `block_on` future (`poll`) with one of this pool's tokio
    /// runtimes entered (feature `tokio-compat`; without it, as it is): on
    /// a worker of this pool, its own (it is inside it for life); elsewhere
    /// the one with the fewest tokio tasks, on a budget of a few tokio
    /// operations where the thread has no tokio context, while the future
    /// uses tokio (`polls`; `TokioRuntimes::poll_outside`).
    #[inline]
    pub(crate) fn poll_in_tokio<R>(&self, polls: &mut OutsidePolls, poll: impl FnOnce() -> R) -> R {
        #[cfg(feature = "tokio-compat")]
        if self.local_worker().is_none() {
            if let Some(tokio) = self.tokio.get() {
                return tokio.poll_outside(polls, poll);
            }
        }
        let _ = polls;
        poll()
    }

    /// Enter one of this pool's tokio runtimes on this thread until the
    /// guard drops: the next worker's, in turn (feature `tokio-compat`;
    /// without it, nothing). Nothing on a worker of this pool: it is inside
    /// its own for life.
    pub(crate) fn enter_tokio(&self) -> TokioGuard<'_> {
        #[cfg(feature = "tokio-compat")]
        {
            if self.local_worker().is_some() {
                return None;
            }
            self.tokio.get().map(|t| t.enter_next())
        }
        #[cfg(not(feature = "tokio-compat"))]
        {
            None
        }
    }

    /// The pool's tokio runtimes (`tokio_compat/runtimes.rs`), set once
    /// at start.
    #[cfg(feature = "tokio-compat")]
    pub(crate) fn tokio(&self) -> &std::sync::OnceLock<TokioRuntimes> {
        &self.tokio
    }

    pub(crate) fn num_workers(&self) -> usize {
        self.workers.len()
    }

    /// What other threads reach of each worker.
    #[inline]
    pub(crate) fn workers(&self) -> &[WorkerInfo] {
        &self.workers
    }

    /// The counters of worker `index` (the task it polls now among them).
    pub(crate) fn worker_stats(&self, index: usize) -> &WorkerStats {
        &self.workers[index].stats
    }

    #[inline]
    pub(super) fn injector(&self) -> &Injector<Runnable> {
        &self.injector
    }

    #[inline]
    pub(crate) fn sleep_manager(&self) -> &SleepManager {
        &self.sleep
    }

    /// The table of live tasks.
    #[inline]
    pub(crate) fn tasks(&self) -> &OwnedTasks {
        &self.tasks
    }

    pub(crate) fn blocking(&self) -> &BlockingPool {
        &self.blocking
    }

    /// May file operations use the driver's io_uring (`Builder::io_uring`)?
    pub(crate) fn io_uring_allowed(&self) -> bool {
        self.io_uring
    }

    /// The light calls of `pool::fs` (`run_batched`, `spawn.rs`).
    pub(crate) fn light_calls(&self) -> &LightCalls {
        &self.light_calls
    }

    pub(super) fn shutdown_state(&self) -> &ShutdownState {
        &self.shutdown
    }

    /// The coarse clock of task ages.
    #[inline]
    pub(crate) fn clock(&self) -> &CoarseClock {
        &self.clock
    }

    /// The workers' timeline, when the pool is traced.
    #[inline]
    pub(crate) fn timeline(&self) -> Option<&Timeline> {
        self.timeline.as_deref()
    }

    /// The workers' timeline, shared, for a worker's lane.
    pub(super) fn timeline_shared(&self) -> Option<Arc<Timeline>> {
        self.timeline.clone()
    }

    /// The user's thread hooks (kept with the blocking pool's settings,
    /// whose threads run them too).
    pub(super) fn thread_hooks(&self) -> &ThreadHooks {
        &self.blocking.config().hooks
    }

    /// One share of this pool for a new task's header (`task/share.rs`),
    /// from `local`'s cache when the caller is that worker of this pool,
    /// else from the count; returns the pointer the header keeps.
    #[inline]
    pub(super) fn task_share(self: &Arc<Self>, local: Option<&WorkerThread>) -> NonNull<Registry> {
        match local {
            Some(w) => w.take_share(),
            None => self.take_shares(1),
        }
        Self::share_ptr(self)
    }

    /// The pointer a share is held by: into the `Arc`, as `Arc::as_ptr`
    /// gives it, so that the last give-back may drop a strong count through
    /// it.
    #[inline]
    pub(super) fn share_ptr(this: &Arc<Self>) -> NonNull<Registry> {
        // SAFETY: `Arc::as_ptr` never returns null.
        unsafe { NonNull::new_unchecked(Arc::as_ptr(this).cast_mut()) }
    }

    /// Take `n` shares from the count (one for an outside spawn, a batch
    /// for a worker's cache).
    #[inline]
    pub(super) fn take_shares(self: &Arc<Self>, n: usize) {
        if self.shares.take(n) {
            // The first shares: they hold one strong count between them,
            // dropped by the give-back that brings the count back to zero.
            std::mem::forget(Arc::clone(self));
        }
    }

    /// Give `n` shares back to the count of the pool at `this`.
    ///
    /// # Safety
    ///
    /// `this` came from `share_ptr`, and the caller holds `n` shares of
    /// that pool, given back once, here. The pool may be gone once this
    /// returns.
    #[inline]
    pub(super) unsafe fn give_back_shares(this: NonNull<Registry>, n: usize) {
        // SAFETY: the caller's shares keep the pool alive until this
        // give-back, and the reference ends with it.
        let last = unsafe { this.as_ref() }.shares.give_back(n);
        if last {
            // SAFETY: `this` points into the `Arc` (`share_ptr`), and this is
            // the strong count the shares held (`take_shares`), dropped once:
            // by the give-back that brought the count to zero.
            unsafe { Arc::decrement_strong_count(this.as_ptr().cast_const()) };
        }
    }

    /// The current thread as a worker of this pool, if it is one.
    #[inline]
    pub(crate) fn local_worker(&self) -> Option<&WorkerThread> {
        pool_cells::worker().filter(|w| std::ptr::eq(&**w.registry(), self))
    }

    /// Count `n` events: into `local`'s own counters when the caller is that
    /// worker of this pool, else into the shared outside counters.
    #[inline]
    pub(super) fn count(
        &self,
        local: Option<&WorkerThread>,
        counter: impl Fn(&WorkerStats) -> &AtomicU64,
        n: u64,
    ) {
        match local {
            Some(w) => w.stats().bump_owned(counter, n),
            None => self.outside_stats.bump_shared(counter, n),
        }
    }

    #[inline]
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutdown.is_shutting_down()
    }

    /// The counters of threads that are not workers of this pool.
    #[inline]
    pub(crate) fn outside_stats(&self) -> &WorkerStats {
        &self.outside_stats
    }

    /// Runnables waiting in the injector (`Metrics::injector_depth`).
    pub(crate) fn injector_len(&self) -> usize {
        self.injector.len()
    }

    /// The stall detector reported a poll.
    pub(crate) fn count_stall(&self) {
        self.outside_stats.bump_shared(|s| &s.stalls, 1);
    }

    /// Is there work in the injector? This is the sleeper's final check: the
    /// `is_empty` of crossbeam's injector reads head and tail with `SeqCst`,
    /// the "ReadJob" of the fence argument.
    pub(crate) fn has_injected_jobs(&self) -> bool {
        !self.injector.is_empty()
    }

    /// The pool's I/O driver. Before a socket, timer or ring is made on it,
    /// `enable_driver` lets the sleepers block in it.
    #[inline]
    pub(crate) fn driver(&self) -> &Arc<Driver> {
        &self.io
    }

    /// A socket, timer or ring is about to be made on the driver: the first
    /// such call lets a sleeper block in the driver from then on
    /// (`SleepManager::enable_driver`); the later ones are one load.
    #[inline]
    pub(crate) fn enable_driver(&self) {
        let woken = self.sleep.enable_driver();
        if woken > 0 {
            self.count(self.local_worker(), |s| &s.wakeups, woken as u64);
        }
    }

    /// Wake worker `index` if it sleeps (its latch was set), and count it.
    pub(crate) fn wake_worker(&self, index: usize) {
        if self.sleep.wake_specific_thread(index) {
            self.count(self.local_worker(), |s| &s.wakeups, 1);
        }
    }

    /// The clock that times polls, if they are timed
    /// (`Builder::poll_time_histogram`).
    pub(crate) fn poll_clock(&self) -> Option<TickRate> {
        self.time_polls
    }

    /// The clock of the workers' busy time.
    #[inline]
    pub(crate) fn busy_clock(&self) -> &BusyClock {
        &self.busy_clock
    }
}
