//! The cells that name the scheduler's types: the current worker, the
//! pool entered on this thread, the pool a blocking or tokio blocking
//! thread serves, `block_on`'s cached wake signal; `as_outsider`;
//! `task_id`.
//!
//! # The current pool
//!
//! Innermost first: the pool entered on this thread (`ENTERED`): by the
//! `Pool::block_on` polling its future here (set only around each poll of
//! that future, so tasks the thread runs meanwhile see their own pool), or
//! by a `Handle::enter` guard (until it drops); else the pool of the worker
//! thread; else the pool this thread serves (a blocking thread's, or, with
//! `tokio-compat`, one of tokio's blocking threads the pool runs); else the global
//! pool (`scheduler/global.rs`), started on first use.
//!
//! # Invariants
//!
//! * `WORKER` points at the `WorkerThread` on this thread's stack for
//!   exactly as long as that worker's main loop runs (`enter_worker`,
//!   `leave_worker`), except while it sleeps in its tokio runtime
//!   (`as_outsider`); it is null on every other thread.
//! * `ENTERED` points at the `Arc<Registry>` of a `Pool` that is borrowed by
//!   the `block_on` call in progress, at one owned by a live `PoolEntry`,
//!   or at the sleeping worker's own (`as_outsider`, for the length of the
//!   call), so it outlives every read. Entries nest: each restores
//!   the one it replaced. A guard dropped out of order (not the innermost)
//!   leaks its registry instead of freeing it, since an inner entry may
//!   still restore a pointer to it, and then panics.
//! * Thread-locals read on a hot path (the worker, on every wake and spawn)
//!   have a `const` initializer and no destructor: an access is one load of
//!   the thread pointer, no lazy-initialization check.

use crate::scheduler::registry::Registry;
use crate::scheduler::worker::worker_thread::WorkerThread;
use crate::sleep::block_on_wake::BlockOnWake;
use crate::task::id::TaskId;
use crate::tokio_compat::outside_polls::OutsidePolls;
use pin_project_lite::pin_project;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::ptr;
use std::sync::Arc;
use std::task::{Context, Poll};

thread_local! {
    /// The worker whose main loop runs on this thread.
    static WORKER: Cell<*const WorkerThread> = const { Cell::new(ptr::null()) };

    /// The pool entered by the `Pool::block_on` polling on this thread, or
    /// by the innermost `Handle::enter` guard.
    static ENTERED: Cell<*const Arc<Registry>> = const { Cell::new(ptr::null()) };

    /// The pool this thread serves: its blocking thread's, or the pool of
    /// a tokio blocking thread it runs (`tokio-compat`).
    static SERVED_POOL: RefCell<Option<Arc<Registry>>> = const { RefCell::new(None) };

    /// This thread's `block_on` signal, while no `block_on` borrows it.
    /// (Under loom, model threads share one OS thread and so its
    /// thread-locals: there is no cache there.)
    #[cfg(not(loom))]
    static BLOCK_ON_SIGNAL: Cell<Option<Arc<BlockOnWake<Registry>>>> = const { Cell::new(None) };
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

/// Make `worker` (a pointer to a live `WorkerThread`, or null) this
/// thread's worker and return the one before: a seeded pool's steps move
/// its one thread between its logical workers (`seeded/`).
///
/// # Safety
///
/// A non-null `worker` stays alive, in place, until it is switched away
/// from on this thread; the caller puts the returned pointer back before
/// the worker it names could be gone.
pub(crate) unsafe fn switch_worker(worker: *const WorkerThread) -> *const WorkerThread {
    WORKER.with(|w| w.replace(worker))
}

/// This thread is a worker no more.
pub(crate) fn leave_worker() {
    WORKER.with(|w| w.set(ptr::null()));
}

#[inline]
pub(super) fn entered<'a>() -> Option<&'a Arc<Registry>> {
    let p = ENTERED.with(Cell::get);
    // SAFETY: non-null only while `Entered::poll` polls its future on this
    // thread, and it points at the registry of the `Pool` that the enclosing
    // `block_on` borrows; see the module invariants.
    unsafe { p.as_ref() }
}

/// The pool this (blocking or tokio) thread serves, if any.
pub(super) fn served_pool() -> Option<Arc<Registry>> {
    SERVED_POOL.with(|b| b.borrow().clone())
}

/// Run `f` with this worker thread seen as an outsider of its pool: no
/// current worker, `registry` (the worker's own) entered. A worker asleep
/// in its tokio runtime (`tokio_compat/worker_runtime.rs`) runs tokio's tasks this way:
/// they are not the sleeping worker's work, so their spawns and wakes go
/// through the injector and the sleep protocol.
#[cfg(feature = "tokio-compat")]
pub(crate) fn as_outsider<R>(registry: &Arc<Registry>, f: impl FnOnce() -> R) -> R {
    /// Puts the worker back, also on a panic.
    struct Back(*const WorkerThread);
    impl Drop for Back {
        fn drop(&mut self) {
            WORKER.with(|w| w.set(self.0));
        }
    }
    let _restore = Restore(ENTERED.with(|e| e.replace(registry)));
    let _back = Back(WORKER.with(|w| w.replace(ptr::null())));
    f()
}

/// Is worker `w`'s pool the current pool (no other pool entered by a
/// `block_on` on this thread)? Then fork-join runs on `w` directly.
#[inline]
pub(crate) fn current_is_worker_pool(w: &WorkerThread) -> bool {
    entered().is_none_or(|r| Arc::ptr_eq(r, w.registry()))
}

pin_project! {
    /// Makes a pool the current one while its `block_on` future is polled,
    /// with one of its tokio runtimes (`tokio-compat`).
    pub(crate) struct Entered<'a, F> {
        registry: &'a Arc<Registry>,
        // How the future has used tokio (`tokio-compat`).
        polls: OutsidePolls,
        #[pin]
        future: F,
    }
}

