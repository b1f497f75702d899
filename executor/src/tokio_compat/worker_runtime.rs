//! `WorkerRuntime`: a worker's own tokio runtime (feature `tokio-compat`),
//! driven by the worker: its busy periods run inside it, it gives the
//! runtime turns, its sleeps block in it (`sleep/park.rs`'s `GuestRuntime`), and
//! it balances tokio tasks with the other workers' runtimes. See `mod.rs`
//! for what runs where.

use super::epoll_bridge::DriverWatch;
use super::runner::{Aside, Handover, Runner};
use super::runtimes::{alive_tasks, Peer};
use crate::context::pool_cells;
use crate::scheduler::io_driver::IoDriver;
use crate::scheduler::registry::Registry;
use crate::sleep::park::GuestRuntime;
use crate::task::coarse_clock::coarse_now_ns;
use std::cell::Cell;
use std::future::poll_fn;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::runtime::Runtime;

/// A busy worker with no tokio task queued gives its runtime a turn this
/// often, for tokio's reactor and timers: a turn costs a microsecond or two
/// when tokio has nothing to do (a wake of its own `block_on` future, an
/// epoll poll; 0.7% of a worker's samples at 100 us under HTTP load), and
/// tokio's own workers poll their reactor every 61 tasks, a few hundred
/// microseconds under load. (Queued tokio tasks get their turn at once.)
const TURN_INTERVAL: Duration = Duration::from_micros(250);

/// Tokio tasks a worker's runtime may have alive beyond the least loaded
/// runtime it looked at before its pool tasks' spawns go there instead:
/// enough that a few short-lived spawns (a request's) stay local, few
/// enough that 32 WebSockets split within 18/14.
const BALANCE_SLACK: usize = 4;

/// A worker's runtime, driven by the worker: its busy turns and the guest
/// runtime of its sleeps. Lives on the worker's stack; shuts its runtime down when
/// dropped.
pub(crate) struct WorkerRuntime {
    runtime: Option<Runtime>,
    registry: Arc<Registry>,
    /// The worker whose runtime this is.
    index: usize,
    /// Inside the runtime's `block_on` (a busy period, a turn or a sleep):
    /// a nested one (a tokio task, or a pool task of a busy period, that
    /// blocks on a pool future) must not enter again.
    inside: Cell<bool>,
    /// Inside `run_busy`'s `block_on` (not a turn's or a sleep's).
    busy: Cell<bool>,
    /// Set by `turn` during a busy period: the runtime should have a turn
    /// at the next task boundary (`run_busy`).
    wanted: Cell<bool>,
    /// Tokio tasks alive when this busy step began (`turn_wanted`).
    alive_at_step: Cell<usize>,
    /// Tokio tasks may wait in the runtime's own queue, woken there by a
    /// `wake_inside` that returned before tokio ran them: the next busy
    /// step steps aside for them, the next idle search gives a turn.
    queued_here: Cell<bool>,
    /// How a busy period passes to the runtime's runner task and back.
    handover: Rc<Handover>,
    /// Every worker's runtime (this one's at `index`).
    peers: Arc<[Peer]>,
    /// This runtime's metrics (`peers[index]`'s), read after every pool
    /// task of a busy period (`turn_wanted`): kept here, no index and
    /// bounds check each time.
    metrics: tokio::runtime::RuntimeMetrics,
    /// The peer whose context this worker's pool tasks are polled in, if
    /// not its own (`balance`, `enter_elsewhere`).
    elsewhere: Cell<Option<usize>>,
    /// The peer `balance` compares with next.
    next_peer: Cell<usize>,
    /// When the last turn began, in `coarse_now_ns` (to the kernel tick: a
    /// periodic turn comes at most once a tick, at least every
    /// `TURN_INTERVAL` rounded up to one).
    last_turn: Cell<u64>,
    /// The pool's driver as this runtime's reactor watches it while this
    /// worker sleeps holding it (`epoll_bridge.rs`).
    watch: DriverWatch,
}

impl std::fmt::Debug for WorkerRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerRuntime")
            .field("inside", &self.inside.get())
            .finish_non_exhaustive()
    }
}

