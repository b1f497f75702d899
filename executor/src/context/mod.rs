//! Which pool, worker and task are current on this thread: every
//! thread-local of the crate, and the functions that read them.
//!
//! Part of the scheduler's floor (it names the scheduler's types; the
//! scheduler reads it), so the floors above ask here and the floors below
//! never do: what a lower floor needs of a thread (the deadlock handler's
//! mark, the timeline's tag) is handed to it by the scheduler.
//!
//! # The current pool
//!
//! Innermost first: the pool entered on this thread (`ENTERED`): by the
//! `Pool::block_on` polling its future here (set only around each poll of
//! that future, so tasks the thread runs meanwhile see their own pool), or
//! by a `Handle::enter` guard (until it drops); else the pool of the worker
//! thread; else the pool this thread serves (a blocking thread's, or, with
//! `tokio-compat`, one of the tokio threads the pool runs); else the global
//! pool (`scheduler/global.rs`), started on first use.
//!
//! # Invariants
//!
//! * `WORKER` points at the `WorkerThread` on this thread's stack for
//!   exactly as long as that worker's main loop runs (`enter_worker`,
//!   `leave_worker`); it is null on every other thread.
//! * `ENTERED` points at the `Arc<Registry>` of a `Pool` that is borrowed by
//!   the `block_on` call in progress, or at one owned by a live
//!   `EnterGuard`, so it outlives every read. Entries nest: each restores
//!   the one it replaced. A guard dropped out of order (not the innermost)
//!   leaks its registry instead of freeing it, since an inner entry may
//!   still restore a pointer to it, and then panics.
//! * Thread-locals read on a hot path (the worker, on every wake and spawn)
//!   have a `const` initializer and no destructor: an access is one load of
//!   the thread pointer, no lazy-initialization check.

use crate::scheduler::block_on::Signal;
use crate::scheduler::global;
use crate::scheduler::{Driver, Registry, WorkerThread};
use crate::task::TaskId;
use pin_project_lite::pin_project;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// Spreads the threads that spawn from outside over the live-task
/// registry's shards (`outside_spawn`).
static NEXT_OUTSIDE_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The worker whose main loop runs on this thread.
    static WORKER: Cell<*const WorkerThread> = const { Cell::new(ptr::null()) };

    /// The pool entered by the `Pool::block_on` polling on this thread, or
    /// by the innermost `Handle::enter` guard.
    static ENTERED: Cell<*const Arc<Registry>> = const { Cell::new(ptr::null()) };

    /// The pool this thread serves: its blocking thread's, or the pool of
    /// a tokio thread it runs (`tokio-compat`).
    static BLOCKING_POOL: RefCell<Option<Arc<Registry>>> = const { RefCell::new(None) };

    /// The task whose closure this blocking thread runs (workers publish
    /// theirs in their stats instead: no thread-local access per poll).
    static BLOCKING_TASK: Cell<Option<TaskId>> = const { Cell::new(None) };

    /// For spawns from a thread that is not a worker: a shard of the
    /// live-task registry (each outside thread keeps to one, and threads
    /// spread over them) and this thread's block of task ids (the next one
    /// and the block's end). One thread-local serves both (its access is a
    /// call in a position-independent executable).
    static OUTSIDE_SPAWNS: (usize, Cell<(u64, u64)>) =
        (NEXT_OUTSIDE_THREAD.fetch_add(1, Ordering::Relaxed), Cell::new((0, 0)));

    /// True while this thread runs a deadlock handler.
    static IN_DEADLOCK_HANDLER: Cell<bool> = const { Cell::new(false) };

    /// For a traced pool's threads: (the timeline's address, this thread's
    /// tag in it), so a waker can note who woke a worker
    /// (`scheduler/timeline.rs`).
    static TIMELINE_TAG: Cell<(usize, u32)> = const { Cell::new((0, 0)) };

    /// The cooperative budget of the task (or `block_on` future) being
    /// polled on this thread: operations left in this poll, or
    /// `coop::UNCONSTRAINED` outside one (`scheduler/coop.rs`).
    static BUDGET: Cell<u32> = const { Cell::new(u32::MAX) };

    /// This thread's `block_on` signal, while no `block_on` borrows it.
    /// (Under loom, model threads share one OS thread and so its
    /// thread-locals: there is no cache there.)
    #[cfg(not(loom))]
    static BLOCK_ON_SIGNAL: Cell<Option<Arc<Signal>>> = const { Cell::new(None) };
}

