//! `Pool`: a running pool of worker threads, shut down when dropped.
//!
//! A `Pool` is a [`Handle`] (what spawns and reads the pool) plus the
//! pool's threads: every method but the shutdown delegates to the handle.
//! `Builder::build` fills in a `Config`, and `Pool::start` checks it and
//! launches the threads (`scheduler/start.rs`, which shuts down what it
//! started if a thread fails to start); the shutdown steps are in
//! `scheduler/shutdown.rs`.

use crate::context::pool_cells::Entered;
use crate::handle::Handle;
use crate::inspect::dump::TaskInfo;
use crate::inspect::metrics::Metrics;
use crate::inspect::metrics::WorkerMetrics;
use crate::inspect::poll_times::Histogram;
use crate::scheduler::block_on::block_on_in;
use crate::scheduler::config::Config;
use crate::scheduler::shutdown::shutdown;
use crate::scheduler::start::start;
use crate::scheduler::threads::Threads;
use crate::scheduler::watcher::Look;
use crate::task::join_handle::JoinHandle;
use std::fmt;
use std::future::Future;
use std::io;
use std::time::Duration;

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
    /// Everything but the threads: the pool's methods delegate to it.
    handle: Handle,
    /// The workers and the watcher, for the shutdown.
    threads: Threads,
}

impl Pool {
    /// Start a pool with `config` and the watcher's `look`, the stall
    /// detector (`Builder::build`).
    pub(crate) fn start(config: Config, look: Option<Box<dyn Look>>) -> io::Result<Pool> {
        let (registry, threads) = start(config, look)?;
        Ok(Pool {
            handle: Handle { registry },
            threads,
        })
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
        Pool::start(Config::new(), None)
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
        self.handle.spawn(future)
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
        // With one of the pool's tokio runtimes (`tokio-compat`) entered
        // around each poll.
        block_on_in(
            Some(&self.handle.registry),
            Entered::new(&self.handle.registry, future),
        )
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
        crate::join::join_in(&self.handle.registry, a, b)
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
        OP: FnOnce(&crate::join::scope::Scope<'scope>) -> R + Send,
        R: Send,
    {
        crate::join::scope_in(&self.handle.registry, op)
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
        self.handle.spawn_blocking(f)
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
        self.handle.clone()
    }

    /// The seed of a seeded pool ([`Builder::seed`](crate::Builder::seed),
    /// or `POOL_SEED` over it); `None` for a pool of worker threads.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().seed(42).build().unwrap();
    /// let seed = std::env::var("POOL_SEED").map_or(42, |s| s.parse().unwrap());
    /// assert_eq!(pool.seed(), Some(seed));
    /// assert_eq!(pool::Pool::new().unwrap().seed(), None);
    /// ```
    pub fn seed(&self) -> Option<u64> {
        self.handle.seed()
    }

    /// A seeded pool's schedule so far, as a hash: which logical worker
    /// ran which task (numbered in the pool's own spawn order) or
    /// fork-join job, step by step. The same seed, configuration and binary
    /// give the same hash; two runs with different hashes interleaved their
    /// tasks differently. 0 for a pool that is not seeded (it records no
    /// schedule).
    ///
    /// # Examples
    ///
    /// ```
    /// fn hash(seed: u64) -> u64 {
    ///     let pool = pool::Builder::new().seed(seed).build().unwrap();
    ///     pool.block_on(async {
    ///         let tasks: Vec<_> = (0..8).map(|_| pool::spawn(pool::yield_now())).collect();
    ///         for t in tasks {
    ///             t.await.unwrap();
    ///         }
    ///     });
    ///     pool.schedule_hash()
    /// }
    /// assert_eq!(hash(1), hash(1));
    /// ```
    pub fn schedule_hash(&self) -> u64 {
        self.handle.schedule_hash()
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
        self.handle.registry.num_workers()
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
        self.handle.metrics()
    }

    /// A snapshot of each worker's counters, in index order (worker `i` is
    /// the thread named `{thread_name}-{i}`). In a quiescent pool their
    /// `busy` and `polls` add up to [`metrics`](Pool::metrics)'s.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().worker_threads(2).build().unwrap();
    /// pool.block_on(pool.spawn(async {})).unwrap();
    /// let workers = pool.worker_metrics();
    /// assert_eq!(workers.len(), 2);
    /// assert_eq!(workers.iter().map(|w| w.polls).sum::<u64>(), 1);
    /// ```
    pub fn worker_metrics(&self) -> Vec<WorkerMetrics> {
        self.handle.worker_metrics()
    }

    /// How long the pool's polls took, by bucket, summed over the workers:
    /// every count is 0 unless the pool was built with
    /// [`Builder::poll_time_histogram(true)`](crate::Builder::poll_time_histogram).
    /// See [`Histogram`] for the buckets.
    pub fn poll_time_histogram(&self) -> Histogram {
        self.handle.poll_time_histogram()
    }

    /// Where the pool serves tokio-console (feature `console`): the
    /// address given to [`Builder::console`](crate::Builder::console), with
    /// a port of 0 resolved to the one picked; `None` if it serves none.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().console("127.0.0.1:0").build().unwrap();
    /// let addr = pool.console_addr().unwrap();
    /// assert!(addr.ip().is_loopback() && addr.port() != 0);
    /// // `tokio-console http://127.0.0.1:<port>` shows its tasks.
    /// ```
    #[cfg(feature = "console")]
    pub fn console_addr(&self) -> Option<std::net::SocketAddr> {
        self.handle.console_addr()
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
    pub fn tasks(&self) -> Vec<TaskInfo> {
        self.handle.tasks()
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
        shutdown(&self.handle.registry, &mut self.threads, Some(timeout));
    }
}

/// The steps, in order, are in `scheduler/shutdown.rs`.
impl Drop for Pool {
    fn drop(&mut self) {
        shutdown(&self.handle.registry, &mut self.threads, None);
    }
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.worker_threads())
            .finish_non_exhaustive()
    }
}