/// Clears a flag of `WorkerRuntime` (`inside`, `busy`), also on a panic.
struct Outside<'a>(&'a Cell<bool>);

impl Drop for Outside<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl WorkerRuntime {
    /// Worker `index`'s runtime, taken from the pool's set to drive
    /// (`None` without one: a seeded pool's, or one taken already).
    pub(crate) fn take(registry: &Arc<Registry>, index: usize) -> Option<WorkerRuntime> {
        let tokio = registry.tokio().get()?;
        let runtime = tokio.take_runtime(index)?;
        Some(WorkerRuntime::new(runtime, tokio.peers(), registry, index))
    }

    fn new(
        runtime: Runtime,
        peers: Arc<[Peer]>,
        registry: &Arc<Registry>,
        index: usize,
    ) -> WorkerRuntime {
        let handover = Rc::new(Handover::default());
        drop(runtime.spawn(tokio::task::unconstrained(Runner(Rc::clone(&handover)))));
        WorkerRuntime {
            runtime: Some(runtime),
            registry: Arc::clone(registry),
            index,
            inside: Cell::new(false),
            busy: Cell::new(false),
            wanted: Cell::new(false),
            alive_at_step: Cell::new(0),
            queued_here: Cell::new(false),
            handover,
            metrics: peers[index].metrics.clone(),
            peers,
            elsewhere: Cell::new(None),
            next_peer: Cell::new(index),
            last_turn: Cell::new(coarse_now_ns()),
            watch: DriverWatch::default(),
        }
    }

    /// This runtime's metrics: the depth of its queue of tasks scheduled
    /// from outside its `block_on` (a wake from another thread), its tasks
    /// alive, its busy time.
    #[inline]
    fn metrics(&self) -> &tokio::runtime::RuntimeMetrics {
        &self.metrics
    }

    /// This runtime's tokio tasks alive, its runner not counted.
    #[inline]
    fn alive_tasks(&self) -> usize {
        alive_tasks(self.metrics())
    }

    fn runtime(&self) -> &Runtime {
        self.runtime
            .as_ref()
            .expect("a worker's runtime lives as long as its guest runtime")
    }

    /// The time tokio's scheduler of this runtime spent running its tasks
    /// so far (its one worker is the thread in its `block_on`: this
    /// worker's). Tokio's work this worker does while it is not busy in the
    /// pool's sense (asleep in the runtime, or turning it in an idle search)
    /// is added to its busy time from this (`Metrics::busy`).
    fn tokio_busy(&self) -> Duration {
        self.metrics().worker_total_busy_duration(0)
    }

