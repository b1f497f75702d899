//! `Schedule`: what a task needs of the pool that owns it, and how this
//! floor names the scheduler's type without importing the floor above.
//!
//! A task needs five things of its pool: its table of live tasks (an
//! abort wakes the task through it), a way to leave it when its future
//! is dropped, a poll of its future (which a pool that serves
//! tokio-console instruments), for its `JoinHandle`, the cooperative
//! budget, and, when its header is dropped, a way to give back its share
//! of the pool (`share.rs`). That is the [`Schedule`] trait (tokio's task
//! module has one of the same name). The scheduler names its type for this floor by
//! implementing [`RegistryBinding`] for [`RegistryBound`]; [`Registry`] is the type that
//! resolves to, at compile time. So the header holds a plain pointer to the
//! scheduler's registry (no trait object: no extra word per task, no
//! dynamic call), while no file here imports the scheduler.

use super::header::TaskHeader;
use super::owned::{LiveSlot, OwnedTasks};
use super::waits::Wait;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// What a task needs of the pool that owns it.
pub(crate) trait Schedule: Send + Sync + 'static {
    /// The pool's table of live tasks.
    fn live_tasks(&self) -> &OwnedTasks;

    /// A task dropped its future: take it out of the live tasks if it is
    /// registered in `slot` (now, or in a batch: `OwnedTasks` says which is
    /// allowed), and count it ended unless it is a `spawn_blocking`
    /// closure's. `local` for a `spawn_local` task (dropped on its own
    /// worker, which counts its live ones). `header` is the task's: only a
    /// pool that serves tokio-console reads it (its id).
    fn release(&self, header: &TaskHeader, slot: Option<LiveSlot>, local: bool, blocking: bool);

    /// Poll the future of `header`'s task: `poll` (which catches its
    /// panics) with the context it is to see, `cx` itself unless the pool
    /// serves tokio-console, which times the poll and hands the future a
    /// waker that counts its clones (`inspect/console/counting_waker.rs`). The header's
    /// id is read only then, so a pool without a console does nothing more
    /// per poll than call `poll`.
    fn poll_future<R>(
        &self,
        header: &TaskHeader,
        cx: &mut Context<'_>,
        poll: impl FnOnce(&mut Context<'_>) -> R,
    ) -> R;

    /// May an operation complete now, by the cooperative budget of the
    /// thread polling? Else the task is woken and this is `Pending`
    /// (`scheduler/coop.rs`).
    fn poll_proceed(cx: &mut Context<'_>) -> Poll<()>;

    /// An operation `poll_proceed` allowed completed: spend one unit.
    fn made_progress();

    /// A pool future returned `Pending` for `wait`: record it for the task
    /// being polled on this thread, if any (`waits.rs`).
    fn note_wait(wait: Wait);

    /// A task's header was dropped: give back the share of the pool at
    /// `this` that it held (`share.rs`), into the cache of this thread's
    /// worker if the thread is one of that pool's workers.
    ///
    /// # Safety
    ///
    /// The header held one share of the pool at `this`, and gives it back
    /// once, here. The pool may be gone once this returns.
    unsafe fn share_dropped(this: NonNull<Self>)
    where
        Self: Sized;
}

/// Names the scheduler's type for this floor: implemented once, by the
/// scheduler, for [`RegistryBound`] (`scheduler/registry.rs`).
pub(crate) trait RegistryBinding {
    /// The type that owns tasks: the scheduler's `Registry`.
    type Registry: Schedule;
}

/// What [`RegistryBinding`] is implemented for: a type with no values.
pub(crate) enum RegistryBound {}

/// The scheduler's `Registry`, as this floor names it: the same type
/// under the same name, bound here (`docs/ARCHITECTURE.md`, "Floors").
pub(crate) type Registry = <RegistryBound as RegistryBinding>::Registry;
