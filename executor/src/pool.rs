//! `Pool`, `Handle`, the global pool, and which pool is "current".
//!
//! # Invariants
//!
//! * The current pool is, innermost first: the pool whose `Pool::block_on`
//!   is polling its future on this thread (`ENTERED`, set only around each
//!   poll of that future, so tasks the thread runs meanwhile see their own
//!   pool); else the pool of the worker thread; else the pool of the
//!   blocking thread; else the global pool.
//! * `ENTERED` points at the `Arc<Registry>` of a `Pool` that is borrowed by
//!   the `block_on` call in progress, so it outlives every read.
//! * Shutdown runs once, in this order: refuse new work and set every
//!   termination latch (waking sleepers); wait for the workers to leave their
//!   loops (bounded by the timeout, if any) and join them; then drop every
//!   task that did not complete. Each unfinished future is dropped exactly
//!   once, and its `JoinHandle` reports `cancelled`.

use crate::builder::Builder;
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::task::JoinHandle;
use crate::worker::WorkerThread;
use pin_project_lite::pin_project;
use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::io;
use std::panic::Location;
use std::pin::Pin;
use std::ptr;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

/// The environment variable that sets the global pool's worker count.
const WORKER_THREADS_ENV: &str = "POOL_WORKER_THREADS";

/// A work-stealing pool of worker threads that run async tasks.
///
/// Dropping a `Pool` shuts it down: the workers stop after their current
/// poll, every task that has not completed is dropped (its `JoinHandle`
/// gives `Err(e)` with `e.is_cancelled()`), and the worker threads are
/// joined before `drop` returns. A worker stuck in a blocking call is waited
/// for indefinitely; use [`shutdown_timeout`](Pool::shutdown_timeout) to
/// bound that wait.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let sum = pool.block_on(async {
///     let a = pool::spawn(async { 40 });
///     let b = pool::spawn(async { 2 });
///     a.await.unwrap() + b.await.unwrap()
/// });
/// assert_eq!(sum, 42);
/// ```
pub struct Pool {
    registry: Arc<Registry>,
    threads: Vec<thread::JoinHandle<()>>,
    /// The watcher thread (`watcher.rs`); joined at shutdown.
    watcher: Option<thread::JoinHandle<()>>,
    shut_down: bool,
}

impl Pool {
    pub(crate) fn from_parts(
        registry: Arc<Registry>,
        threads: Vec<thread::JoinHandle<()>>,
        watcher: thread::JoinHandle<()>,
    ) -> Pool {
        Pool {
            registry,
            threads,
            watcher: Some(watcher),
            shut_down: false,
        }
    }

