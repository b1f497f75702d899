//! Feature `tokio-compat`: a tokio runtime on every worker, driven by the
//! worker itself, so that tokio-only code (tokio::spawn, tokio::net,
//! tokio::time, and what is built on them: axum's `on_upgrade`, sqlx,
//! reqwest, tower's timeouts) runs on the pool's own threads, with no side
//! thread and no hop between threads.
//!
//! # What runs where
//!
//! * Worker `i` owns a tokio current-thread runtime and enters its context
//!   for life: a `tokio::spawn` from a task polled on worker `i` lands on
//!   runtime `i`, and a tokio socket or timer made there registers in
//!   runtime `i`'s reactor. A tokio task stays on the worker whose runtime
//!   it was spawned on (thread-per-core style); pool tasks still move
//!   between workers. So that long-lived tokio tasks (WebSockets, client
//!   connections) do not pile up on one worker, a worker whose runtime has
//!   more than `BALANCE_SLACK` tokio tasks alive beyond another's polls its
//!   pool tasks in that one's context until it has not (`balance`).
//! * **Busy**, the worker runs its pool tasks inside its runtime's
//!   `block_on` (`run_busy`), as tokio's own workers run tokio's: a
//!   `tokio::spawn` or a wake of a tokio task from a pool task is a push
//!   onto the runtime's own queue. The busy period steps aside for tokio
//!   at the next task boundary when a pool task spawned onto it (at once:
//!   the spawned task runs before the worker's next pool task, as from
//!   tokio's LIFO slot), every 8 searches if tokio tasks are alive or
//!   queued from another thread, and every `TURN_INTERVAL` (250 us,
//!   checked every 61 searches where it polls the pool's driver); and once
//!   more before it goes idle if tokio tasks are alive. Stepping aside is
//!   cheap: the period runs as the runtime's runner task (`Runner`) once
//!   it first steps aside, and a step aside is the runner waking itself,
//!   so tokio runs its queue and polls its reactor and timers every 61
//!   tasks, as on its own workers, not at every step. Pool tasks run there
//!   under no tokio budget, and, as in any tokio `block_on`, one cannot
//!   start a tokio runtime or call `tokio::task::block_in_place` (use
//!   `pool::spawn_blocking`).
//! * **Idle** but not asleep (searching), the worker gives its runtime a
//!   turn (`turn`) when tasks were scheduled onto it from another thread
//!   (one load of the queue's length every 8 searches), and every
//!   `TURN_INTERVAL` otherwise. What its driver polls (and a sleep in the
//!   driver) make ready it wakes inside a turn while tokio tasks are
//!   alive (`wake_inside`), so that a wake of one of them is a push onto
//!   the runtime's own queue, not a write to its eventfd.
//! * **Asleep**, the worker blocks inside its runtime
//!   ([`Host`](crate::sleep::Host), `sleep/README.md`, "Sleeping in a
//!   host"): tokio's reactor wait covers tokio's sockets and timers, and a
//!   sleep-protocol wake wakes the runtime's `block_on` future. The
//!   sleeper that holds the pool's driver also has its runtime watch the
//!   pool's epoll descriptor and next timer (`epoll_bridge.rs`); when they
//!   bring work it ends its sleep itself, as the driver's sleeper does,
//!   and wakes that work as its own. While a worker sleeps this way it is
//!   not the current worker: the tokio tasks it runs are outsiders of the
//!   pool, so their spawns and wakes go through the injector and wake a
//!   sleeper as any other thread's do (maybe this one).
//! * Other threads (`Pool::block_on` on a plain thread, the pool's and
//!   tokio's blocking threads) enter the workers' runtimes in turn, one per
//!   thread or call: their tokio work lands on the workers round-robin.
//!   tokio's `spawn_blocking` runs on `{name}-tokio-blocking` threads of
//!   the runtime it was called on; each runtime may start the pool's
//!   `max_blocking_threads` divided by the workers, and lets them go after
//!   the pool's `blocking_keep_alive`; they have its thread stack size.
//!
//! # Shutdown
//!
//! A worker shuts its runtime down when it exits, after its own pool tasks
//! were dropped (its tokio tasks are dropped there; a running
//! `spawn_blocking` closure is not waited for). Shutdown's last step
//! (`shutdown.rs`, step 6) shuts down the runtimes of workers that never
//! ran.

use super::epoll_bridge::DriverWatch;
use super::io_driver::IoDriver;
use super::registry::Registry;
use super::thread_name::set_kernel_name;
use crate::context::pool_cells;
use crate::context::thread_kind::ThreadKind;
use crate::sleep::park::Host;
use crate::task::coarse_clock::coarse_now_ns;
use parking_lot::Mutex;
use std::any::Any;
use std::cell::Cell;
use std::future::poll_fn;
use std::future::Future;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::ptr::NonNull;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};