impl<'a, F> Entered<'a, F> {
    /// `future`, polled with `registry`'s pool current.
    pub(crate) fn new(registry: &'a Arc<Registry>, future: F) -> Self {
        Entered {
            registry,
            polls: OutsidePolls::default(),
            future,
        }
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
        // One of the pool's tokio runtimes (`tokio-compat`), chosen anew on
        // every poll off its workers: the tokio tasks and sockets that a
        // long `block_on` (an accept loop in `main`) makes are spread over
        // the workers that drive them.
        let future = this.future;
        this.registry.poll_in_tokio(this.polls, || future.poll(cx))
    }
}

/// Makes `registry` the current pool of this thread until the guard drops
/// (`Handle::enter`): one heap slot owns the registry, so the pointer in
/// `ENTERED` stays valid for as long as any entry may restore it.
pub(crate) struct PoolEntry {
    this: *mut Arc<Registry>,
    previous: *const Arc<Registry>,
}

/// Make `registry` the current pool of this thread until the guard drops.
pub(crate) fn enter(registry: &Arc<Registry>) -> PoolEntry {
    let this = Box::into_raw(Box::new(Arc::clone(registry)));
    let previous = ENTERED.with(|e| e.replace(this));
    PoolEntry { this, previous }
}

impl Drop for PoolEntry {
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
                "pool::PoolEntry dropped out of order: drop the guards of \
                 Handle::enter in the reverse order of the enter calls (and do \
                 not hold one across an .await)"
            );
        }
    }
}

/// Makes a pool the current pool of this thread until dropped.
pub(crate) struct ServedPoolGuard(());

/// Make `registry` the pool this thread serves (a blocking thread, or a
/// tokio blocking thread of the pool's): its current pool, below the entered ones.
pub(crate) fn enter_blocking_thread(registry: &Arc<Registry>) -> ServedPoolGuard {
    SERVED_POOL.with(|b| *b.borrow_mut() = Some(Arc::clone(registry)));
    ServedPoolGuard(())
}

impl Drop for ServedPoolGuard {
    fn drop(&mut self) {
        leave_served_pool();
    }
}

/// This thread serves no pool any more (undoes `enter_blocking_thread`).
pub(crate) fn leave_served_pool() {
    let registry = SERVED_POOL.with(|b| b.borrow_mut().take());
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
        None => crate::context::plain_cells::blocking_task(),
    }
}

/// Borrow this thread's cached `block_on` signal (none under loom).
pub(crate) fn take_block_on_signal() -> Option<Arc<BlockOnWake<Registry>>> {
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
pub(crate) fn return_block_on_signal(signal: Arc<BlockOnWake<Registry>>) {
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