    /// A pool with the default settings: `Builder::new().build()`.
    ///
    /// # Errors
    ///
    /// The error of a worker thread that failed to start.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new()?;
    /// assert_eq!(pool.block_on(async { 5 }), 5);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new() -> io::Result<Pool> {
        Builder::new().build()
    }

    /// Spawn a task onto this pool. It starts running at once, on a worker;
    /// the returned handle awaits its output.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let handle = pool.spawn(async { "done" });
    /// assert_eq!(pool.block_on(handle).unwrap(), "done");
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.registry.spawn(future, Location::caller())
    }

    /// Run `future` on the calling thread until it completes, with this pool
    /// as the current pool: `pool::spawn` inside it spawns here.
    ///
    /// The thread sleeps between polls and only a wake of `future` wakes it.
    /// On a worker thread (of any pool) it runs that worker's tasks while it
    /// waits, so it never deadlocks the worker's pool.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let out = pool.block_on(async { pool::spawn(async { 1 + 1 }).await.unwrap() });
    /// assert_eq!(out, 2);
    /// ```
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        crate::block_on::block_on(Entered {
            registry: &self.registry,
            future,
        })
    }

    /// [`join`](crate::join) on this pool: run `a` and `b`, potentially in
    /// parallel, on its workers, and return both results.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let v: Vec<u64> = (0..1000).collect();
    /// let (left, right) = v.split_at(500);
    /// let (a, b) = pool.join(|| left.iter().sum::<u64>(), || right.iter().sum::<u64>());
    /// assert_eq!(a + b, 499_500);
    /// ```
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        crate::join::join_in(&self.registry, a, b)
    }

    /// [`scope`](crate::scope) on this pool.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let mut halves = [0u64; 2];
    /// let (a, b) = halves.split_at_mut(1);
    /// pool.scope(|s| {
    ///     s.spawn(|_| a[0] = 1);
    ///     s.spawn(|_| b[0] = 2);
    /// });
    /// assert_eq!(halves, [1, 2]);
    /// ```
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&crate::Scope<'scope>) -> R + Send,
        R: Send,
    {
        crate::join::scope_in(&self.registry, op)
    }

    /// Run a blocking closure on this pool's blocking threads; see
    /// [`spawn_blocking`](crate::spawn_blocking).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let h = pool.spawn_blocking(|| std::fs::metadata(".").is_ok());
    /// assert!(pool.block_on(h).unwrap());
    /// ```
    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.registry.spawn_blocking(f, Location::caller())
    }

    /// A handle to this pool.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let handle = pool.handle();
    /// let task = handle.spawn(async { 7 });
    /// assert_eq!(pool.block_on(task).unwrap(), 7);
    /// ```
    pub fn handle(&self) -> Handle {
        Handle {
            registry: Arc::clone(&self.registry),
        }
    }

    /// The number of worker threads.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().worker_threads(3).build().unwrap();
    /// assert_eq!(pool.worker_threads(), 3);
    /// ```
    pub fn worker_threads(&self) -> usize {
        self.registry.num_workers()
    }

    /// A snapshot of this pool's counters.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().worker_threads(1).build().unwrap();
    /// assert_eq!(pool.metrics().workers, 1);
    /// ```
    pub fn metrics(&self) -> Metrics {
        self.registry.metrics()
    }

    /// Every live task of the pool, now: its id, where it was spawned, what
    /// it is doing, its polls and age (see [`TaskInfo`](crate::TaskInfo)), ordered by id.
    /// Finished and aborted tasks are gone from it; `spawn_blocking`
    /// closures are not listed. [`TaskDump`](crate::TaskDump) formats it for
    /// a log.
    ///
    /// It takes each of the registry's shard locks in turn (spawns on that
    /// shard wait meanwhile), and reads a few words per task: about 10 ns a
    /// task.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let handle = pool.spawn(std::future::pending::<()>()); // this line
    /// let tasks = pool.tasks();
    /// assert_eq!(tasks.len(), 1);
    /// assert_eq!(tasks[0].id, handle.id());
    /// assert_eq!(tasks[0].spawned_at.line(), line!() - 4);
    /// ```
    pub fn tasks(&self) -> Vec<crate::TaskInfo> {
        self.registry.tasks()
    }

    /// Shut the pool down, waiting at most `timeout` for workers that are
    /// busy in a task (a blocking call, say). Workers still busy then are
    /// left to finish on their own; every task that has not completed is
    /// dropped all the same.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let pool = pool::Builder::new().worker_threads(1).build().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel::<()>();
    /// let started = std::sync::Arc::new(std::sync::Barrier::new(2));
    /// let s = started.clone();
    /// pool.spawn(async move {
    ///     s.wait();
    ///     let _ = rx.recv(); // blocks the worker until `tx` is dropped
    /// });
    /// started.wait();
    /// let t = Instant::now();
    /// pool.shutdown_timeout(Duration::from_millis(50));
    /// assert!(t.elapsed() < Duration::from_secs(5));
    /// drop(tx);
    /// ```
    pub fn shutdown_timeout(mut self, timeout: Duration) {
        self.shutdown(Some(timeout));
    }

    fn shutdown(&mut self, timeout: Option<Duration>) {
        if std::mem::replace(&mut self.shut_down, true) {
            return;
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        self.registry.terminate();
        // A pool dropped inside one of its own tasks cannot wait for the
        // worker running that task: it exits when the task returns.
        let own = WorkerThread::current().filter(|w| Arc::ptr_eq(w.registry(), &self.registry));
        let expected = self.threads.len() - usize::from(own.is_some());
        let all_exited = self.registry.wait_for_exits(expected, deadline);
        let me = thread::current().id();
        for t in self.threads.drain(..) {
            if t.thread().id() != me && (all_exited || t.is_finished()) {
                // A worker that panicked (in a thread hook) already reported
                // its panic; there is nothing more to do with it here.
                let _ = t.join();
            }
        }
        if let Some(watcher) = self.watcher.take() {
            // `terminate` stopped it; it returns from its next wait at once.
            if watcher.thread().id() != me {
                let _ = watcher.join();
            }
        }
        if let Some(timeline) = &self.registry.timeline {
            timeline.write();
        }
        self.registry.blocking.wait_for_threads(deadline);
        self.registry.drop_unfinished_tasks();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shutdown(None);
    }
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.registry.num_workers())
            .finish_non_exhaustive()
    }
}

