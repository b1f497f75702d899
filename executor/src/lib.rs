//! `pool`: a work-stealing async executor whose idle workers sleep and wake
//! with Rayon's jobs-event-counter protocol.
//!
//! Tasks are [`async_task`] runnables. Each worker owns a FIFO
//! `crossbeam_deque::Worker`; the others steal from it, and threads outside
//! the pool push into a global injector. Idle workers search for a while,
//! announce themselves sleepy, search once more and sleep: each on its own
//! condvar, except one, once the pool has used a socket or a timer, which
//! sleeps in the pool's I/O driver (`epoll_wait` until readiness, the next
//! timer or a wake). A new task wakes a sleeper only when no awake worker is
//! idle, and at most one per task. An idle pool costs no CPU.
//!
//! ```
//! let pool = pool::Pool::new().unwrap();
//! let total = pool.block_on(async {
//!     let tasks: Vec<_> = (0..100u64).map(|i| pool::spawn(async move { i * i })).collect();
//!     let mut total = 0;
//!     for t in tasks {
//!         total += t.await.unwrap();
//!     }
//!     total
//! });
//! assert_eq!(total, 328_350);
//! ```
//!
//! # The current pool
//!
//! The free functions ([`spawn`], [`Handle::current`]) act on the current
//! pool, innermost first: the pool whose [`Pool::block_on`] is running its
//! future on this thread, or that a [`Handle::enter`] guard made current;
//! else the pool of the worker thread running the code; else the pool of
//! the blocking thread (or, with `tokio-compat`, of one of the pool's tokio
//! blocking threads); else the global pool, started on first use with one worker per
//! available CPU (`POOL_WORKER_THREADS` overrides the count).
//!
//! # Features
//!
//! Off by default:
//!
//! * `hyper`: `hyper::serve` (HTTP/1 and HTTP/2 for any tower or hyper
//!   service: an axum `Router`, tonic's `Routes`), `hyper::Connector`
//!   for hyper-util's client, and hyper's runtime pieces.
//! * `tokio-io`: tokio's `AsyncRead`/`AsyncWrite` on pool's sockets, pipes
//!   and [`io::Async`].
//! * `tokio-compat`: every worker owns a tokio current-thread runtime and
//!   drives it itself (between tasks, and while it sleeps, inside it), so
//!   tokio-only code (reqwest, tonic's channel, tower's timeouts, sqlx)
//!   runs in pool tasks with no per-poll cost and no tokio thread of its
//!   own. README: "The tokio-typed ecosystem" says what runs on which
//!   thread.
//! * `console`: tokio-console served by the pool itself
//!   (`Builder::console`, `POOL_CONSOLE`), with no `tracing` subscriber
//!   and no `--cfg tokio_unstable`.
//! * `prometheus`: the pool's metrics as a `prometheus-client` collector
//!   (`Handle::prometheus_collector`).
//!
//! # Macros
//!
//! `#[pool::main]` runs an `async fn main` on a new pool, and
//! `#[pool::test]` makes an `async fn` a test that runs on a fresh pool:
//!
//! ```
//! #[pool::main(worker_threads = 2)]
//! async fn main() -> Result<(), pool::JoinError> {
//!     let answer = pool::spawn(async { 6 * 7 }).await?;
//!     assert_eq!(answer, 42);
//!     Ok(())
//! }
//! ```
//!
//! # Seeing inside
//!
//! Every task has a [`TaskId`] ([`JoinHandle::id`], [`task_id`]) and
//! remembers where it was spawned. [`Pool::tasks`] lists the live tasks
//! (format them with [`TaskDump`]), [`Builder::on_stall`] reports polls
//! that hog a worker while they run, and [`Builder::trace`] (or
//! `POOL_TRACE=path` for the global pool) records each worker's timeline as
//! Chrome trace JSON, which Perfetto opens.
//!
//! # How it works
//!
//! `docs/ARCHITECTURE.md` draws the crate's floors and follows a task from
//! `spawn` to `poll`, and `executor/src/sleep/README.md` states the sleep
//! protocol and why it never loses a wakeup.
#![deny(missing_docs)]
#![warn(missing_debug_implementations)]

// The floors, lowest first (`docs/ARCHITECTURE.md`; a file imports only
// its own floor and the floors below it, which `tests/tests/layering.rs`
// checks).
//
// 0. Leaves, which import nothing of the crate.
mod sync;
mod unwind;
// 1. The sleep protocol.
mod sleep;
// 2. Tasks.
mod task;
// 3. The scheduler, and the context of the current thread.
mod context;
mod scheduler;
// 4. I/O, fork-join, seeing inside.
mod inspect;
pub mod io;
mod join;
// 5. The public API.
mod builder;
pub mod fs;
mod handle;
#[cfg(feature = "hyper")]
pub mod hyper;
mod join_set;
pub mod net;
mod pool;
pub mod process;
#[cfg(feature = "prometheus")]
mod prometheus;
pub mod signal;
mod task_local;
pub mod time;

