//! `WorkerThread`: the state a worker keeps on its own stack, running
//! tasks and fork-join jobs, its own scheduling (`schedule_local`), and its
//! cache of the pool's shares. Its loop is `main_loop.rs`, its search
//! `search.rs`; fork-join's side of a worker (its job deque, linked
//! halves) is `join/worker_jobs.rs`.
//!
//! A worker is in one of four states (see `docs/ARCHITECTURE.md`):
//! *active* (running tasks), *idle* (searching, counted inactive), *sleepy*
//! (idle, announced in the JEC, one search left) and *sleeping* (blocked on
//! its condvar or in the I/O driver, counted sleeping).
//! [`WorkerThread::wait_until`] is the whole state machine; the main loop is
//! `wait_until(terminate latch)`, and a `block_on` on a worker thread is
//! `wait_until(its own latch)`.
//!
//! # Invariants
//!
//! * The context's current worker (`pool_cells::worker`) points at the
//!   `WorkerThread` on this thread's stack for exactly as long as
//!   `main_loop` runs; it is null on every other thread. Tasks are only run
//!   from inside `main_loop`, so every reference handed out by
//!   `pool_cells::worker()` is used within that frame, on this thread
//!   (`WorkerThread` is `!Sync`, so `&WorkerThread` cannot leave it).
//! * Only this thread pushes to or pops from `worker` and `jobs`, and puts
//!   into its LIFO slot (`WorkerInfo::lifo`); others steal from `worker` and
//!   `jobs`, and only the watcher takes from the slot (when this worker's
//!   current poll runs long, `../watcher.rs`). The LIFO slot holds a task only
//!   while this worker is running another one (every search empties it
//!   first), so an idle worker's slot is empty and every task it could run
//!   is visible to thieves.
//! * The deferred slot (`WorkerInfo::deferred`: a task made to yield by its
//!   budget with nothing else queued here) is filled only at the end of a
//!   poll, with the watcher awake, and emptied by this worker's search as
//!   its last step, by the watcher's rescue, or by `wait_until`'s return
//!   (which posts it). A search that returns `None` left it empty, so an
//!   idle or sleeping worker hides no task there either.
//! * Between `start_looking` and `work_found` the worker runs nothing.

use super::local::LocalTasks;
use super::removals::Removals;
use super::search::XorShift64Star;
use crate::context::pool_cells;
use crate::inspect::metrics::WorkerStats;
use crate::inspect::ticks::TickRate;
use crate::inspect::timeline::Kind;
use crate::inspect::timeline_lane::WorkerLane;
use crate::join::job_ref::JobRef;
use crate::join::worker_jobs::WorkerJobs;
use crate::scheduler::coop;
use crate::scheduler::registry::{Registry, WorkerInfo};
use crate::task::future::cancel;
use crate::task::header::Runnable;
use crate::task::header::TaskHeader;
use crate::task::id::TaskId;
use crate::task::owned::LiveSlot;
use crate::task::wait_board::WaitScratch;
use crate::task::waits::Wait;
#[cfg(feature = "tokio-compat")]
use crate::tokio_compat::worker_runtime::WorkerRuntime;
use crossbeam_deque::Worker;
use std::cell::{Cell, RefCell};
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::Waker;

/// Shares of the pool (`task/share.rs`) a worker's cache takes from the
/// pool's count when it runs dry, and gives back when it holds twice as
/// many: one atomic operation per this many spawns, or task ends, at most.
const SHARE_BATCH: usize = 128;