/// A busy worker with no tokio task queued gives its runtime a turn this
/// often, for tokio's reactor and timers: a turn costs a microsecond or two
/// when tokio has nothing to do (a wake of its own `block_on` future, an
/// epoll poll; 0.7% of a worker's samples at 100 us under HTTP load), and
/// tokio's own workers poll their reactor every 61 tasks, a few hundred
/// microseconds under load. (Queued tokio tasks get their turn at once.)
const TURN_INTERVAL: Duration = Duration::from_micros(250);

/// The pool's tokio runtimes: one per worker, taken by it when it starts.
#[derive(Debug)]
pub(crate) struct TokioCompat {
    runtimes: Box<[Mutex<Option<Runtime>>]>,
    /// Every runtime's handle and metrics, in worker order, shared with
    /// the workers (`WorkerHost::balance`).
    peers: Arc<[Peer]>,
    /// The next runtime an outside thread enters.
    next: AtomicUsize,
}

impl TokioCompat {
    /// Build one runtime per worker (none started: a runtime runs only
    /// inside its worker's `block_on` calls). Their blocking threads follow
    /// the pool's settings: its keep-alive, and its `max_blocking_threads`
    /// split between them (so tokio's blocking threads of the whole pool
    /// are at most as many as the pool's own).
    pub(super) fn start(
        registry: &Arc<Registry>,
        workers: usize,
        thread_name: &str,
    ) -> io::Result<TokioCompat> {
        let blocking = registry.blocking().config();
        let max_blocking = (blocking.max_threads / workers).max(1);
        let weak: Weak<Registry> = Arc::downgrade(registry);
        let mut runtimes = Vec::with_capacity(workers);
        for _ in 0..workers {
            let weak = weak.clone();
            let prefix = thread_name.to_owned();
            let (hooks, stop_hooks) = (blocking.hooks.clone(), blocking.hooks.clone());
            let on_start = move || {
                // Its short name in the kernel (tokio named it in full).
                set_kernel_name(&ThreadKind::TokioBlocking.short_name(&prefix));
                ThreadKind::TokioBlocking.enter();
                if let Some(registry) = weak.upgrade() {
                    // Kept until the thread ends (see `on_thread_stop`).
                    std::mem::forget(pool_cells::enter_blocking_thread(&registry));
                }
                hooks.run_start();
            };
            let on_stop = move || {
                stop_hooks.run_stop();
                pool_cells::leave_served_pool();
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
        Ok(TokioCompat {
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
    pub(super) fn take_runtime(&self, index: usize) -> Option<Runtime> {
        self.runtimes.get(index).and_then(|r| r.lock().take())
    }

    /// The time runtime `index`'s scheduler spent running its tasks so far
    /// (`WorkerHost::tokio_busy`, read by a metrics snapshot).
    pub(super) fn busy(&self, index: usize) -> Duration {
        self.peers[index].metrics.worker_total_busy_duration(0)
    }

    /// Every runtime's handle and metrics, for a worker's host.
    pub(super) fn peers(&self) -> Arc<[Peer]> {
        Arc::clone(&self.peers)
    }

    /// Enter the next worker's runtime context on this (outside) thread
    /// until the guard drops.
    pub(super) fn enter_next(&self) -> tokio::runtime::EnterGuard<'_> {
        // Relaxed: only spreads threads over runtimes.
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.peers.len();
        self.peers[i].handle.enter()
    }

    /// Shut down the runtimes no worker took (shutdown's last step).
    pub(super) fn stop(&self) {
        for slot in self.runtimes.iter() {
            if let Some(runtime) = slot.lock().take() {
                runtime.shutdown_background();
            }
        }
    }
}

/// A runtime's tokio tasks alive, its runner (if started) not counted.
#[inline]
fn alive_tasks(metrics: &tokio::runtime::RuntimeMetrics) -> usize {
    metrics.num_alive_tasks().saturating_sub(1)
}

/// One of the pool's runtimes, as any thread sees it.
#[derive(Debug)]
pub(super) struct Peer {
    handle: Handle,
    metrics: tokio::runtime::RuntimeMetrics,
}

/// Tokio tasks a worker's runtime may have alive beyond the least loaded
/// runtime it looked at before its pool tasks' spawns go there instead:
/// enough that a few short-lived spawns (a request's) stay local, few
/// enough that 32 WebSockets split within 18/14.
const BALANCE_SLACK: usize = 4;

/// A worker's runtime, driven by the worker: its busy turns and the host
/// of its sleeps. Lives on the worker's stack; shuts its runtime down when
/// dropped.
pub(crate) struct WorkerHost {
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

impl std::fmt::Debug for WorkerHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerHost")
            .field("inside", &self.inside.get())
            .finish_non_exhaustive()
    }
}

/// Clears a flag of `WorkerHost` (`inside`, `busy`), also on a panic.
struct Outside<'a>(&'a Cell<bool>);

impl Drop for Outside<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl WorkerHost {
    pub(super) fn new(
        runtime: Runtime,
        peers: Arc<[Peer]>,
        registry: &Arc<Registry>,
        index: usize,
    ) -> WorkerHost {
        let handover = Rc::new(Handover::default());
        drop(runtime.spawn(tokio::task::unconstrained(Runner(Rc::clone(&handover)))));
        WorkerHost {
            runtime: Some(runtime),
            registry: Arc::clone(registry),
            index,
            inside: Cell::new(false),
            busy: Cell::new(false),
            wanted: Cell::new(false),
            alive_at_step: Cell::new(0),
            queued_here: Cell::new(false),
            handover,
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
        &self.peers[self.index].metrics
    }

    /// This runtime's tokio tasks alive, its runner not counted.
    #[inline]
    fn alive_tasks(&self) -> usize {
        alive_tasks(self.metrics())
    }

    fn runtime(&self) -> &Runtime {
        self.runtime
            .as_ref()
            .expect("a worker's runtime lives as long as its host")
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
    pub(super) fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
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
    pub(super) fn turn(&self, periodic: bool) {
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
    pub(super) fn wakes_inside(&self) -> bool {
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
    pub(super) fn wake_inside(&self, wake: impl FnOnce() -> usize) -> usize {
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
    pub(super) fn enter_elsewhere(&self) -> Option<tokio::runtime::EnterGuard<'_>> {
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
    pub(super) fn can_enter(&self) -> bool {
        !self.inside.get()
    }

    /// Whether the busy period should step aside for tokio at this task
    /// boundary: a turn was asked for (`turn`), or a pool task spawned onto
    /// the runtime since the step began (its alive tasks rose: one relaxed
    /// load of tokio's count), so that the spawned task runs next, as from
    /// tokio's LIFO slot (sqlx returns a pooled connection to its pool in
    /// a spawned task, and the next request waits for it).
    #[inline]
    pub(super) fn turn_wanted(&self) -> bool {
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
    /// blocks its thread: `sleep/README.md`, "Busy inside the host"). A
    /// period that never steps aside never leaves the `block_on` future
    /// and costs the runtime nothing.
    ///
    /// Pool tasks run under no tokio budget (`unconstrained`), as outside
    /// the runtime: the one budget of a `block_on` future or of a tokio
    /// task is not shared out among all the tasks of a busy period.
    pub(super) fn run_busy(&self, mut tasks: impl FnMut() -> bool) {
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

/// What a busy step asks of tokio before the next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aside {
    /// Nothing: the busy period is over.
    Done,
    /// Run what is queued on the runtime.
    RunQueue,
    /// Run what is queued, then poll the reactor and timers without
    /// blocking (tokio's own workers do it every 61 tasks; the pool's
    /// worker at a turn: every 8 searches while tokio tasks are alive or
    /// queued from outside, and every `TURN_INTERVAL`, so that readiness
    /// of a socket in this runtime's reactor is seen while the worker is
    /// busy).
    PollDriver,
}

/// A busy period's step (`WorkerHost::busy_step`) as `run_busy` lends it
/// to the runner.
type Step = dyn FnMut() -> Aside;

/// How a busy period passes between its `block_on` future and the
/// runtime's runner task (`Runner`). Touched only on the worker's thread.
#[derive(Default)]
struct Handover {
    /// The step of the busy period under way, lent by `run_busy` for the
    /// length of its `block_on` (`Lent`), taken out while it runs.
    step: Cell<Option<NonNull<Step>>>,
    /// The runner has the period: set by the `block_on` future when it
    /// hands it over, cleared by the runner when a step found nothing to do.
    handed: Cell<bool>,
    /// The runner's waker, from its first poll.
    runner: Cell<Option<Waker>>,
    /// The `block_on` future's waker, woken when the runner is done.
    owner: Cell<Option<Waker>>,
    /// A panic of a step the runner ran, resumed by `run_busy`.
    panic: Cell<Option<Box<dyn Any + Send>>>,
}

impl Handover {
    /// Lend `step` until the returned guard drops.
    fn lend<'a>(&'a self, step: &'a mut (dyn FnMut() -> Aside + 'a)) -> Lent<'a> {
        let step: NonNull<dyn FnMut() -> Aside + 'a> = NonNull::from(step);
        // SAFETY: only the lifetime changes. `Lent` takes the pointer back
        // out of the cell before `step`'s borrow ends, also on a panic, and
        // nothing dereferences it once out (`run_step`).
        let step: NonNull<Step> = unsafe { std::mem::transmute(step) };
        self.step.set(Some(step));
        Lent(self)
    }

    /// Run the lent step once; None if none is lent.
    fn run_step(&self) -> Option<Aside> {
        let step = self.step.take()?;
        let _back = PutBack(&self.step, step);
        // SAFETY: `step` points at `run_busy`'s closure, alive while it is
        // lent (`lend`). It was taken out of the cell for this call, so no
        // other call (a nested one would find the cell empty) makes a
        // second `&mut` to it.
        Some(unsafe { (*step.as_ptr())() })
    }
}

/// Puts a lent step back into its cell after a run, also on a panic.
struct PutBack<'a>(&'a Cell<Option<NonNull<Step>>>, NonNull<Step>);

impl Drop for PutBack<'_> {
    fn drop(&mut self) {
        self.0.set(Some(self.1));
    }
}

/// A busy period's step, lent to the runner; taken back when dropped.
struct Lent<'a>(&'a Handover);

impl Lent<'_> {
    /// Run the step from the `block_on` future.
    fn step(&self) -> Aside {
        self.0.run_step().unwrap_or(Aside::Done)
    }

    /// Hand the period to the runner, to be woken (`owner`) when it is
    /// done; false if there is no runner yet.
    fn hand_over(&self, owner: &Waker) -> bool {
        let Some(runner) = self.0.runner.take() else {
            return false;
        };
        self.0.owner.set(Some(owner.clone()));
        self.0.handed.set(true);
        // On this thread, inside the runtime's scheduler context: a push
        // onto its own queue, behind what the step put there.
        runner.wake_by_ref();
        self.0.runner.set(Some(runner));
        true
    }

    /// Once the runner is done with the period: Ok, or the panic of the
    /// step it ran.
    fn taken_back(&self) -> Option<Result<(), Box<dyn Any + Send>>> {
        if self.0.handed.get() {
            return None;
        }
        Some(self.0.panic.take().map_or(Ok(()), Err))
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.0.step.set(None);
        self.0.handed.set(false);
        self.0.owner.set(None);
    }
}

/// The runtime's runner: a tokio task that runs the steps of a busy period
/// handed to it (`WorkerHost::run_busy`), so that stepping aside for tokio
/// is a push onto its queue, not a wake of the `block_on` future (a write
/// to the runtime's eventfd and a driver poll each). Spawned when the
/// worker's host is made; never completes (it is dropped with the
/// runtime), so it is one of the runtime's alive tasks, which
/// `alive_tasks` does not count.
struct Runner(Rc<Handover>);

// SAFETY: a current-thread runtime polls and drops its tasks on the thread
// that drives it: the runner's is driven by its worker alone (its
// `block_on` calls and its shutdown in `WorkerHost::drop`, on the worker's
// thread; the runtime left `TokioCompat` for this worker before the runner
// was spawned), so the `Rc` and what it reaches stay on that thread.
unsafe impl Send for Runner {}

impl Future for Runner {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let hand = &*self.0;
        let runner = hand.runner.take();
        hand.runner.set(match runner {
            Some(w) if w.will_wake(cx.waker()) => Some(w),
            _ => Some(cx.waker().clone()),
        });
        if !hand.handed.get() {
            return Poll::Pending;
        }
        match catch_unwind(AssertUnwindSafe(|| hand.run_step())) {
            Ok(Some(Aside::RunQueue)) => {
                // Behind what tokio has queued.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Ok(Some(Aside::PollDriver)) => {
                // Tokio wakes a task that yields once it has run its queue
                // and polled its driver without blocking (1.54:
                // `yield_now`, `Defer`): then it pushes the runner onto
                // its queue, with no write to its eventfd.
                let _ = pin!(tokio::task::yield_now()).poll(cx);
                return Poll::Pending;
            }
            Ok(Some(Aside::Done) | None) => {}
            Err(panic) => hand.panic.set(Some(panic)),
        }
        hand.handed.set(false);
        if let Some(owner) = hand.owner.take() {
            owner.wake();
        }
        Poll::Pending
    }
}

impl Host for WorkerHost {
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
        stats.host_sleep_begins(self.tokio_busy());
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
struct CountBusy<'a>(&'a WorkerHost);

impl Drop for CountBusy<'_> {
    fn drop(&mut self) {
        let host = self.0;
        // On the worker's own thread: it is the one asleep in its runtime.
        host.registry
            .worker_stats(host.index)
            .host_sleep_ends(host.tokio_busy());
    }
}

impl Drop for WorkerHost {
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
