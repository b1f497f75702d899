//! `task::Builder`: what one task's spawn may be told besides its future
//! (a name); not the pool's `Builder` (`builder.rs`), which builds pools.
//! Its methods belong to the public API's floor (`task_spawns.rs`,
//! beside the spawns they make): this floor only holds the options.

/// A spawn with options: tokio's `task::Builder`, stable here. A name
/// shows in [`TaskInfo::name`](crate::TaskInfo::name) and
/// [`TaskDump`](crate::TaskDump), a [`Stall`](crate::Stall) report,
/// tokio-console's Name column (feature `console`) and the `Display` of the
/// [`JoinError`](crate::JoinError) of a panic. A task spawned without one
/// costs nothing more than through [`spawn`](crate::spawn); a named task
/// keeps its name in its pool from its spawn until its future is dropped.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let err = pool.block_on(async {
///     pool::task::Builder::new()
///         .name("fetcher")
///         .spawn(async { panic!("no route") })
///         .unwrap()
///         .await
///         .unwrap_err()
/// });
/// assert_eq!(err.to_string(), "task `fetcher` panicked: no route");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Builder<'a> {
    pub(crate) name: Option<&'a str>,
}