    /// Enter the runtime's context on this thread until the guard drops.
    pub(crate) fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.runtime().enter()
    }

    fn block_on_inside<F: Future>(&self, future: F) -> F::Output {
        self.inside.set(true);
        let _outside = Outside(&self.inside);
        self.runtime().block_on(future)
    }

    /// A worker between two searches (every 8th, and every 61st with
    /// `periodic`). Outside the runtime (an idle worker's search): give the
    /// runtime a turn if tasks were scheduled onto it from outside (a wake
    /// from another thread, or a spawn made outside a busy period: they
    /// wait for this worker alone) or left in its queue by `wake_inside`,
    /// or, when `periodic` (every 61st
    /// search), if `TURN_INTERVAL` passed since its last turn (for its
    /// reactor and timers). tokio runs its ready tasks, then polls its
    /// reactor and timers without blocking (the `block_on` future woke
    /// itself), and the future completes on its second poll.
    ///
    /// In a busy period inside the runtime (`run_busy`) the turn is only
    /// asked for, to be taken at the next task boundary: also when tokio
    /// tasks are alive, which pool tasks may have spawned or woken onto
    /// the runtime's own queue (not seen from here: it has no public
    /// length), so they wait at most this many searches.
    #[inline]
    pub(crate) fn turn(&self, periodic: bool) {
        let queued = self.has_queued();
        if self.inside.get() {
            if self.busy.get() && !self.wanted.get() {
                let due = queued
                    || self.alive_tasks() > 0
                    || (periodic && self.periodic_turn_due(coarse_now_ns()));
                self.wanted.set(due);
            }
            return;
        }
        if !queued && !periodic {
            return;
        }
        let now = coarse_now_ns();
        if !queued && !self.periodic_turn_due(now) {
            return;
        }
        self.last_turn.set(now);
        self.turn_with(|| true);
    }

    /// Tasks wait in the runtime's queue for a turn: scheduled from outside
    /// (its global queue), or woken inside by a `wake_inside` that did not
    /// run them.
    #[inline]
    fn has_queued(&self) -> bool {
        self.queued_here.get() || self.metrics().global_queue_depth() > 0
    }

    /// Whether an idle worker should wake what its driver poll made ready
    /// inside the runtime (`wake_inside`): outside it, and tokio tasks of
    /// this runtime are alive, so some of the wakers may be theirs.
    #[inline]
    pub(crate) fn wakes_inside(&self) -> bool {
        !self.inside.get() && self.alive_tasks() > 0
    }

    /// Wake what a driver poll of this idle worker made ready (`wake`,
    /// which says how many of the pool's tasks it pushed onto the worker's
    /// deque) inside the runtime, in a turn: a tokio task's waker is then
    /// a push onto the runtime's own queue. Woken from outside, each is a
    /// remote schedule, a lock and a write to the runtime's eventfd, and
    /// the turn that runs it comes later: in the WebSocket echo of the
    /// reference service (a tokio task per socket, awaiting a pool
    /// socket), one write per echo. If no task of the pool's was woken,
    /// tokio runs what was woken in this turn (and polls its driver
    /// without blocking, as at any turn); else the worker goes on to run
    /// its pool tasks first, and tokio's wait for its next busy step to
    /// step aside (`queued_here`), or for its next idle search's turn.
    pub(crate) fn wake_inside(&self, wake: impl FnOnce() -> usize) -> usize {
        let mut wake = Some(wake);
        let mut found = 0;
        self.turn_with(|| {
            found = wake.take().map_or(0, |wake| wake());
            self.queued_here.set(found > 0);
            found == 0
        });
        if found == 0 {
            // Tokio polled its driver: the periodic turn is due from now.
            self.last_turn.set(coarse_now_ns());
        }
        found
    }

    /// A turn of the runtime from an idle search: its future first calls
    /// `first`, then, if that returns true, wakes itself: tokio runs its
    /// ready tasks, then polls its reactor and timers without blocking
    /// (the woken future's flag forbids parking), and polls the future
    /// again, which completes. If `first` returns false the turn ends at
    /// once, with no driver poll. The time tokio's tasks take in it is
    /// this worker's busy time all the same, idle as it is.
    fn turn_with(&self, mut first: impl FnMut() -> bool) {
        self.queued_here.set(false);
        let stats = self.registry.worker_stats(self.index);
        let idle_since = (!stats.is_busy()).then(|| self.tokio_busy());
        let mut polled = false;
        self.block_on_inside(poll_fn(|cx| {
            if std::mem::replace(&mut polled, true) || !first() {
                Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }));
        if let Some(before) = idle_since {
            stats.add_busy(self.tokio_busy().saturating_sub(before));
        }
    }

    /// Where this worker's pool tasks spawn their tokio tasks for the next
    /// searches. A tokio task stays on the runtime it was spawned on, so a
    /// runtime that took more than its share (every WebSocket upgrade of a
    /// burst of connections, say, when one worker polled them all) would
    /// keep its worker busy while the others idle: when this runtime has
    /// more than `BALANCE_SLACK` tokio tasks alive beyond another's (one
    /// other runtime looked at per call, in turn), this worker polls its
    /// pool tasks in that runtime's context (`enter_elsewhere`), so their
    /// spawns (and the tokio sockets and timers they make) go there. Such
    /// a spawn is a remote schedule onto that runtime, as from any other
    /// thread. Called where tokio has just run its queue (`run_busy`), so
    /// that spawned tasks not yet run (a request's short-lived ones) do not
    /// count.
    #[inline]
    fn balance(&self, mine: usize) {
        let n = self.peers.len();
        if n < 2 {
            return;
        }
        let mut peer = self.next_peer.get() + 1;
        if peer % n == self.index {
            peer += 1;
        }
        let peer = peer % n;
        self.next_peer.set(peer);
        let theirs = alive_tasks(&self.peers[peer].metrics);
        let target = match self.elsewhere.get() {
            // Keep the current target while it stays the lighter one.
            Some(target) if alive_tasks(&self.peers[target].metrics) < mine => Some(target),
            _ => (theirs + BALANCE_SLACK < mine).then_some(peer),
        };
        self.elsewhere.set(target);
    }

    /// The context to poll a pool task in when it is not this worker's own
    /// runtime (`balance`): until the guard drops.
    #[inline]
    pub(crate) fn enter_elsewhere(&self) -> Option<tokio::runtime::EnterGuard<'_>> {
        let target = self.elsewhere.get()?;
        Some(self.peers[target].handle.enter())
    }

    /// Whether `TURN_INTERVAL` has passed at `now` since the last turn.
    fn periodic_turn_due(&self, now: u64) -> bool {
        now.saturating_sub(self.last_turn.get()) >= TURN_INTERVAL.as_nanos() as u64
    }

    /// Whether a busy period can run inside the runtime: not from inside
    /// it already (a pool task's nested wait runs its tasks where it is).
    /// A pool that never uses tokio pays the `block_on`'s entry and exit
    /// once per busy period: `compare` read the same within its noise.
    #[inline]
    pub(crate) fn can_enter(&self) -> bool {
        !self.inside.get()
    }

    /// Whether the busy period should step aside for tokio at this task
    /// boundary: a turn was asked for (`turn`), or a pool task spawned onto
    /// the runtime since the step began (its alive tasks rose: one relaxed
    /// load of tokio's count), so that the spawned task runs next, as from
    /// tokio's LIFO slot (sqlx returns a pooled connection to its pool in
    /// a spawned task, and the next request waits for it).
    #[inline]
    pub(crate) fn turn_wanted(&self) -> bool {
        self.wanted.get() || self.alive_tasks() > self.alive_at_step.get()
    }

    /// Run a busy period of the pool inside the runtime's `block_on`:
    /// `tasks` runs pool tasks until it finds none or a turn is wanted, and
    /// says whether it ran any. While they run, the runtime's scheduler
    /// context is this thread's, so what they spawn onto tokio or wake
    /// there is pushed onto its own queue (no lock, no write to its
    /// eventfd).
    ///
    /// Tokio runs that queue when the period steps aside (`busy_step`
    /// says when: a pool task spawned onto tokio, a turn was wanted, tasks
    /// are queued from outside, or tasks ran while tokio tasks are alive).
    /// The first time, the `block_on` future hands the period to the
    /// runtime's runner task (`Runner`): a push onto the queue behind what
    /// the pool tasks put there. From then on a step aside is the runner
    /// waking itself, another push: tokio runs what is ahead of it and
    /// polls it again, with no driver poll between (tokio polls its driver
    /// every 61 tasks, as on its own workers). When a step finds nothing
    /// to do the runner wakes the `block_on` future, which returns: one
    /// driver poll for the whole period (a woken `block_on` future never
    /// blocks its thread: `sleep/README.md`, "Busy inside the guest runtime"). A
    /// period that never steps aside never leaves the `block_on` future
    /// and costs the runtime nothing.
    ///
    /// Pool tasks run under no tokio budget (`unconstrained`), as outside
    /// the runtime: the one budget of a `block_on` future or of a tokio
    /// task is not shared out among all the tasks of a busy period.
    pub(crate) fn run_busy(&self, mut tasks: impl FnMut() -> bool) {
        self.busy.set(true);
        let _idle = Outside(&self.busy);
        let mut step = || self.busy_step(&mut tasks);
        let lent = self.handover.lend(&mut step);
        let mut handed = false;
        let period = poll_fn(|cx| {
            if handed {
                // The runner has the period until it wakes this future.
                return match lent.taken_back() {
                    Some(Ok(())) => Poll::Ready(()),
                    Some(Err(panic)) => std::panic::resume_unwind(panic),
                    None => Poll::Pending,
                };
            }
            if lent.step() == Aside::Done {
                return Poll::Ready(());
            }
            handed = lent.hand_over(cx.waker());
            if !handed {
                // No runner yet (it is polled for the first time by the
                // runtime's first turn): step aside the dearer way, as a
                // woken `block_on` future, which always polls the driver.
                cx.waker().wake_by_ref();
            }
            Poll::Pending
        });
        self.block_on_inside(tokio::task::unconstrained(period));
    }

    /// One step of a busy period: run pool tasks (`tasks`) until none is
    /// found or a turn is wanted; then what tokio should do before the
    /// next step, if anything.
    fn busy_step(&self, tasks: &mut impl FnMut() -> bool) -> Aside {
        // Tokio has just run what was queued on it (or this is a busy
        // period's start, after a sleep or a turn that did): the tasks
        // alive now are waiting on something, the ones worth placing.
        let alive = self.alive_tasks();
        self.alive_at_step.set(alive);
        if alive > 0 || self.elsewhere.get().is_some() {
            self.balance(alive);
        }
        let ran = tasks();
        if self.wanted.replace(false) {
            // A turn (`turn`): tokio's sockets and timers too, so the next
            // periodic one is due `TURN_INTERVAL` from now. (A step aside
            // that only runs tokio's queue polls no driver and leaves the
            // periodic turn where it was.)
            self.last_turn.set(coarse_now_ns());
            Aside::PollDriver
        } else if self.queued_here.replace(false)
            || self.metrics().global_queue_depth() > 0
            || (ran && self.alive_tasks() > 0)
        {
            // A spawn or a wake onto tokio's queue, from here or outside.
            Aside::RunQueue
        } else {
            Aside::Done
        }
    }
}

