//! `task::Builder`'s methods: its options, and the spawns of the free
//! functions (`free_fns.rs`) and of `Handle` (`handle.rs`) made with them.
//! The type itself is on the task floor (`task/task_builder.rs`), beside
//! the task types `pool::task` exports with it; its spawns need the
//! scheduler, so they are on this floor.

use crate::context::pool_cells;
use crate::free_fns::{try_spawn_at, OFF_WORKER};
use crate::handle::Handle;
use crate::scheduler::spawn::{spawn_blocking_task, spawn_local_task, spawn_task_on};
use crate::task::join_handle::JoinHandle;
use crate::task::spawn_error::SpawnError;
// Named apart from the pool's `Builder` (`builder.rs`), which it is not.
use crate::task::task_builder::Builder as TaskBuilder;
use std::future::Future;
use std::io;
use std::panic::Location;

/// [`task::Builder`](crate::task::Builder)'s options, and its spawns: the
/// free functions' and [`Handle`]'s, with those options.
impl<'a> TaskBuilder<'a> {
    /// A spawn with no options yet.
    pub fn new() -> TaskBuilder<'a> {
        TaskBuilder { name: None }
    }

    /// Name the task (copied at the spawn).
    pub fn name(self, name: &'a str) -> TaskBuilder<'a> {
        TaskBuilder { name: Some(name) }
    }

    /// Spawn a task onto the current pool, as [`spawn`](crate::spawn).
    ///
    /// # Errors
    ///
    /// Past the pool's [`Builder::max_tasks`](crate::Builder::max_tasks),
    /// an error of kind [`io::ErrorKind::Other`] whose inner error is the
    /// [`SpawnError`] (the `io::Result` is tokio's signature;
    /// [`try_spawn`](TaskBuilder::try_spawn) returns the `SpawnError`
    /// itself).
    ///
    /// # Panics
    ///
    /// As [`spawn`](crate::spawn): if the current pool is the global pool and it cannot
    /// start.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let n = pool.block_on(async {
    ///     pool::task::Builder::new().name("answer").spawn(async { 42 }).unwrap().await
    /// });
    /// assert_eq!(n.unwrap(), 42);
    /// ```
    #[track_caller]
    pub fn spawn<F>(self, future: F) -> io::Result<JoinHandle<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        try_spawn_at(future, Location::caller(), self.name).map_err(io::Error::other)
    }

    /// Spawn a task onto the current pool, as [`try_spawn`](crate::try_spawn):
    /// refused with a [`SpawnError`] past the pool's
    /// [`Builder::max_tasks`](crate::Builder::max_tasks). Never panics for
    /// the limit.
    ///
    /// # Errors
    ///
    /// [`SpawnError`], past the pool's `max_tasks`.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().max_tasks(1).build().unwrap();
    /// pool.block_on(async {
    ///     let held = pool::task::Builder::new()
    ///         .name("held")
    ///         .try_spawn(std::future::pending::<()>())
    ///         .unwrap();
    ///     let err = pool::task::Builder::new().name("shed").try_spawn(async {}).unwrap_err();
    ///     assert_eq!(err.max_tasks(), 1);
    ///     held.abort();
    /// });
    /// ```
    #[track_caller]
    pub fn try_spawn<F>(self, future: F) -> Result<JoinHandle<F::Output>, SpawnError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        try_spawn_at(future, Location::caller(), self.name)
    }

    /// Spawn a task onto `handle`'s pool, as [`Handle::spawn`].
    ///
    /// # Errors
    ///
    /// Past the pool's [`Builder::max_tasks`](crate::Builder::max_tasks),
    /// as [`spawn`](TaskBuilder::spawn).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let h = pool::task::Builder::new().name("two").spawn_on(async { 2 }, &pool.handle()).unwrap();
    /// assert_eq!(pool.block_on(h).unwrap(), 2);
    /// ```
    #[track_caller]
    pub fn spawn_on<F>(self, future: F, handle: &Handle) -> io::Result<JoinHandle<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let registry = &handle.registry;
        spawn_task_on(
            registry,
            future,
            Location::caller(),
            self.name,
            registry.local_worker(),
        )
        .map_err(io::Error::other)
    }

    /// Spawn a `!Send` future pinned to this worker thread, as
    /// [`spawn_local`](crate::spawn_local).
    ///
    /// # Errors
    ///
    /// Off a worker thread, an error of kind [`io::ErrorKind::Other`] that
    /// says what to do instead (where [`spawn_local`](crate::spawn_local) panics);
    /// past the pool's [`Builder::max_tasks`](crate::Builder::max_tasks), one
    /// whose inner error is the [`SpawnError`].
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let n = pool.block_on(pool.spawn(async {
    ///     let local = std::rc::Rc::new(5);
    ///     pool::task::Builder::new()
    ///         .name("local")
    ///         .spawn_local(async move { *local })
    ///         .unwrap()
    ///         .await
    /// }));
    /// assert_eq!(n.unwrap().unwrap(), 5);
    /// // Off a worker: an error, not a panic.
    /// assert!(pool::task::Builder::new().spawn_local(async {}).is_err());
    /// ```
    #[track_caller]
    pub fn spawn_local<F>(self, future: F) -> io::Result<JoinHandle<F::Output>>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let at = Location::caller();
        match pool_cells::worker() {
            Some(worker) => spawn_local_task(worker.registry(), worker, future, at, self.name)
                .map_err(io::Error::other),
            None => Err(io::Error::other(OFF_WORKER)),
        }
    }

    /// Run a blocking closure on the current pool's blocking threads, as
    /// [`spawn_blocking`](crate::spawn_blocking).
    ///
    /// # Errors
    ///
    /// None today: the `Result` is tokio's signature.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let n = pool.block_on(async {
    ///     pool::task::Builder::new().name("stat").spawn_blocking(|| 7).unwrap().await
    /// });
    /// assert_eq!(n.unwrap(), 7);
    /// ```
    #[track_caller]
    pub fn spawn_blocking<F, R>(self, f: F) -> io::Result<JoinHandle<R>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let at = Location::caller();
        Ok(crate::context::current::with_current(|registry| {
            spawn_blocking_task(registry, f, at, self.name)
        }))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::pool::Pool;
    use crate::task::task_builder::Builder;

    /// A named task's name leaves the pool with its registry entry:
    /// completed, panicked, aborted, or cancelled by the shutdown.
    #[test]
    fn a_named_task_leaves_no_name_behind() {
        let pool = Pool::new().unwrap();
        let handle = pool.handle();
        let names_held = || handle.registry.tasks().names_held();
        for i in 0..100 {
            let h = Builder::new()
                .name("short")
                .spawn_on(async move { i }, &handle);
            assert_eq!(pool.block_on(h.unwrap()).unwrap(), i);
        }
        let panicked = Builder::new()
            .name("boom")
            .spawn_on(async { panic!("boom") }, &handle);
        assert!(pool.block_on(panicked.unwrap()).is_err());
        let blocking = pool.block_on(async { Builder::new().name("b").spawn_blocking(|| 1) });
        assert_eq!(pool.block_on(blocking.unwrap()).unwrap(), 1);
        let aborted = Builder::new()
            .name("aborted")
            .spawn_on(std::future::pending::<()>(), &handle)
            .unwrap();
        aborted.abort();
        assert!(pool.block_on(aborted).unwrap_err().is_cancelled());
        let pending = Builder::new()
            .name("pending")
            .spawn_on(std::future::pending::<()>(), &handle);
        // Finished tasks' entries (and names) may wait for a removal batch
        // until the workers go idle (`task/owned.rs`).
        let start = std::time::Instant::now();
        while names_held() != 1 {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(5),
                "{} names held for 1 live named task",
                names_held()
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        drop(pending);
        drop(pool);
        assert_eq!(
            names_held(),
            0,
            "shutdown dropped the pending task, and its name"
        );
    }
}