/// The worker running on this thread, if this is a worker thread.
#[inline]
pub(crate) fn worker<'a>() -> Option<&'a WorkerThread> {
    let p = WORKER.with(Cell::get);
    // SAFETY: non-null only while the worker's main loop runs on this thread
    // with the pointee alive on its stack (`enter_worker`'s contract); every
    // reference is used within that frame, on this thread (`WorkerThread`
    // is `!Sync`).
    unsafe { p.as_ref() }
}

/// Make `worker` this thread's worker.
///
/// # Safety
///
/// `worker` stays alive, in place, until `leave_worker` is called on this
/// thread.
pub(crate) unsafe fn enter_worker(worker: &WorkerThread) {
    WORKER.with(|w| w.set(worker));
}

/// This thread is a worker no more.
pub(crate) fn leave_worker() {
    WORKER.with(|w| w.set(ptr::null()));
}

fn entered<'a>() -> Option<&'a Arc<Registry>> {
    let p = ENTERED.with(Cell::get);
    // SAFETY: non-null only while `Entered::poll` polls its future on this
    // thread, and it points at the registry of the `Pool` that the enclosing
    // `block_on` borrows; see the module invariants.
    unsafe { p.as_ref() }
}

/// The entered pool, else this worker's pool.
fn running_pool<'a>() -> Option<&'a Arc<Registry>> {
    entered().or_else(|| worker().map(|w| w.registry()))
}

/// Run `f` with the current pool (see the module docs).
///
/// # Panics
///
/// If the current pool is the global pool and it cannot start.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&Arc<Registry>) -> R) -> R {
    if let Some(registry) = running_pool() {
        return f(registry);
    }
    if let Some(registry) = BLOCKING_POOL.with(|b| b.borrow().clone()) {
        return f(&registry);
    }
    f(global::global())
}

/// The current pool, or `None` where that would be the global pool and it
/// has not started yet.
pub(crate) fn try_current() -> Option<Arc<Registry>> {
    if let Some(registry) = running_pool() {
        return Some(Arc::clone(registry));
    }
    BLOCKING_POOL
        .with(|b| b.borrow().clone())
        .or_else(|| global::try_global().cloned())
}

/// Is worker `w`'s pool the current pool (no other pool entered by a
/// `block_on` on this thread)? Then fork-join runs on `w` directly.
#[inline]
pub(crate) fn current_is_worker_pool(w: &WorkerThread) -> bool {
    entered().is_none_or(|r| Arc::ptr_eq(r, w.registry()))
}

/// The current pool's I/O driver, for a new socket or timer.
pub(crate) fn io_driver() -> Arc<Driver> {
    with_current(|registry| Arc::clone(registry.io_driver()))
}

pin_project! {
    /// Makes a pool the current one while its `block_on` future is polled.
    pub(crate) struct Entered<'a, F> {
        registry: &'a Arc<Registry>,
        #[pin]
        future: F,
    }
}

