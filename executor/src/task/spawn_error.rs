//! `SpawnError`: a spawn the pool refused, because its live tasks were at
//! `Builder::max_tasks`.

use std::fmt;

/// A spawn the pool refused: it already had
/// [`Builder::max_tasks`](crate::Builder::max_tasks) live tasks. Returned by
/// [`try_spawn`](crate::try_spawn) and
/// [`task::Builder::try_spawn`](crate::task::Builder::try_spawn); the future
/// was dropped without being polled. A task's place is freed when it ends,
/// however it ends (completed, panicked, aborted, cancelled).
///
/// # Examples
///
/// ```
/// let pool = pool::Builder::new().max_tasks(1).build().unwrap();
/// pool.block_on(async {
///     let first = pool::try_spawn(std::future::pending::<()>()).unwrap();
///     let err = pool::try_spawn(async {}).unwrap_err();
///     assert_eq!(err.max_tasks(), 1);
///     assert!(err.to_string().contains("max_tasks = 1"), "{err}");
///     first.abort();
///     let _ = first.await; // its place is free again
///     assert!(pool::try_spawn(async {}).is_ok());
/// });
/// assert_eq!(pool.metrics().rejected_spawns, 1);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SpawnError {
    max_tasks: usize,
}

impl SpawnError {
    pub(crate) fn new(max_tasks: usize) -> SpawnError {
        SpawnError { max_tasks }
    }

    /// The limit that refused the spawn: the pool's `max_tasks`.
    pub fn max_tasks(&self) -> usize {
        self.max_tasks
    }
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "spawn refused: the pool has max_tasks = {} live tasks (Builder::max_tasks); \
             shed the work, or retry once a task has ended",
            self.max_tasks
        )
    }
}

impl fmt::Debug for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpawnError")
            .field("max_tasks", &self.max_tasks)
            .finish()
    }
}

impl std::error::Error for SpawnError {}