/// A cheap, cloneable reference to a pool, to spawn onto it from anywhere.
///
/// A `Handle` keeps the pool reachable, not alive: once its [`Pool`] is
/// dropped, tasks spawned through the handle are cancelled at once.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let handle = pool.handle();
/// let from_thread = std::thread::spawn(move || handle.spawn(async { 5 }))
///     .join()
///     .unwrap();
/// assert_eq!(pool.block_on(from_thread).unwrap(), 5);
/// ```
#[derive(Clone)]
pub struct Handle {
    registry: Arc<Registry>,
}

impl Handle {
    /// The current pool (see the crate docs); starts the global pool if that
    /// is the current one and it is not running yet.
    ///
    /// # Panics
    ///
    /// If the global pool has to start and `POOL_WORKER_THREADS` is set to
    /// something other than a positive integer, or its threads fail to start.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().worker_threads(2).build().unwrap();
    /// let workers = pool.block_on(async { pool::Handle::current().metrics().workers });
    /// assert_eq!(workers, 2);
    /// ```
    pub fn current() -> Handle {
        with_current(|registry| Handle {
            registry: Arc::clone(registry),
        })
    }

    /// The current pool, or `None` where that would be the global pool and it
    /// has not started yet.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// assert!(pool.block_on(async { pool::Handle::try_current() }).is_some());
    /// ```
    pub fn try_current() -> Option<Handle> {
        if let Some(registry) = running_pool() {
            return Some(Handle {
                registry: Arc::clone(registry),
            });
        }
        BLOCKING_THREAD_OF
            .with(|b| b.borrow().clone())
            .or_else(|| GLOBAL.get().map(|p| Arc::clone(&p.registry)))
            .map(|registry| Handle { registry })
    }

    /// Spawn a task onto this handle's pool; see [`Pool::spawn`].
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let h = pool.handle().spawn(async { 3 });
    /// assert_eq!(pool.block_on(h).unwrap(), 3);
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.registry.spawn(future, Location::caller())
    }

    /// Run a blocking closure on the pool's blocking threads; see
    /// [`spawn_blocking`](crate::spawn_blocking).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let h = pool.handle().spawn_blocking(|| 2 + 2);
    /// assert_eq!(pool.block_on(h).unwrap(), 4);
    /// ```
    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.registry.spawn_blocking(f, Location::caller())
    }

    /// A snapshot of the pool's counters; see [`Pool::metrics`].
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().worker_threads(2).build().unwrap();
    /// assert_eq!(pool.handle().metrics().workers, 2);
    /// ```
    pub fn metrics(&self) -> Metrics {
        self.registry.metrics()
    }

    /// Every live task of the pool, now; see [`Pool::tasks`].
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let handle = pool.handle();
    /// let _task = handle.spawn(std::future::pending::<()>());
    /// assert_eq!(handle.tasks().len(), 1);
    /// ```
    pub fn tasks(&self) -> Vec<crate::TaskInfo> {
        self.registry.tasks()
    }
}

impl futures::task::Spawn for Handle {
    fn spawn_obj(
        &self,
        future: futures::task::FutureObj<'static, ()>,
    ) -> Result<(), futures::task::SpawnError> {
        if self.registry.is_shutting_down() {
            return Err(futures::task::SpawnError::shutdown());
        }
        // Dropping the handle detaches the task.
        drop(self.registry.spawn(future, Location::caller()));
        Ok(())
    }

    fn status(&self) -> Result<(), futures::task::SpawnError> {
        if self.registry.is_shutting_down() {
            Err(futures::task::SpawnError::shutdown())
        } else {
            Ok(())
        }
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("workers", &self.registry.num_workers())
            .finish_non_exhaustive()
    }
}

static GLOBAL: OnceLock<Pool> = OnceLock::new();