impl<'a, F> Entered<'a, F> {
    /// `future`, polled with `registry`'s pool current.
    pub(crate) fn new(registry: &'a Arc<Registry>, future: F) -> Self {
        Entered { registry, future }
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

/// Makes `registry` the current pool of this thread until the guard drops
/// (`Handle::enter`): one heap slot owns the registry, so the pointer in
/// `ENTERED` stays valid for as long as any entry may restore it.
pub(crate) struct EnterGuard {
    this: *mut Arc<Registry>,
    previous: *const Arc<Registry>,
}

/// Make `registry` the current pool of this thread until the guard drops.
pub(crate) fn enter(registry: &Arc<Registry>) -> EnterGuard {
    let this = Box::into_raw(Box::new(Arc::clone(registry)));
    let previous = ENTERED.with(|e| e.replace(this));
    EnterGuard { this, previous }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let innermost = ENTERED.with(|e| e.get()) == self.this.cast_const();
        if innermost {
            ENTERED.with(|e| e.set(self.previous));
            // SAFETY: `this` came from `Box::into_raw` in `enter`, and no
            // pointer to it is left in `ENTERED`: it was the innermost entry,
            // which nothing restores again (the entries inside it are gone).
            drop(unsafe { Box::from_raw(self.this) });
        } else if !std::thread::panicking() {
            // An entry made after this one is still active and will restore
            // our slot when it goes: leave the slot (and its registry) alive.
            panic!(
                "pool::EnterGuard dropped out of order: drop the guards of \
                 Handle::enter in the reverse order of the enter calls (and do \
                 not hold one across an .await)"
            );
        }
    }
}

/// Makes a pool the current pool of this thread until dropped.
pub(crate) struct BlockingThreadGuard(());

/// Make `registry` the pool this thread serves (a blocking thread, or a
/// tokio thread of the pool's): its current pool, below the entered ones.
pub(crate) fn enter_blocking_thread(registry: &Arc<Registry>) -> BlockingThreadGuard {
    BLOCKING_POOL.with(|b| *b.borrow_mut() = Some(Arc::clone(registry)));
    BlockingThreadGuard(())
}

impl Drop for BlockingThreadGuard {
    fn drop(&mut self) {
        leave_thread_pool();
    }
}

/// This thread serves no pool any more (undoes `enter_blocking_thread`).
pub(crate) fn leave_thread_pool() {
    let registry = BLOCKING_POOL.with(|b| b.borrow_mut().take());
    drop(registry);
}

/// The id of the task being polled on this thread, if any.
///
/// `None` outside tasks: on a plain thread, in the future of a
/// [`block_on`](crate::block_on) (which is not a task), in a fork-join
/// job. Inside a [`spawn_blocking`](crate::spawn_blocking) closure it is
/// that blocking task's id.
///
/// # Examples
///
/// ```
/// assert_eq!(pool::task_id(), None);
/// let pool = pool::Pool::new().unwrap();
/// let h = pool.spawn(async { pool::task_id() });
/// let id = h.id();
/// assert_eq!(pool.block_on(h).unwrap(), Some(id));
/// ```
pub fn task_id() -> Option<TaskId> {
    match worker() {
        Some(worker) => worker.stats().running_task(),
        None => BLOCKING_TASK.with(Cell::get),
    }
}

/// Make `id` the current task of this (blocking) thread for the length of
/// `f`: one closure.
pub(crate) fn with_blocking_task<R>(id: TaskId, f: impl FnOnce() -> R) -> R {
    let outer = BLOCKING_TASK.with(|c| c.replace(Some(id)));
    let r = f();
    BLOCKING_TASK.with(|c| c.set(outer));
    r
}

/// For a spawn from a thread that is not a worker: the live-task registry
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

/// Borrow this thread's cached `block_on` signal (none under loom).
pub(crate) fn take_block_on_signal() -> Option<Arc<Signal>> {
    #[cfg(not(loom))]
    {
        BLOCK_ON_SIGNAL.with(Cell::take)
    }
    #[cfg(loom)]
    {
        None
    }
}

/// Give a `block_on` signal back to this thread's cache, unless a nested
/// call already returned its own (that one is kept).
pub(crate) fn return_block_on_signal(signal: Arc<Signal>) {
    #[cfg(not(loom))]
    BLOCK_ON_SIGNAL.with(|c| {
        let previous = c.replace(Some(signal));
        if previous.is_some() {
            c.set(previous);
        }
    });
    #[cfg(loom)]
    drop(signal);
}
