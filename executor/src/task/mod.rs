//! Tasks: what wraps a spawned future, the handle that awaits it, and the
//! registry of live tasks. The second floor of the crate, above `sleep/`:
//! it imports only the leaf modules (`sync`, `unwind`), nothing of the
//! scheduler above it.
//!
//! A task is one `async_task` allocation holding the [`TaskHeader`]
//! metadata (which owns a reference to its pool), a schedule function that
//! captures nothing (it finds the pool in the metadata) and the future
//! wrapped in a [`TaskFuture`]. The wrapper catches panics, honours
//! `JoinHandle::abort`, and takes the task out of the pool's registry of live
//! tasks ([`OwnedTasks`]) when the future is dropped.
//!
//! | file | what |
//! |---|---|
//! | `header.rs` | `TaskHeader`: owner, id, spawn site, state and activity words; finding it from a waker |
//! | `future.rs` | `TaskFuture` (panics caught, aborts honoured), `TaskOutput`, `cancel` |
//! | `join_handle.rs` | `JoinHandle` |
//! | `error.rs` | `JoinError` |
//! | `id.rs` | `TaskId` and the per-thread blocks of ids |
//! | `clock.rs` | the coarse clock of task ages |
//! | `owned.rs` | `OwnedTasks`: the sharded registry of live tasks |
//!
//! # The pool, seen from here
//!
//! A task needs two things of the pool that owns it: its registry of live
//! tasks (an abort wakes the task through it) and a way to leave it when
//! its future is dropped. That is the [`Schedule`] trait (tokio's task
//! module has one of the same name). The scheduler names its type for this
//! floor by implementing [`Binding`] for [`Bound`]; [`Scheduler`] is the
//! type that resolves to. So the header holds a plain `Arc` of the
//! scheduler's registry (no trait object: no extra word per task, no
//! dynamic call) while no file here imports the floor above.

mod clock;
mod error;
mod future;
mod header;
mod id;
mod join_handle;
mod owned;

pub(crate) use clock::{CoarseClock, COARSE_TICK_NS};
pub use error::JoinError;
pub(crate) use future::{cancel, TaskFuture};
pub(crate) use header::{note_waker, TaskHeader};
pub use id::TaskId;
pub use join_handle::JoinHandle;
pub(crate) use owned::{OwnedTasks, Slot};

/// The task type of this crate: runnable handles carry a [`TaskHeader`].
pub(crate) type Runnable = async_task::Runnable<TaskHeader>;

/// What a task needs of the pool that owns it.
pub(crate) trait Schedule: Send + Sync + 'static {
    /// The pool's registry of live tasks.
    fn live_tasks(&self) -> &OwnedTasks;

    /// The task registered in `slot` dropped its future: take it out of the
    /// live tasks (now, or in a batch: `OwnedTasks` says which is allowed).
    fn release(&self, slot: Slot);
}

/// Names the scheduler's type for this floor: implemented once, by the
/// scheduler, for [`Bound`] (`scheduler/spawn.rs`).
pub(crate) trait Binding {
    /// The type that owns tasks: the scheduler's `Registry`.
    type Scheduler: Schedule;
}

/// What [`Binding`] is implemented for: a type with no values.
pub(crate) enum Bound {}

/// The scheduler's type, as this floor names it.
pub(crate) type Scheduler = <Bound as Binding>::Scheduler;
