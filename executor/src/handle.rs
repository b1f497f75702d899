//! `Handle`: a cheap, cloneable reference to a pool.

use crate::context::pool_cells;
use crate::inspect::dump::{self, TaskInfo};
use crate::inspect::metrics::Metrics;
use crate::inspect::metrics::WorkerMetrics;
use crate::inspect::poll_times::Histogram;
use crate::inspect::snapshot;
use crate::scheduler::registry::Registry;
use crate::scheduler::spawn::{spawn_blocking_task, spawn_task, spawn_task_on};
use crate::task::join_handle::JoinHandle;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::Location;
use std::sync::Arc;
use std::time::Duration;

/// A cheap, cloneable reference to a pool, to spawn onto it from anywhere.
///
/// A `Handle` keeps the pool reachable, not alive: once its [`Pool`](crate::Pool) is
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
    pub(crate) registry: Arc<Registry>,
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
        crate::context::current::with_current(|registry| Handle {
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
        crate::context::current::try_current().map(|registry| Handle { registry })
    }

    /// Make this pool the current pool of the calling thread until the guard
    /// drops: [`spawn`](crate::spawn), [`block_on`](crate::block_on)'s
    /// current pool, [`Handle::current`], and every socket and timer made
    /// meanwhile belong to it. For a thread the pool does not own (another
    /// library's, a C callback's), so that it spawns onto this pool rather
    /// than starting the global one. Guards nest; drop them in the reverse
    /// order of the calls, on the thread that made them (the guard is not
    /// `Send`), and do not hold one across an `.await`.
    ///
    /// # Panics
    ///
    /// Dropping a guard that is not the innermost one panics (unless the
    /// thread is already panicking).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().worker_threads(1).build().unwrap();
    /// let handle = pool.handle();
    /// std::thread::spawn(move || {
    ///     let _entered = handle.enter();
    ///     // Lands on `pool`, not on the global pool.
    ///     let task = pool::spawn(async { pool::Handle::current().metrics().workers });
    ///     assert_eq!(pool::block_on(task).unwrap(), 1);
    /// })
    /// .join()
    /// .unwrap();
    /// ```
    pub fn enter(&self) -> EnterGuard<'_> {
        EnterGuard {
            _inner: pool_cells::enter(&self.registry),
            _handle: PhantomData,
        }
    }

    /// Spawn a task onto this handle's pool; see [`Pool::spawn`](crate::Pool::spawn).
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
        spawn_task(&self.registry, future, Location::caller())
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
        spawn_blocking_task(&self.registry, f, Location::caller(), None)
    }

    /// The seed of a seeded pool; see [`Pool::seed`](crate::Pool::seed).
    pub fn seed(&self) -> Option<u64> {
        self.registry.seeded().map(|s| s.seed())
    }

    /// The seeded pool's schedule so far; see
    /// [`Pool::schedule_hash`](crate::Pool::schedule_hash).
    pub fn schedule_hash(&self) -> u64 {
        self.registry.seeded().map_or(0, |s| s.schedule_hash())
    }

    /// A snapshot of the pool's counters; see [`Pool::metrics`](crate::Pool::metrics).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().worker_threads(2).build().unwrap();
    /// assert_eq!(pool.handle().metrics().workers, 2);
    /// ```
    pub fn metrics(&self) -> Metrics {
        snapshot::metrics(&self.registry)
    }

    /// The load signal alone: how long a task woken now would wait before
    /// a worker polls it ([`Metrics::schedule_delay`]). A few atomic loads
    /// and a clock read, so a server can ask once per request and shed
    /// load (answer 503) while it is high.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let pool = pool::Builder::new().worker_threads(1).build().unwrap();
    /// let handle = pool.handle();
    /// // An idle pool: nothing waits.
    /// assert!(handle.schedule_delay() < Duration::from_secs(1));
    /// ```
    pub fn schedule_delay(&self) -> Duration {
        self.registry.schedule_delay().delay()
    }

    /// Each worker's counters; see [`Pool::worker_metrics`](crate::Pool::worker_metrics).
    pub fn worker_metrics(&self) -> Vec<WorkerMetrics> {
        snapshot::worker_metrics(&self.registry)
    }

    /// The poll-time histogram; see
    /// [`Pool::poll_time_histogram`](crate::Pool::poll_time_histogram).
    pub fn poll_time_histogram(&self) -> Histogram {
        snapshot::poll_time_histogram(&self.registry)
    }

    /// Where the pool serves tokio-console; see
    /// [`Pool::console_addr`](crate::Pool::console_addr).
    #[cfg(feature = "console")]
    pub fn console_addr(&self) -> Option<std::net::SocketAddr> {
        self.registry.console().map(|c| c.addr())
    }

    /// Every live task of the pool, now; see [`Pool::tasks`](crate::Pool::tasks).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let handle = pool.handle();
    /// let _task = handle.spawn(std::future::pending::<()>());
    /// assert_eq!(handle.tasks().len(), 1);
    /// ```
    pub fn tasks(&self) -> Vec<TaskInfo> {
        dump::collect(&self.registry)
    }
}

/// The pool entered on this thread by [`Handle::enter`], until dropped.
#[must_use = "the pool is current only until the guard drops"]
pub struct EnterGuard<'a> {
    _inner: pool_cells::PoolEntry,
    /// Ties the guard to its handle's borrow, as tokio's does; the raw
    /// pointers inside keep it on its thread (`!Send`, `!Sync`).
    _handle: PhantomData<&'a Handle>,
}

impl fmt::Debug for EnterGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterGuard").finish_non_exhaustive()
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
        // Dropping the handle detaches the task. Past `max_tasks`, the one
        // error futures' `SpawnError` can say (it has no other), not a panic.
        let registry = &self.registry;
        match spawn_task_on(
            registry,
            future,
            Location::caller(),
            None,
            registry.local_worker(),
        ) {
            Ok(handle) => {
                drop(handle);
                Ok(())
            }
            Err(_) => Err(futures::task::SpawnError::shutdown()),
        }
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