/// The state a worker thread keeps on its own stack.
pub(crate) struct WorkerThread {
    pub(super) worker: Worker<Runnable>,
    /// Fork-join's side (`join/worker_jobs.rs`): the job deque, the linked
    /// `join` halves, the cache of job blocks.
    pub(super) jobs: WorkerJobs,
    pub(super) index: usize,
    pub(super) registry: Arc<Registry>,
    /// `registry.workers()[index]`, read on every schedule, run and
    /// count: a pointer saves the slice's load and bounds check each time
    /// (`info`).
    info: NonNull<WorkerInfo>,
    pub(super) rng: XorShift64Star,
    /// Searches so far, for `INJECTOR_INTERVAL`.
    pub(super) tick: Cell<u32>,
    /// Consecutive runs from `lifo`, for `MAX_LIFO_POLLS`.
    pub(super) lifo_polls: Cell<u32>,
    /// Between `mark_blocked` and `mark_unblocked`.
    pub(super) marked_blocked: Cell<bool>,
    /// Finished tasks of other workers' shards, not yet removed.
    pub(super) removals: Removals,
    /// While this worker wakes the tasks its driver poll made ready: how
    /// many of them it pushed onto its deque so far (posted at the end, as
    /// one batch of internal jobs).
    pub(super) io_batch: Cell<Option<usize>>,
    /// The task running now has ended: its future was dropped
    /// (`task_ended`), so what it wakes from now on is its joiner.
    /// Cleared after each run; a stale `true` only changes where a woken
    /// task is queued (`schedule_local`), never whether it runs.
    pub(super) ended: Cell<bool>,
    /// The driver's `io_events` at this worker's last forced yield
    /// (`poll_driver_if_unwatched`).
    pub(super) events_seen: Cell<u64>,
    /// The wakers a driver poll returned, kept for its capacity.
    pub(super) io_wakers: Cell<Vec<Waker>>,
    /// Tasks the last steal moved into our deque besides the one it
    /// returned, not posted yet (see `post_stolen`).
    pub(super) stolen: Cell<usize>,
    /// This worker's block of task ids: the next one and the block's end.
    pub(super) ids: Cell<(u64, u64)>,
    /// Its `spawn_local` tasks (those woken elsewhere wait in its inbox,
    /// `WorkerInfo`).
    pub(super) local: LocalTasks,
    /// Its lane of the timeline, if the pool is traced.
    pub(super) lane: WorkerLane,
    /// Its tokio runtime, which it drives (`tokio-compat`, `tokio_compat/worker_runtime.rs`).
    #[cfg(feature = "tokio-compat")]
    pub(super) guest: Option<WorkerRuntime>,
    /// `Builder::poll_time_histogram`: time each poll with this clock.
    pub(super) time_polls: Option<TickRate>,
    /// Shares of the pool for the headers of tasks spawned here, and given
    /// back by those dropped here (`task/share.rs`); the rest of the batch
    /// goes back to the pool's count when this thread leaves (`Drop`).
    pub(super) shares: Cell<usize>,
    /// The header of the task being polled here (the innermost, while a
    /// poll runs another task's nested in it), for the pool futures that
    /// record what it waits on (`note_wait`).
    pub(super) polling: Cell<Option<NonNull<TaskHeader>>>,
    /// The waits a task's poll replaces, kept for their `since`
    /// (`task/waits.rs`).
    pub(super) wait_scratch: RefCell<WaitScratch>,
}

