//! Tasks: [`JoinHandle`], [`AbortHandle`], [`JoinError`], [`TaskId`],
//! [`SpawnError`], and [`Builder`], a spawn with options (a name). All but
//! `Builder` are also at the crate root.
//!
//! # Examples
//!
//! ```
//! let pool = pool::Pool::new().unwrap();
//! let h = pool.block_on(async {
//!     pool::task::Builder::new().name("ticker").spawn(std::future::pending::<()>())
//! }).unwrap();
//! # while pool.tasks().iter().any(|t| t.state != pool::TaskState::Idle) { std::thread::yield_now(); }
//! let names: Vec<_> = pool.tasks().into_iter().filter_map(|t| t.name).collect();
//! assert_eq!(names, ["ticker"]);
//! h.abort();
//! ```

// For the crate's developers (not in the public docs):
//
// Tasks: what wraps a spawned future, the handle that awaits it, and the
// table of live tasks. The second floor of the crate, above `sleep/`:
// it imports only the leaf modules (`sync`, `unwind`), nothing of the
// scheduler above it.
//
// A task is one `async_task` allocation holding the [`TaskHeader`]
// metadata (which holds a share of its pool, `share.rs`), a schedule function that
// captures nothing (it finds the pool in the metadata) and the future
// wrapped in a [`TaskFuture`]. The wrapper catches panics, honours
// `JoinHandle::abort`, and takes the task out of the pool's table of live
// tasks ([`OwnedTasks`]) when the future is dropped.
//
// | file | what |
// |---|---|
// | `mod.rs` | this map, and the re-exports of the public task types |
// | `header.rs` | `TaskHeader`: owner, state, id and spawn site, and activity words; finding it from a waker |
// | `future.rs` | `TaskFuture` (panics caught, aborts honoured), `TaskOutput`, `cancel` |
// | `join_handle.rs` | `JoinHandle` |
// | `abort_handle.rs` | `AbortHandle`: cancel a task through a waker of it |
// | `task_builder.rs` | `Builder`: one task's spawn options (a name), not the pool's `Builder`; its methods are `free_fns.rs`'s |
// | `error.rs` | `JoinError` |
// | `spawn_error.rs` | `SpawnError`: a spawn refused at `Builder::max_tasks` |
// | `id.rs` | `TaskId` and the per-thread blocks of ids |
// | `site.rs` | spawn sites (a spawn call and its tasks' waker vtable) kept as 14-bit indexes into one process-wide table |
// | `waker.rs` | `TaskWaker`: a task's waker in one word, as the table of live tasks keeps it |
// | `coarse_clock.rs` | the coarse clock of task ages |
// | `owned.rs` | `OwnedTasks`: the sharded table of live tasks |
// | `names.rs` | `TaskNames`: the names of a shard's named tasks, kept with its entries |
// | `waits.rs` | `WaitBoard`: what each task's last poll waited on among pool's futures, a seqlocked slot per table key |
// | `noting.rs` | `note_wait` and `Noting`: how a pool future that returns `Pending` records what it is |
// | `share.rs` | `TaskShares`: the count that keeps a pool alive for its tasks' headers |
// | `schedule.rs` | `Schedule`: what a task needs of its pool, and the `Binding` that names the scheduler's type here |
//
// Every file imports its siblings directly, never this `mod.rs`, which only
// re-exports: the files of the floor do not import each other in a circle.

pub(crate) mod abort_handle;
pub(crate) mod coarse_clock;
pub(crate) mod error;
pub(crate) mod future;
pub(crate) mod header;
pub(crate) mod id;
pub(crate) mod join_handle;
pub(crate) mod names;
pub(crate) mod noting;
pub(crate) mod owned;
pub(crate) mod schedule;
pub(crate) mod share;
pub(crate) mod site;
pub(crate) mod spawn_error;
pub(crate) mod task_builder;
pub(crate) mod task_shard;
pub(crate) mod wait_board;
pub(crate) mod waits;
pub(crate) mod waker;

pub use abort_handle::AbortHandle;
pub use error::JoinError;
pub use id::TaskId;
pub use join_handle::JoinHandle;
pub use spawn_error::SpawnError;
pub use task_builder::Builder;