impl GuestRuntime for WorkerRuntime {
    fn can_block(&self) -> bool {
        !self.inside.get()
    }

    fn block_on(
        &self,
        mut driver: Option<&mut Vec<Waker>>,
        until: &mut dyn FnMut(&mut Context<'_>, bool) -> Poll<()>,
    ) {
        let holds_driver = driver.is_some();
        // Tokio's tasks that run in this sleep are this worker's busy time.
        let stats = self.registry.worker_stats(self.index);
        stats.guest_sleep_begins(self.tokio_busy());
        let _count_busy = CountBusy(self);
        pool_cells::as_outsider(&self.registry, || {
            self.block_on_inside(async {
                let io = self.registry.driver();
                let epoll = self.watch.begin(io, holds_driver);
                let sleep = self.registry.sleep_manager();
                let is_quiet = || sleep.is_quiet();
                poll_fn(|cx| {
                    if until(cx, false).is_ready() {
                        return Poll::Ready(());
                    }
                    let brought_work = driver.as_deref_mut().is_some_and(|wakers| {
                        self.watch.poll(io, &is_quiet, epoll.as_ref(), cx, wakers)
                    });
                    if brought_work {
                        until(cx, true)
                    } else {
                        Poll::Pending
                    }
                })
                .await;
                if holds_driver {
                    io.unparked();
                }
                self.watch.end(epoll);
            })
        });
    }
}

/// Adds the time tokio's tasks took during a sleep in the runtime to the
/// worker's busy time, when the sleep ends (also by a panic); a snapshot
/// taken meanwhile counts it so far (`WorkerStats::busy`).
struct CountBusy<'a>(&'a WorkerRuntime);

impl Drop for CountBusy<'_> {
    fn drop(&mut self) {
        let runtime = self.0;
        // On the worker's own thread: it is the one asleep in its runtime.
        runtime
            .registry
            .worker_stats(runtime.index)
            .guest_sleep_ends(runtime.tokio_busy());
    }
}

impl Drop for WorkerRuntime {
    fn drop(&mut self) {
        // The timer and the registration belong to the runtime: dropped
        // first, in its context.
        if let Some(runtime) = self.runtime.take() {
            let guard = runtime.enter();
            self.watch.clear();
            drop(guard);
            runtime.shutdown_background();
        }
    }
}