impl WorkerThread {
    /// Worker `index` of `registry`, owning its two deques: a worker
    /// thread's (`main_loop`) or a seeded pool's logical worker
    /// (`seeded/`), whose generator and task ids come from its seed.
    pub(crate) fn new(
        registry: Arc<Registry>,
        index: usize,
        worker: Worker<Runnable>,
        jobs: Worker<JobRef>,
    ) -> WorkerThread {
        let (rng, ids) = match registry.seeded() {
            Some(s) => (s.seed() ^ (index as u64 + 1), s.worker_ids(index)),
            None => (index as u64 + 1, (0, 0)),
        };
        // SAFETY: the flag is in the registry's `WorkerInfo` of this
        // worker, and `self.registry` keeps the registry alive as long as
        // `self`.
        let jobs = unsafe { WorkerJobs::new(jobs, &registry.workers()[index].wants_jobs) };
        let info = NonNull::from(&registry.workers()[index]);
        WorkerThread {
            info,
            worker,
            jobs,
            index,
            rng: XorShift64Star::new(rng),
            tick: Cell::new(0),
            lifo_polls: Cell::new(0),
            marked_blocked: Cell::new(false),
            removals: Removals::new(),
            io_batch: Cell::new(None),
            ended: Cell::new(false),
            events_seen: Cell::new(0),
            io_wakers: Cell::new(Vec::new()),
            stolen: Cell::new(0),
            ids: Cell::new(ids),
            local: LocalTasks::default(),
            lane: WorkerLane::new(registry.timeline_shared(), index),
            #[cfg(feature = "tokio-compat")]
            guest: WorkerRuntime::take(&registry, index),
            time_polls: registry.poll_clock(),
            shares: Cell::new(0),
            polling: Cell::new(None),
            wait_scratch: RefCell::default(),
            registry,
        }
    }

    /// The worker leaves its pool (its `wait_until` of the terminate latch
    /// returned, or a seeded pool shuts down): drop what it still holds.
    pub(crate) fn leave(&self) {
        // Shutdown: our `spawn_local` tasks can only be dropped here.
        self.local
            .cancel_all(self.registry.tasks(), self.index, &self.info().inbox);
        // Drop what is left in our LIFO slot and deque. Dropping a
        // future may wake another task onto them, so repeat until both stay empty.
        while let Some(runnable) = self.info().lifo.take().or_else(|| self.worker.pop()) {
            cancel(runnable);
        }
        // A fork-join job is never dropped: someone waits for it. (Only a
        // scope's spawn can be left here: a `join` returns with its own.)
        while let Some(job) = self.jobs.pop() {
            self.execute_job(job);
        }
    }

    /// A search found nothing: keep no finished task alive, neither in the
    /// batch of removals nor in the keys other workers handed back to this
    /// worker's shard.
    pub(crate) fn went_idle(&self) {
        self.removals.flush(self.registry.tasks());
        self.registry.tasks().reclaim(self.index);
    }