#[cfg(all(test, loom))]
mod models;

pub use builder::Builder;
pub use context::task_id;
pub use handle::{EnterGuard, Handle};
pub use inspect::{Stall, TaskDump, TaskInfo, TaskState};
pub use join::{join, scope, Scope};
pub use join_set::JoinSet;
pub use pool::Pool;
pub use pool_macros::{main, test};
pub use scheduler::coop::{consume_budget, unconstrained};
pub use scheduler::{Bucket, Histogram, Metrics, WorkerMetrics};
pub use task::{AbortHandle, JoinError, JoinHandle, TaskId};
pub use task_local::{AccessError, LocalKey, TaskLocalFuture};

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Spawn a task onto the current pool (see the crate docs).
///
/// # Panics
///
/// If the current pool is the global pool, it is not running yet, and
/// `POOL_WORKER_THREADS` is set to something other than a positive integer.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let n = pool.block_on(async { pool::spawn(async { 21 * 2 }).await.unwrap() });
/// assert_eq!(n, 42);
/// ```
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let at = std::panic::Location::caller();
    context::with_current_worker(|registry, worker| registry.spawn_on(future, at, worker))
}

/// Spawn a `!Send` future as a task pinned to this worker thread: it only
/// ever runs here, never stolen and never moved, so it may hold `Rc`s,
/// `RefCell`s and other thread-bound state across `.await`s.
///
/// Its waker may fire on any thread: a wake from another thread sends the
/// task back to this worker (its inbox) and wakes the worker if it sleeps.
/// The worker runs its local tasks in turn with the tasks of its deque, so
/// neither starves the other. Work stealing does not apply to pinned tasks:
/// if this worker is busy with a long poll, its local tasks wait for it
/// while other workers may sit idle.
///
/// The returned [`JoinHandle`] may be awaited from anywhere; it is `Send`
/// only when the output is. When the pool shuts down, the worker cancels its
/// local tasks on its own thread before it exits: their futures are dropped
/// there, and their handles give `Err(e)` with `e.is_cancelled()`.
///
/// # Panics
///
/// Off a worker thread (in [`Pool::block_on`] on an outside thread, in a
/// `spawn_blocking` closure, on a plain thread): there is no worker to pin
/// the task to. Call it from a task on the pool, or, to run a `!Send`
/// future on the calling thread, use [`Pool::block_on`] or [`block_on`].
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// let pool = pool::Pool::new().unwrap();
/// let n = pool.block_on(pool.spawn(async {
///     // The local task holds an `Rc` across an await: it is not `Send`.
///     let local = pool::spawn_local(async {
///         let shared = Rc::new(20);
///         let copy = Rc::clone(&shared);
///         pool::yield_now().await;
///         *shared + *copy + 1
///     });
///     local.await.unwrap()
/// }));
/// assert_eq!(n.unwrap(), 41);
/// ```
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let at = std::panic::Location::caller();
    match context::worker() {
        Some(worker) => worker.registry().spawn_local(worker, future, at),
        None => panic!(
            "pool::spawn_local called off a worker thread: a !Send task is pinned to the \
             worker that spawns it, and this thread is not a worker of any pool. Call it \
             from a task running on the pool (pool::spawn(async {{ pool::spawn_local(..) }})), \
             or run the !Send future on this thread with Pool::block_on or pool::block_on"
        ),
    }
}

/// Run `future` on the calling thread until it completes.
///
/// The thread sleeps on its own latch between polls: only a wake of this
/// future wakes it, and it wakes no worker. Called on a worker thread, it
/// keeps running that worker's tasks while it waits, so it cannot deadlock
/// the pool, even a pool of one worker.
///
/// Unlike [`Pool::block_on`], it does not change the current pool.
///
/// # Examples
///
/// ```
/// let v = pool::block_on(async { 1 + 2 });
/// assert_eq!(v, 3);
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    scheduler::block_on::block_on(future)
}

/// Run a blocking closure on the current pool's blocking threads, never on
/// a worker, and return a handle to its result.
///
/// Blocking threads are started on demand, up to
/// [`Builder::max_blocking_threads`] (default 512), named `NAME-blocking-K`,
/// and exit after [`Builder::blocking_keep_alive`] (default 10 s) without
/// work. Closures beyond the cap wait their turn in FIFO order. A panic in
/// `f` is caught: the handle gives `Err(e)` with `e.is_panic()`. A closure
/// that has not started when its pool shuts down never runs: its handle
/// gives `Err(e)` with `e.is_cancelled()`. `abort()` cancels a closure that
/// has not started; one that is running runs to its end.
///
/// If the OS refuses a new blocking thread (out of memory or of threads),
/// the closure is never lost: while some blocking thread of the pool is
/// alive it waits in the queue for one; when none is, nothing would ever
/// run it, so it is cancelled at once (dropped, its handle gives `Err(e)`
/// with `e.is_cancelled()`) instead of leaving the handle waiting forever.
/// The next `spawn_blocking` tries to start a thread again.
///
/// # Panics
///
/// As [`spawn`], if the global pool has to start and cannot.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let contents = pool.block_on(async {
///     pool::spawn_blocking(|| std::fs::read_to_string("Cargo.toml")).await.unwrap()
/// });
/// assert!(contents.unwrap().contains("[package]"));
/// ```
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let at = std::panic::Location::caller();
    context::with_current(|registry| registry.spawn_blocking(f, at))
}