/// The global pool, started on first use.
fn global() -> &'static Pool {
    GLOBAL.get_or_init(|| {
        let mut builder = Builder::new().thread_name("pool-global");
        if let Some(n) = worker_threads_from_env() {
            builder = builder.worker_threads(n);
        }
        let trace = std::env::var_os(TRACE_ENV).filter(|p| !p.is_empty());
        if let Some(path) = trace.clone() {
            builder = builder.trace(path);
        }
        let pool = builder
            .build()
            .unwrap_or_else(|e| panic!("pool: the global pool failed to start: {e}"));
        if trace.is_some() {
            // The global pool is never dropped: write its trace at exit.
            // SAFETY: `write_global_trace` is an `extern "C" fn()` that does
            // not unwind (it catches panics).
            if unsafe { libc::atexit(write_global_trace) } != 0 {
                eprintln!("pool: {TRACE_ENV} is set but the trace cannot be written at exit");
            }
        }
        pool
    })
}

/// The environment variable that traces the global pool (`Builder::trace`).
const TRACE_ENV: &str = "POOL_TRACE";

/// At process exit: write the global pool's timeline (its workers may still
/// be running: see `trace/timeline.rs` for why that is sound).
extern "C" fn write_global_trace() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(timeline) = GLOBAL.get().and_then(|p| p.registry.timeline.as_deref()) {
            timeline.write();
        }
    });
}

/// `POOL_WORKER_THREADS`, if set; a value that is not a positive integer is a
/// panic that names the variable and the value.
fn worker_threads_from_env() -> Option<usize> {
    let value = std::env::var_os(WORKER_THREADS_ENV)?;
    match value.to_str().and_then(|s| s.trim().parse::<usize>().ok()) {
        Some(n) if n > 0 => Some(n),
        _ => panic!(
            "{WORKER_THREADS_ENV} must be a positive integer (the global pool's worker count), \
             got {value:?}"
        ),
    }
}

thread_local! {
    /// The pool entered by the `Pool::block_on` polling on this thread.
    static ENTERED: Cell<*const Arc<Registry>> = const { Cell::new(ptr::null()) };
}

fn entered<'a>() -> Option<&'a Arc<Registry>> {
    let p = ENTERED.with(Cell::get);
    // SAFETY: non-null only while `Entered::poll` polls its future on this
    // thread, and it points at the registry of the `Pool` that the enclosing
    // `block_on` borrows; see the module invariants.
    unsafe { p.as_ref() }
}

thread_local! {
    /// The pool whose blocking thread this is.
    static BLOCKING_THREAD_OF: std::cell::RefCell<Option<Arc<Registry>>> =
        const { std::cell::RefCell::new(None) };
}

/// Makes `registry` the current pool of this blocking thread until dropped.
pub(crate) struct BlockingThreadGuard(());

pub(crate) fn enter_blocking_thread(registry: &Arc<Registry>) -> BlockingThreadGuard {
    BLOCKING_THREAD_OF.with(|b| *b.borrow_mut() = Some(Arc::clone(registry)));
    BlockingThreadGuard(())
}

impl Drop for BlockingThreadGuard {
    fn drop(&mut self) {
        let registry = BLOCKING_THREAD_OF.with(|b| b.borrow_mut().take());
        drop(registry);
    }
}

/// Is worker `w`'s pool the current pool (no other pool entered by a
/// `block_on` on this thread)? Then fork-join runs on `w` directly.
pub(crate) fn current_is_worker_pool(w: &WorkerThread) -> bool {
    entered().is_none_or(|r| Arc::ptr_eq(r, w.registry()))
}

/// The entered pool, else this worker's pool.
fn running_pool<'a>() -> Option<&'a Arc<Registry>> {
    entered().or_else(|| WorkerThread::current().map(|w| w.registry()))
}

/// Run `f` with the current pool: the entered pool, this worker's pool, the
/// pool of this blocking thread, or the global pool.
pub(crate) fn with_current<R>(f: impl FnOnce(&Arc<Registry>) -> R) -> R {
    if let Some(registry) = running_pool() {
        return f(registry);
    }
    if let Some(registry) = BLOCKING_THREAD_OF.with(|b| b.borrow().clone()) {
        return f(&registry);
    }
    f(&global().registry)
}

pin_project! {
    /// Makes a pool the current one while its `block_on` future is polled.
    struct Entered<'a, F> {
        registry: &'a Arc<Registry>,
        #[pin]
        future: F,
    }
}

/// Restores the previously entered pool, also on a panic.
struct Restore(*const Arc<Registry>);

impl Drop for Restore {
    fn drop(&mut self) {
        ENTERED.with(|e| e.set(self.0));
    }
}

impl<F: Future> Future for Entered<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _restore = Restore(ENTERED.with(|e| e.replace(*this.registry)));
        this.future.poll(cx)
    }
}