    /// Does anything wait for this worker: its deques, its LIFO or
    /// deferred slot, its `spawn_local` queue or inbox? (A seeded pool's
    /// check before it calls itself quiet.)
    pub(crate) fn has_queued(&self) -> bool {
        let info = self.info();
        !self.worker.is_empty()
            || !self.jobs.is_empty()
            || info.lifo.is_occupied()
            || info.deferred.is_occupied()
            || self.local.any_live() && (self.local.has_queued() || info.inbox.has_items())
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    pub(crate) fn stats(&self) -> &WorkerStats {
        &self.info().stats
    }

    /// An id for a task spawned on this worker.
    #[inline]
    pub(crate) fn next_task_id(&self) -> TaskId {
        TaskId::next_in(&self.ids)
    }

    /// One share of the pool for a header of a task spawned here: from the
    /// cache, refilled by a batch when it is empty.
    #[inline]
    pub(crate) fn take_share(&self) {
        let mut n = self.shares.get();
        if n == 0 {
            self.registry.take_shares(SHARE_BATCH);
            n = SHARE_BATCH;
        }
        self.shares.set(n - 1);
    }

    /// A header of this pool was dropped on this thread: its share goes
    /// into the cache, and a batch of the cache back to the pool's count
    /// once it holds more than two batches.
    #[inline]
    pub(crate) fn give_back_share(&self) {
        let mut n = self.shares.get() + 1;
        if n > 2 * SHARE_BATCH {
            // SAFETY: the cache holds these shares of this pool, given back
            // once (the cell drops them below); it keeps more than a batch,
            // and `self.registry` a strong count of its own anyway.
            unsafe { Registry::give_back_shares(Registry::share_ptr(&self.registry), SHARE_BATCH) };
            n -= SHARE_BATCH;
        }
        self.shares.set(n);
    }

    /// This worker's state that other threads reach.
    #[inline]
    pub(super) fn info(&self) -> &WorkerInfo {
        // SAFETY: `info` points into the registry's `workers`, a boxed
        // slice made once when the registry is built and never moved or
        // replaced; `self.registry` keeps the registry alive as long as
        // `self`, and nothing takes a `&mut` to a `WorkerInfo`.
        unsafe { self.info.as_ref() }
    }

    /// The schedule function, on this worker's own thread; `yielded` when
    /// the task woke itself while running.
    ///
    /// * A task that woke itself while running (`yield_now`) goes to the
    ///   back of the deque, behind every queued task, and is posted as an
    ///   internal job: if the poll that follows is long, a sleeping worker
    ///   takes it (cheap while nobody sleeps: one load of the counters).
    ///   One made to yield by its cooperative budget first has this worker
    ///   poll the I/O driver without blocking if nobody has since its
    ///   previous such yield (`poll_driver_if_unwatched`), so that the
    ///   tasks it makes ready queue ahead of it: with an always-ready task
    ///   on every worker, the driver was otherwise polled only every
    ///   `DRIVER_INTERVAL` searches, 61 budget-long polls (`groups`'
    ///   fairness_per_worker: light p50 3.5 ms against tokio's 124 us; tokio
    ///   defers such a task until its worker's next driver poll, to the
    ///   same end). If that leaves nothing else queued on this worker (its
    ///   deque, LIFO slot and deferred slot empty) and the watcher is
    ///   awake, the task is *deferred* instead: put in the worker's
    ///   deferred slot (`WorkerInfo::deferred`), unposted and out of
    ///   thieves' reach, it runs when a search of this worker finds nothing
    ///   else (other workers' deques and the injector included). If this
    ///   worker is held up meanwhile (a long poll of a task it stole, a
    ///   long tokio turn), the watcher injects it once it has seen it wait
    ///   a whole tick with no poll begun (`../watcher.rs`); `wait_until`
    ///   posts it before it returns. Posted like a yield, a lone
    ///   always-ready task woke the sleeping worker at every other forced
    ///   yield and changed workers whenever that worker stole it (each move
    ///   put it on the CPU of the clients it competes with: `groups`'
    ///   one-hot fairness, light p999 1.6-2.9 ms against tokio's 0.2 with
    ///   the clients pinned to one CPU). Run behind what this worker can
    ///   steal, the other workers' light tasks no longer wait a hot poll
    ///   for it (fairness_per_worker: light p50 21 us against tokio's
    ///   93-104, the hot connections 95 MB/s against tokio's 149). Tokio
    ///   defers such a task the same way: after its worker found nothing
    ///   to steal, waking nobody while it is alone.
    /// * Any other task (spawned, or woken by the task running now) goes to
    ///   the LIFO slot, to run next on this warm thread, and tickles nobody:
    ///   thieves do not take from the slot, and this worker runs it as soon
    ///   as the current task returns. If that poll runs long, the watcher
    ///   moves it to the injector, which posts it. The task it displaces
    ///   goes onto the deque, where others can steal it, so that push
    ///   tickles. The exception is the first such task after the pool
    ///   slept, which finds the watcher parked: it is posted like a yield
    ///   (one wake, of a sleeper, instead of two, of the watcher and then of
    ///   a sleeper, if the poll after it is long), and the watcher is
    ///   unparked for the tasks after it (`WatcherPark::unparked_for_put`).
    /// * A task woken by the end of the task running now (its joiner: the
    ///   wake comes after that task's future was dropped, `task_ended`)
    ///   goes to the back of the deque, posted like a yield, when the deque
    ///   holds others. A task awaiting many handles in turn (`for h in
    ///   handles { h.await }`) would otherwise run after each one ends, find
    ///   the next still queued and wait again: a poll, a waker registration
    ///   and a wake per ended task (spawn_many_local's root was polled 10 001
    ///   times for its 10 000 tasks). Behind the queue it finds them done.
    ///   With the deque empty it takes the LIFO slot as any other wake does,
    ///   so a chain of joins (chained_spawn, a recursion's last level)
    ///   unwinds on this warm thread and tickles nobody.
    /// * A task woken by I/O or a timer that this worker's driver poll
    ///   found goes to the back of the deque; the whole batch is posted as
    ///   internal jobs when the poll's wakers have all been woken.
    #[inline]
    pub(crate) fn schedule_local(&self, runnable: Runnable, yielded: bool) {
        if let Some(n) = self.io_batch.get() {
            self.worker.push(runnable);
            self.io_batch.set(Some(n + 1));
        } else if yielded
            || (self.ended.get() && !self.worker.is_empty())
            || self.registry.sleep_manager().watcher().unparked_for_put()
        {
            if yielded && coop::spent() {
                self.poll_driver_if_unwatched();
                let info = self.info();
                if self.worker.is_empty()
                    && !info.lifo.is_occupied()
                    && !info.deferred.is_occupied()
                    && !self.registry.sleep_manager().watcher().unparked_for_put()
                {
                    let displaced = info.deferred.put(runnable);
                    debug_assert!(displaced.is_none(), "only this worker defers");
                    return;
                }
            }
            self.push_stealable(runnable);
        } else {
            let displaced = self.info().lifo.put(runnable);
            if let Some(displaced) = displaced {
                self.push_stealable(displaced);
            }
        }
    }

    /// The schedule function of this worker's own `spawn_local` tasks, on
    /// its own thread: to the back of its local queue. Nobody is woken:
    /// this worker is awake, and nobody else may run the task.
    #[inline]
    pub(crate) fn push_local(&self, runnable: Runnable) {
        self.local.push(runnable);
    }

    /// A task of this worker's own: its local tasks and its deque in turn.
    /// A worker with no local task (most) pays one read of its own stack,
    /// not the lookup of its inbox.
    #[inline]
    pub(super) fn pop_own(&self) -> Option<Runnable> {
        if !self.local.any_live() {
            return self.worker.pop();
        }
        self.local.pop_own(&self.worker, &self.info().inbox)
    }

    /// Has this worker local tasks woken elsewhere? Part of its final check
    /// before it sleeps (`sleep/inbox.rs`); its local queue is empty then
    /// (it just searched).
    pub(super) fn has_inbox(&self) -> bool {
        self.info().inbox.has_items()
    }

    /// The task running now on this worker has ended: its future was
    /// dropped (`Schedule::release`). Until the run returns, a task it
    /// wakes is its joiner (see `schedule_local`).
    #[inline]
    pub(crate) fn task_ended(&self) {
        self.ended.set(true);
    }

    /// A `spawn_local` task of this worker was registered.
    pub(crate) fn local_task_started(&self) {
        self.local.started();
    }

    /// A `spawn_local` task of this worker dropped its future.
    pub(crate) fn local_task_ended(&self) {
        self.local.ended();
    }

    /// Push onto the deque (the back: it is FIFO) and post it as an internal
    /// job: wake a sleeper if no awake worker is idle.
    pub(super) fn push_stealable(&self, runnable: Runnable) {
        self.worker.push(runnable);
        self.count_wakeups(self.registry.sleep_manager().new_internal_jobs(1));
    }

    /// Leaving `wait_until` (a `block_on` on this worker goes back to the
    /// poll that called it; the main loop, to shut down): post the deferred
    /// task as a yield, behind the deque.
    pub(super) fn post_deferred(&self) {
        if let Some(runnable) = self.info().deferred.take() {
            self.push_stealable(runnable);
        }
    }

    /// Remove `slot` from the live tasks with the next batch.
    pub(crate) fn defer_removal(&self, slot: LiveSlot) {
        self.removals.defer(slot, self.registry.tasks());
    }

    /// `mark_blocked` (`blocked`) or `mark_unblocked` on this worker.
    pub(crate) fn mark_blocked(&self, blocked: bool) {
        let Some(deadlock) = self.registry.sleep_manager().deadlock() else {
            return;
        };
        if self.marked_blocked.replace(blocked) == blocked {
            let (this, other) = if blocked {
                ("mark_blocked", "mark_unblocked")
            } else {
                ("mark_unblocked", "mark_blocked")
            };
            panic!("pool::{this}() called twice on one worker without pool::{other}() in between");
        }
        if blocked {
            deadlock.mark_blocked();
        } else {
            deadlock.mark_unblocked();
        }
    }

    pub(crate) fn run(&self, work: Work) {
        match work {
            Work::Task(runnable) => self.execute(runnable),
            Work::Job(job) => self.execute_job(job),
        }
    }

    /// Fork-join's side of this worker (`join/worker_jobs.rs`).
    #[inline]
    pub(crate) fn jobs(&self) -> &WorkerJobs {
        &self.jobs
    }

    /// A fork-join job was pushed on this worker's job deque
    /// (`join/mod.rs`, `push_job`): post it as an internal job, as a
    /// spawned task is (a sleeper is woken for it unless an awake worker
    /// is idle), and count the push as a search (`join_tick`).
    pub(crate) fn posted_job(&self) {
        self.count_wakeups(self.registry.sleep_manager().new_internal_jobs(1));
        self.join_tick();
    }

    /// A recursion of joins pops most of its jobs back inline, without a
    /// search, so it counts its pushes and links as searches (`push_tick`):
    /// every `DRIVER_INTERVAL`-th polls the I/O driver, and every
    /// `INJECTOR_INTERVAL`-th runs a task from the injector first, so that
    /// tasks woken from outside (I/O, channels) do not wait for the whole
    /// recursion while every worker is in it.
    #[inline]
    pub(crate) fn join_tick(&self) {
        if self.push_tick() {
            self.run_injected();
        }
    }

    /// A recursion's periodic look at the injector (`push_tick`): run a
    /// task from it first, if there is one.
    pub(super) fn run_injected(&self) {
        if let Some(r) = self.steal_injected() {
            self.post_stolen();
            self.execute(r);
        }
    }

    /// Run a fork-join job (its panics are caught inside it).
    pub(crate) fn execute_job(&self, job: JobRef) {
        self.stats().bump_owned(|s| &s.jobs, 1);
        self.jobs.ran_one();
        let start = self.trace_now();
        // SAFETY: every job in a deque is alive until it has run, and runs
        // once: it left the deque by this pop or steal (`join/job.rs`).
        unsafe { job.execute() };
        self.trace(Kind::Job, start, 0);
    }

    pub(super) fn execute(&self, runnable: Runnable) {
        let id = runnable.metadata().id();
        let stats = self.stats();
        let outer = stats.begin_poll(id);
        // The load signal (`scheduler/schedule_delay.rs`): end the sample
        // if it is this task's.
        self.registry.schedule_delay().ran(id.as_u64());
        let outer_task = self
            .polling
            .replace(Some(NonNull::from(runnable.metadata())));
        let was_marked = self.marked_blocked.get();
        let start = self.trace_now();
        let timed = self.time_polls.map(|clock| (clock, clock.now()));
        // In another worker's tokio runtime's context while this one's has
        // more than its share of tokio tasks (`WorkerRuntime::balance`).
        #[cfg(feature = "tokio-compat")]
        let _elsewhere = self.guest.as_ref().and_then(|h| h.enter_elsewhere());
        // Panics of the task's future are caught inside `TaskFuture`. Each
        // poll has its own cooperative budget (`scheduler/coop.rs`).
        let forced_yield = coop::budgeted_ran_out(|| {
            runnable.run();
        });
        self.ended.set(false);
        if let Some((clock, start)) = timed {
            stats.poll_times.record(clock.ns_since(start));
        }
        if forced_yield {
            stats.bump_owned(|s| &s.forced_yields, 1);
        }
        self.trace(Kind::Poll, start, id.as_u64());
        stats.end_poll(outer);
        self.polling.set(outer_task);
        if !was_marked && self.marked_blocked.get() {
            // The poll marked the worker blocked and returned (panicked, or
            // awaited) without unmarking: it is not blocked any more.
            self.mark_blocked(false);
        }
    }

    /// A pool future returned `Pending` for `wait` in the poll under way on
    /// this worker: record it for that poll's task (`task/waits.rs`). A
    /// few loads and stores: no lock, no allocation.
    #[inline]
    pub(crate) fn note_wait(&self, wait: Wait) {
        let Some(header) = self.polling.get() else {
            return;
        };
        // SAFETY: `polling` names the task of a `runnable.run()` under way
        // on this thread (`execute` sets it around the run and restores it
        // after), and the run keeps the task's allocation alive.
        let header = unsafe { header.as_ref() };
        header.record_wait(wait, || self.registry.clock().now(), &self.wait_scratch);
    }

    /// A start time for `trace` (0 when the pool is not traced).
    #[inline]
    pub(crate) fn trace_now(&self) -> u64 {
        self.lane.now()
    }

    /// Record an event that began at `start` (from `trace_now`) and ends now.
    #[inline]
    pub(crate) fn trace(&self, kind: Kind, start: u64, arg: u64) {
        self.lane.record(kind, start, arg);
    }

    /// What this worker sleeps in instead of its condvar: its tokio
    /// runtime (`tokio-compat`), if any.
    #[inline]
    pub(super) fn guest(&self) -> Option<&dyn crate::sleep::park::GuestRuntime> {
        #[cfg(feature = "tokio-compat")]
        {
            self.guest
                .as_ref()
                .map(|h| h as &dyn crate::sleep::park::GuestRuntime)
        }
        #[cfg(not(feature = "tokio-compat"))]
        {
            None
        }
    }

    /// A busy worker's turn of its tokio runtime (`tokio-compat`), if it
    /// has tasks queued or, when `periodic`, if it is due. Out of line: the
    /// search that calls it is the hottest loop of the pool.
    #[cfg(feature = "tokio-compat")]
    #[inline(never)]
    pub(super) fn turn_guest(&self, periodic: bool) {
        if let Some(guest) = &self.guest {
            guest.turn(periodic);
        }
    }

    pub(super) fn count_wakeups(&self, woken: usize) {
        if woken > 0 {
            self.stats().bump_owned(|s| &s.wakeups, woken as u64);
        }
    }
}

/// The cache of shares goes back to the pool's count. `main_loop`'s
/// `ExitGuard` has taken this thread out of the context by now, so a
/// header dropped on this thread from here on (one of this worker's wakers
/// kept for their capacity, say) gives its share straight to the count:
/// none lands in a cache that nobody gives back.
impl Drop for WorkerThread {
    fn drop(&mut self) {
        debug_assert!(
            pool_cells::worker().is_none(),
            "the worker left the context first"
        );
        let n = self.shares.replace(0);
        if n > 0 {
            // SAFETY: the cache's shares of this pool, given back once
            // (the cell is zero now); `self.registry` keeps the pool alive.
            unsafe { Registry::give_back_shares(Registry::share_ptr(&self.registry), n) };
        }
    }
}

/// What a search found.
pub(crate) enum Work {
    Task(Runnable),
    Job(JobRef),
}

impl Work {
    /// The task's id; `None` for a fork-join job.
    pub(crate) fn task_id(&self) -> Option<TaskId> {
        match self {
            Work::Task(r) => Some(r.metadata().id()),
            Work::Job(_) => None,
        }
    }
}