/// Tell the pool that this worker thread is about to block in user code
/// (on a lock, a channel, I/O), for deadlock detection; call
/// [`mark_unblocked`] when it stops blocking.
///
/// When no worker of the pool is active and at least one is marked blocked,
/// the pool calls its [`deadlock_handler`](Builder::deadlock_handler). On a
/// thread that is not a worker, or on a pool without a handler, it does
/// nothing.
///
/// # Panics
///
/// Called from the deadlock handler itself (which holds the state this call
/// needs), or twice on one worker without `mark_unblocked` in between.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let (tx, rx) = std::sync::mpsc::channel();
/// let waiter = pool.spawn(async move {
///     pool::mark_blocked();
///     let v = rx.recv().unwrap();
///     pool::mark_unblocked();
///     v
/// });
/// tx.send(3).unwrap();
/// assert_eq!(pool.block_on(waiter).unwrap(), 3);
/// ```
pub fn mark_blocked() {
    context::forbid_in_deadlock_handler("mark_blocked");
    if let Some(worker) = context::worker() {
        worker.mark_blocked(true);
    }
}

/// Tell the pool that this worker thread has stopped blocking in user code;
/// see [`mark_blocked`]. Outside a worker thread it does nothing.
///
/// # Panics
///
/// Called from the deadlock handler itself, or on a worker that is not
/// marked blocked.
///
/// # Examples
///
/// ```
/// pool::mark_blocked(); // not a worker thread: nothing happens
/// pool::mark_unblocked();
/// ```
pub fn mark_unblocked() {
    context::forbid_in_deadlock_handler("mark_unblocked");
    if let Some(worker) = context::worker() {
        worker.mark_blocked(false);
    }
}

/// Give the worker to the other runnable tasks once: the task is queued
/// behind them and polled again after they had their turn.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// pool.block_on(pool.spawn(async {
///     for _ in 0..3 {
///         pool::yield_now().await;
///     }
/// }))
/// .unwrap();
/// ```
pub async fn yield_now() {
    YieldNow { yielded: false }.await
}

/// The future of [`yield_now`]: pending once, having woken itself.
struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        // Woken while running: the schedule function puts the task at the
        // back of its worker's queue.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// What the expansions of `#[pool::main]` and `#[pool::test]` call. Not a
/// public API: it may change without notice.
#[doc(hidden)]
pub mod __private {
    /// A fresh pool for a macro-generated `main` or test.
    ///
    /// # Panics
    ///
    /// If the pool cannot start, with the attribute's name and the reason.
    pub fn pool_for_macro(
        worker_threads: Option<usize>,
        thread_name: Option<&str>,
        start_paused: bool,
        attribute: &str,
    ) -> crate::Pool {
        let mut builder = crate::Builder::new().start_paused(start_paused);
        if let Some(n) = worker_threads {
            builder = builder.worker_threads(n);
        }
        if let Some(name) = thread_name {
            builder = builder.thread_name(name);
        }
        // `POOL_CONSOLE` serves tokio-console from the pool of `main`, as
        // from the global pool (not from tests': they would share a port).
        #[cfg(feature = "console")]
        let console = attribute
            .contains("main")
            .then(crate::scheduler::console::addr_from_env)
            .flatten();
        #[cfg(feature = "console")]
        if let Some(addr) = &console {
            builder = builder.console(addr);
        }
        builder.build().unwrap_or_else(|e| {
            #[cfg(feature = "console")]
            let from = console.map_or("", |_| crate::scheduler::console::blame_env(&e));
            #[cfg(not(feature = "console"))]
            let from = "";
            panic!("{attribute}: the pool failed to start: {e}{from}")
        })
    }
}

#[allow(dead_code)]
fn _ensure_send_and_sync() {
    fn is_send_sync<T: Send + Sync>() {}
    fn is_unpin<T: Unpin>() {}
    is_send_sync::<Pool>();
    is_send_sync::<Handle>();
    is_send_sync::<JoinHandle<()>>();
    is_send_sync::<JoinError>();
    is_unpin::<JoinHandle<std::marker::PhantomPinned>>();
}

/// The README's example, compiled and run as a doctest so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
