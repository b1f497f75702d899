//! The crate's free functions on the current pool: `spawn`, `try_spawn`,
//! `spawn_local`, `block_on`, `spawn_blocking`, `mark_blocked`,
//! `mark_unblocked` (re-exported at the crate root). `task::Builder`'s
//! spawns, the same with a name, are `task_spawns.rs`.

use crate::context::pool_cells;
use crate::scheduler::spawn::{refused, spawn_blocking_task, spawn_local_task, spawn_task_on};
use crate::task::join_handle::JoinHandle;
use crate::task::spawn_error::SpawnError;
use std::future::Future;
use std::panic::Location;

/// Spawn a task onto the current pool (see the crate docs).
///
/// # Panics
///
/// If the current pool has [`Builder::max_tasks`](crate::Builder::max_tasks)
/// live tasks already: the message names the limit and its value.
/// [`try_spawn`] returns that as an error instead, to shed the work.
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
    spawn_at(future, Location::caller(), None)
}

/// Spawn a task onto the current pool, as [`spawn`], or refuse it with a
/// [`SpawnError`] if the pool has
/// [`Builder::max_tasks`](crate::Builder::max_tasks) live tasks already
/// (the future is dropped unpolled). It never panics for the limit: it is
/// the way to shed load. Refusals are counted in
/// [`Metrics::rejected_spawns`](crate::Metrics::rejected_spawns).
///
/// # Errors
///
/// [`SpawnError`], past the pool's `max_tasks`.
///
/// # Examples
///
/// ```
/// let pool = pool::Builder::new().max_tasks(2).build().unwrap();
/// let refused = pool.block_on(async {
///     let held: Vec<_> = (0..2)
///         .map(|_| pool::try_spawn(std::future::pending::<()>()).unwrap())
///         .collect();
///     let refused = pool::try_spawn(async { "shed me" }).unwrap_err();
///     held.iter().for_each(|h| h.abort());
///     refused
/// });
/// assert_eq!(refused.max_tasks(), 2);
/// ```
#[track_caller]
pub fn try_spawn<F>(future: F) -> Result<JoinHandle<F::Output>, SpawnError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    try_spawn_at(future, Location::caller(), None)
}

/// `try_spawn`, as if called at `at`, named `name` if it has one.
#[inline]
pub(crate) fn try_spawn_at<F>(
    future: F,
    at: &'static Location<'static>,
    name: Option<&str>,
) -> Result<JoinHandle<F::Output>, SpawnError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    crate::context::current::with_current_worker(|registry, worker| {
        spawn_task_on(registry, future, at, name, worker)
    })
}

/// `spawn`, as if called at `at` (where a task that pool spawns for the
/// user was asked for: a `pool::hyper::serve` call for its connections),
/// named `name` if it has one (`task::Builder::spawn`).
#[inline]
pub(crate) fn spawn_at<F>(
    future: F,
    at: &'static Location<'static>,
    name: Option<&str>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    try_spawn_at(future, at, name).unwrap_or_else(|e| refused(e, at))
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
/// Off a worker thread (in [`Pool::block_on`](crate::Pool::block_on) on an outside thread, in a
/// `spawn_blocking` closure, on a plain thread): there is no worker to pin
/// the task to. Call it from a task on the pool, or, to run a `!Send`
/// future on the calling thread, use [`Pool::block_on`](crate::Pool::block_on) or [`block_on`].
///
/// Past the pool's [`Builder::max_tasks`](crate::Builder::max_tasks), as
/// [`spawn`]; [`task::Builder::spawn_local`](crate::task::Builder::spawn_local)
/// returns that as an error instead.
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
    match pool_cells::worker() {
        Some(worker) => spawn_local_task(worker.registry(), worker, future, at, None)
            .unwrap_or_else(|e| refused(e, at)),
        None => panic!("{}", OFF_WORKER),
    }
}

/// Why `spawn_local` (and `task::Builder::spawn_local`) cannot spawn off
/// a worker thread, and what to do instead.
pub(crate) const OFF_WORKER: &str =
    "pool::spawn_local called off a worker thread: a !Send task is pinned to \
     the worker that spawns it, and this thread is not a worker of any pool. Call it from a \
     task running on the pool (pool::spawn(async { pool::spawn_local(..) })), or run the \
     !Send future on this thread with Pool::block_on or pool::block_on";

/// Run `future` on the calling thread until it completes.
///
/// The thread sleeps on its own latch between polls: only a wake of this
/// future wakes it, and it wakes no worker. Called on a worker thread, it
/// keeps running that worker's tasks while it waits, so it cannot deadlock
/// the pool, even a pool of one worker.
///
/// Unlike [`Pool::block_on`](crate::Pool::block_on), it does not change the current pool.
///
/// # Examples
///
/// ```
/// let v = pool::block_on(async { 1 + 2 });
/// assert_eq!(v, 3);
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    crate::scheduler::block_on::block_on(future)
}

/// Run a blocking closure on the current pool's blocking threads, never on
/// a worker, and return a handle to its result.
///
/// Blocking threads are started on demand, up to
/// [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads) (default 512), named `NAME-blocking-K`,
/// and exit after [`Builder::blocking_keep_alive`](crate::Builder::blocking_keep_alive) (default 10 s) without
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
    crate::context::current::with_current(|registry| spawn_blocking_task(registry, f, at, None))
}

/// Tell the pool that this worker thread is about to block in user code
/// (on a lock, a channel, I/O), for deadlock detection; call
/// [`mark_unblocked`] when it stops blocking.
///
/// When no worker of the pool is active and at least one is marked blocked,
/// the pool calls its [`deadlock_handler`](crate::Builder::deadlock_handler). On a
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
    crate::context::plain_cells::forbid_in_deadlock_handler("mark_blocked");
    if let Some(worker) = pool_cells::worker() {
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
    crate::context::plain_cells::forbid_in_deadlock_handler("mark_unblocked");
    if let Some(worker) = pool_cells::worker() {
        worker.mark_blocked(false);
    }
}
