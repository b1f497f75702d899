//! The thread-local cells of plain data: a blocking thread's task, the
//! outside spawner's shard and ids, the deadlock handler's mark, the
//! task the console is polling, the pool whose clock a `block_on` thread
//! holds, the timeline tag and the cooperative budget. They name no type of the
//! scheduler, so the scheduler's leaves (`scheduler/coop.rs`,
//! `inspect/timeline.rs`) read them without joining its core
//! (`pool_cells.rs` holds the cells that name the scheduler's types).

use crate::task::id::TaskId;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Spreads the threads that spawn from outside over the live-task
/// registry's shards (`outside_spawn`).
static NEXT_OUTSIDE_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The task whose closure this blocking thread runs (workers publish
    /// theirs in their stats instead: no thread-local access per poll).
    static BLOCKING_TASK: Cell<Option<TaskId>> = const { Cell::new(None) };

    /// For spawns from a thread that is not a worker: a shard of the
    /// live-task table (each outside thread keeps to one, and threads
    /// spread over them) and this thread's block of task ids (the next one
    /// and the block's end). One thread-local serves both (its access is a
    /// call in a position-independent executable).
    static OUTSIDE_SPAWNS: (usize, Cell<(u64, u64)>) =
        (NEXT_OUTSIDE_THREAD.fetch_add(1, Ordering::Relaxed), Cell::new((0, 0)));

    /// True while this thread runs a deadlock handler.
    static IN_DEADLOCK_HANDLER: Cell<bool> = const { Cell::new(false) };

    /// For a traced pool's threads: (the timeline's address, this thread's
    /// tag in it), so a waker can note who woke a worker
    /// (`inspect/timeline.rs`).
    static TIMELINE_TAG: Cell<(usize, u32)> = const { Cell::new((0, 0)) };

    /// The task a pool that serves tokio-console is polling on this thread,
    /// so that its counting waker tells a self-wake
    /// (`inspect/console/counting_waker.rs`).
    #[cfg(feature = "console")]
    static CONSOLE_POLL: Cell<Option<TaskId>> = const { Cell::new(None) };

    /// The address of the pool whose clock this plain thread holds in an
    /// enclosing `Pool::block_on` (0: none), so that a nested `block_on` of
    /// the same pool does not count the thread twice
    /// (`scheduler/block_on.rs`).
    static CLOCK_HELD: Cell<usize> = const { Cell::new(0) };

    /// The cooperative budget of the task (or `block_on` future) being
    /// polled on this thread: operations left in this poll, or
    /// `coop::UNCONSTRAINED` outside one (`scheduler/coop.rs`).
    static BUDGET: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// The task whose closure this blocking thread runs, if any.
pub(crate) fn blocking_task() -> Option<TaskId> {
    BLOCKING_TASK.with(Cell::get)
}

/// Make `id` the current task of this (blocking) thread for the length of
/// `f`: one closure.
pub(crate) fn with_blocking_task<R>(id: TaskId, f: impl FnOnce() -> R) -> R {
    let outer = BLOCKING_TASK.with(|c| c.replace(Some(id)));
    let r = f();
    BLOCKING_TASK.with(|c| c.set(outer));
    r
}

/// Record that this thread holds the clock of the pool at `pool` (an
/// address; 0: none) and return what it held before.
pub(crate) fn replace_clock_held(pool: usize) -> usize {
    CLOCK_HELD.with(|c| c.replace(pool))
}

/// The task whose poll a pool serving tokio-console is timing on this
/// thread, if any.
#[cfg(feature = "console")]
pub(crate) fn console_poll() -> Option<TaskId> {
    CONSOLE_POLL.with(Cell::get)
}

/// Make `id` the task the console is polling on this thread for the length
/// of `f`: one poll (a `block_on` inside it polls others, and gives `id`
/// back after).
#[cfg(feature = "console")]
pub(crate) fn with_console_poll<R>(id: TaskId, f: impl FnOnce() -> R) -> R {
    let outer = CONSOLE_POLL.with(|c| c.replace(Some(id)));
    let r = f();
    CONSOLE_POLL.with(|c| c.set(outer));
    r
}

/// For a spawn from a thread that is not a worker: the live-task table
/// shard this thread keeps to, and a task id from this thread's block.
pub(crate) fn outside_spawn() -> (usize, TaskId) {
    OUTSIDE_SPAWNS.with(|(hint, ids)| (*hint, TaskId::next_in(ids)))
}

/// Run a deadlock handler with this thread marked as running one (also if
/// it panics: its panic is caught by the detector above).
pub(crate) fn run_deadlock_handler(handler: &(dyn Fn() + Send + Sync)) {
    struct Unmark;
    impl Drop for Unmark {
        fn drop(&mut self) {
            IN_DEADLOCK_HANDLER.with(|h| h.set(false));
        }
    }
    IN_DEADLOCK_HANDLER.with(|h| h.set(true));
    let _unmark = Unmark;
    handler();
}

/// Panic if this thread is running a deadlock handler: `what` would lock the
/// state the handler already holds.
pub(crate) fn forbid_in_deadlock_handler(what: &str) {
    if IN_DEADLOCK_HANDLER.with(Cell::get) {
        panic!(
            "pool::{what}() called from the deadlock handler: the handler runs while the \
             pool's deadlock state is locked, so it must not call mark_blocked() or \
             mark_unblocked(); unblock the waiting worker instead (send it a message)"
        );
    }
}

/// This thread's cooperative budget (`scheduler/coop.rs`).
#[inline]
pub(crate) fn budget() -> u32 {
    BUDGET.with(Cell::get)
}

/// Set this thread's cooperative budget; returns the one it replaces.
#[inline]
pub(crate) fn replace_budget(budget: u32) -> u32 {
    BUDGET.with(|b| b.replace(budget))
}

/// Spend one unit of this thread's cooperative budget, if it is limited.
#[inline]
pub(crate) fn spend_budget() {
    BUDGET.with(|b| {
        let left = b.get();
        if left != u32::MAX {
            b.set(left.saturating_sub(1));
        }
    });
}

/// This thread's timeline tag: (the timeline's address, the tag).
pub(crate) fn timeline_tag() -> (usize, u32) {
    TIMELINE_TAG.with(Cell::get)
}

/// Set this thread's timeline tag.
pub(crate) fn set_timeline_tag(tag: (usize, u32)) {
    TIMELINE_TAG.with(|t| t.set(tag));
}
