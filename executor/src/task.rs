//! Tasks: what wraps a spawned future, and the handle that awaits it.
//!
//! A task is one `async_task` allocation holding the [`TaskHeader`]
//! metadata (which owns an `Arc<Registry>`), a schedule function that
//! captures nothing (it finds the registry in the metadata), and the future
//! wrapped in a [`TaskFuture`]. The wrapper catches panics, honours
//! `JoinHandle::abort`, and takes the task out of the pool's registry of live
//! tasks when the future is dropped.
//!
//! # Invariants
//!
//! * The header lives as long as the task's allocation, so the `Arc` in it
//!   keeps the registry alive for every reader of the header. (A schedule
//!   function must not rely on it after handing the runnable on: see
//!   `registry::schedule_task`.)
//! * The header's slot is set once, before the task is first scheduled, so
//!   every later reader (the future's drop, `abort`) sees it.
//! * `JoinError` is one pointer wide: a task's output slot stays small.
//! * The future is dropped exactly once: by `TaskFuture::poll` as soon as it
//!   completes, panics or is aborted (so a panic in its destructor becomes
//!   the task's result), else by `TaskFuture`'s own drop (a runnable dropped
//!   unrun). The pool cancels a runnable by aborting and running it
//!   (`cancel`), which takes the first path.
//! * No user destructor unwinds into the pool or into `async_task` (which
//!   aborts the process on a panic in a destructor): the future, the output
//!   (`TaskOutput`) and a panic payload are each dropped under
//!   `catch_unwind`, and a panic there is caught and dropped in turn.
//! * A `JoinHandle` holds the task until it has returned its output; its
//!   header pointer is only read while it does.

use crate::owned::Slot;
use crate::registry::Registry;
use crate::trace::TaskId;
use async_task::FallibleTask;
use pin_project_lite::pin_project;
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::Location;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// The top bit of `TaskHeader::state`: the task was aborted.
const ABORTED: u64 = 1 << 63;
/// A `spawn_blocking` closure's task.
const BLOCKING: u64 = 1 << 62;
const FLAGS: u64 = ABORTED | BLOCKING;
/// The slot bits of a task that is not registered (yet, or ever).
const UNREGISTERED: u64 = !FLAGS;

/// `TaskHeader::activity`: bit 0 is `SCHEDULED`, bit 1 `DONE` (the future
/// was dropped: the task is not live, though its registry entry may wait
/// for a removal batch, `owned.rs`), bits 2..32 the polls (saturating),
/// bits 32..64 the spawn time (`trace::coarse_ticks`).
const SCHEDULED: u64 = 1;
const DONE: u64 = 1 << 1;
const POLL_SHIFT: u32 = 2;
const POLLS_MAX: u64 = (1 << 30) - 1;
const BORN_SHIFT: u32 = 32;

/// The per-task metadata, stored in the task's allocation: 40 bytes.
pub(crate) struct TaskHeader {
    pub(crate) registry: Arc<Registry>,
    /// Where the task's waker is registered (`Slot::pack`, whose top three
    /// bits are always clear), or `UNREGISTERED`; set once, before the first
    /// run. Its top bits are flags: `ABORTED` (set by `JoinHandle::abort`:
    /// the next poll ends the task) and `BLOCKING`. One word for all keeps
    /// every task 8 bytes smaller.
    state: AtomicU64,
    pub(crate) id: TaskId,
    pub(crate) spawned_at: &'static Location<'static>,
    /// Spawn time, poll count, whether the task is queued and whether its
    /// future was dropped (see the constants). Written only by the thread
    /// that schedules, polls or drops the task's future, which async-task
    /// serializes (a schedule happens before the run it leads to, a wake
    /// during a run schedules after it), so a relaxed load and store
    /// suffice, no read-modify-write; the dump reads it from anywhere.
    activity: AtomicU64,
}

impl TaskHeader {
    #[inline]
    pub(crate) fn new(
        registry: Arc<Registry>,
        id: TaskId,
        spawned_at: &'static Location<'static>,
        blocking: bool,
    ) -> TaskHeader {
        let born = registry.clock.now();
        TaskHeader {
            registry,
            state: AtomicU64::new(if blocking {
                UNREGISTERED | BLOCKING
            } else {
                UNREGISTERED
            }),
            id,
            spawned_at,
            activity: AtomicU64::new(u64::from(born) << BORN_SHIFT),
        }
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Record where the task is registered. `Release` pairs with the
    /// `Acquire` of `slot`; the task is not yet scheduled, so no other thread
    /// can read it before the runnable's hand-off anyway.
    pub(crate) fn set_slot(&self, slot: Slot) {
        let packed = slot.pack();
        debug_assert_eq!(packed & FLAGS, 0);
        // Keeps the flags (none but `BLOCKING` can be set yet: the handle
        // was not returned).
        let old = self.state.fetch_and(packed | FLAGS, Ordering::Release);
        debug_assert_eq!(old & !FLAGS, UNREGISTERED, "task registered twice");
    }

    fn slot(&self) -> Option<Slot> {
        match self.state.load(Ordering::Acquire) & !FLAGS {
            UNREGISTERED => None,
            word => Some(Slot::unpack(word)),
        }
    }

    fn is_aborted(&self) -> bool {
        self.state.load(Ordering::Acquire) & ABORTED != 0
    }

    pub(crate) fn abort(&self) {
        self.state.fetch_or(ABORTED, Ordering::Release);
    }

    /// True for a live task of the workers: not finished, not a blocking
    /// closure (the dump lists these).
    pub(crate) fn is_live_task(&self) -> bool {
        self.state.load(Ordering::Relaxed) & BLOCKING == 0
            && self.activity.load(Ordering::Relaxed) & DONE == 0
    }

    /// The future was dropped (see `DONE`).
    fn mark_done(&self) {
        let a = self.activity.load(Ordering::Relaxed);
        self.activity.store(a | DONE, Ordering::Relaxed);
    }

    /// The task was handed to a queue (its schedule function ran).
    #[inline]
    pub(crate) fn mark_scheduled(&self) {
        let a = self.activity.load(Ordering::Relaxed);
        self.activity.store(a | SCHEDULED, Ordering::Relaxed);
    }

    /// A poll begins: no longer queued, one poll more.
    #[inline]
    fn begin_poll(&self) {
        let a = self.activity.load(Ordering::Relaxed);
        let polls = if (a >> POLL_SHIFT) & POLLS_MAX == POLLS_MAX {
            0
        } else {
            1 << POLL_SHIFT
        };
        self.activity
            .store((a & !SCHEDULED) + polls, Ordering::Relaxed);
    }

    /// Queued (scheduled and not yet polled again), polls so far (they
    /// saturate at 2^30 - 1) and the spawn time (`trace::coarse_ticks`).
    pub(crate) fn activity(&self) -> (bool, u64, u32) {
        let a = self.activity.load(Ordering::Relaxed);
        (
            a & SCHEDULED != 0,
            (a >> POLL_SHIFT) & POLLS_MAX,
            (a >> BORN_SHIFT) as u32,
        )
    }
}

pin_project! {
    /// The future a task actually runs: the user's future, with panics
    /// caught (in its polls and in its destructor) and aborts honoured.
    pub(crate) struct TaskFuture<'a, F> {
        // Dropped by hand, under `catch_unwind` (see the module invariants).
        #[pin]
        future: ManuallyDrop<F>,
        future_dropped: bool,
        // Declared after the future, so it is dropped after it.
        registration: Registration<'a>,
    }

    impl<F> PinnedDrop for TaskFuture<'_, F> {
        fn drop(this: Pin<&mut Self>) {
            if let Some(payload) = this.drop_future() {
                discard(payload);
            }
        }
    }
}

impl<'a, F> TaskFuture<'a, F> {
    pub(crate) fn new(future: F, header: &'a TaskHeader) -> Self {
        TaskFuture {
            future: ManuallyDrop::new(future),
            future_dropped: false,
            registration: Registration { header },
        }
    }

    /// Drop the user's future (once), catching a panic of its destructor.
    fn drop_future(self: Pin<&mut Self>) -> Option<Box<dyn Any + Send>> {
        let this = self.project();
        if std::mem::replace(this.future_dropped, true) {
            return None;
        }
        // SAFETY: dropping a pinned value in place is what `Pin` allows; the
        // flag above makes it the only drop, and the future is never polled
        // again (`poll` checks the flag first).
        let future = unsafe { this.future.get_unchecked_mut() };
        // SAFETY: as above: `future` is dropped once and not used after.
        catch_unwind(AssertUnwindSafe(|| unsafe { ManuallyDrop::drop(future) })).err()
    }
}

impl<F: Future> Future for TaskFuture<'_, F> {
    type Output = Result<TaskOutput<F::Output>, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // `Acquire` is not needed for correctness (the flag carries no data)
        // but pairs with `abort`'s `Release` for a prompt, clear read.
        if self.future_dropped || self.registration.header.is_aborted() {
            return Poll::Ready(Err(match self.drop_future() {
                Some(payload) => JoinError::panic(payload),
                None => JoinError::cancelled(),
            }));
        }
        self.registration.header.begin_poll();
        let future = self.as_mut().project().future;
        // SAFETY: structural pinning through `ManuallyDrop`: the future is
        // never moved out, and dropped in place (`drop_future`).
        let future = unsafe { future.map_unchecked_mut(|f| &mut **f) };
        let output = match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(value)) => Ok(value),
            Err(payload) => Err(payload),
        };
        // Done: drop the future now, so that a panic in its destructor is
        // this task's result (the first panic wins).
        let drop_panic = self.drop_future();
        Poll::Ready(match (output, drop_panic) {
            (Ok(value), None) => Ok(TaskOutput::new(value)),
            (Ok(value), Some(payload)) => {
                drop(TaskOutput::new(value));
                Err(JoinError::panic(payload))
            }
            (Err(payload), later) => {
                if let Some(payload) = later {
                    discard(payload);
                }
                Err(JoinError::panic(payload))
            }
        })
    }
}

/// A task's output, as async-task stores it: dropping it (a detached task's
/// output, or a handle dropped unread) never unwinds.
pub(crate) struct TaskOutput<T>(ManuallyDrop<T>);

impl<T> TaskOutput<T> {
    fn new(value: T) -> Self {
        TaskOutput(ManuallyDrop::new(value))
    }

    fn into_inner(self) -> T {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so the value is taken once.
        unsafe { ManuallyDrop::take(&mut this.0) }
    }
}

impl<T> Drop for TaskOutput<T> {
    fn drop(&mut self) {
        // SAFETY: dropped once, here; `into_inner` skips this drop.
        let value = unsafe { ManuallyDrop::take(&mut self.0) };
        if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
            discard(payload);
        }
    }
}

/// Drop a panic payload whose panic nobody will see, catching a panic of
/// its own destructor (and forgetting that one's payload: it cannot be
/// dropped safely either).
pub(crate) fn discard(payload: Box<dyn Any + Send>) {
    if let Err(inner) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(inner);
    }
}

/// How far a task's header lies from its waker's data pointer: the same for
/// every task (the header sits at a fixed place in async-task's allocation),
/// learned from the first spawn, checked at every spawn (`note_waker`).
/// `isize::MIN` until then.
static HEADER_FROM_WAKER: AtomicIsize = AtomicIsize::new(isize::MIN);

/// Check, before a task's waker is registered, that its header can be found
/// from the waker (`header_of`): this lets the registry keep one waker per
/// task, not a waker and a header pointer.
///
/// # Panics
///
/// If async-task ever gave wakers whose data pointer is not at a fixed
/// distance from the header: a dependency upgrade that every spawn reports.
#[inline]
pub(crate) fn note_waker(waker: &Waker, header: &TaskHeader) {
    let distance = (header as *const TaskHeader as isize).wrapping_sub(waker.data() as isize);
    // Relaxed: every thread computes the same value; the first store wins a
    // race with an equal one.
    let known = HEADER_FROM_WAKER.load(Ordering::Relaxed);
    if known != distance {
        assert_eq!(
            known,
            isize::MIN,
            "pool: async-task's waker no longer points at a fixed place in its task \
             (the live-task dump relies on it)"
        );
        HEADER_FROM_WAKER.store(distance, Ordering::Relaxed);
    }
}

/// The header of the task `waker` wakes.
///
/// # Safety
///
/// `waker` was checked by `note_waker` with its task's header, and is alive
/// as long as the returned reference (it holds a reference to the task, so
/// the header lives).
pub(crate) unsafe fn header_of(waker: &Waker) -> &TaskHeader {
    let distance = HEADER_FROM_WAKER.load(Ordering::Relaxed);
    // SAFETY: by the caller's contract `note_waker` saw this very waker with
    // its header at this distance (and stored it, or found it stored), and
    // the task's allocation does not move; the waker keeps it alive.
    unsafe {
        &*(waker.data() as *const u8)
            .wrapping_offset(distance)
            .cast::<TaskHeader>()
    }
}

/// Cancel a runnable the pool will never run normally (shutdown, a spawn
/// refused): mark its task aborted and run it, so that its future is
/// dropped under `catch_unwind` by `TaskFuture::poll` and its handle learns
/// the outcome (`cancelled`, or `panic` if the future's destructor panicked).
pub(crate) fn cancel(runnable: Runnable) {
    runnable.metadata().abort();
    runnable.run();
}

/// Takes the task out of the registry of live tasks when the future drops.
struct Registration<'a> {
    header: &'a TaskHeader,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        // The dump skips it from now on (the removal below may be batched).
        self.header.mark_done();
        if let Some(slot) = self.header.slot() {
            self.header.registry().remove_task(slot);
        }
    }
}

/// The task type of this crate: runnable handles carry a [`TaskHeader`].
pub(crate) type Runnable = async_task::Runnable<TaskHeader>;

/// An owned permission to await a spawned task's output.
///
/// `JoinHandle<T>` is a future: awaiting it gives `Ok(output)` once the task
/// completed, or `Err(JoinError)` when the task panicked or was cancelled
/// (by [`abort`](JoinHandle::abort), or because its pool shut down first).
///
/// Dropping a `JoinHandle` detaches the task: it keeps running, and its output
/// is dropped when it completes.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let handle = pool.spawn(async { 6 * 7 });
/// assert_eq!(pool.block_on(handle).unwrap(), 42);
/// ```
pub struct JoinHandle<T> {
    /// `None` once the output was returned.
    task: Option<FallibleTask<Result<TaskOutput<T>, JoinError>, TaskHeader>>,
    header: NonNull<TaskHeader>,
    /// Kept here too: the id outlives the task's allocation.
    id: TaskId,
}

// SAFETY: the `FallibleTask` is `Send` when `T: Send` (its header is
// `Send + Sync`), and the header pointer is only read, as `&TaskHeader`
// (`Sync`), while `task` keeps the allocation alive.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only allows `abort` and `is_finished`, which read the
// header's atomics and the task's atomic state.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> Unpin for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    pub(crate) fn new(
        task: async_task::Task<Result<TaskOutput<T>, JoinError>, TaskHeader>,
    ) -> Self {
        let header = NonNull::from(task.metadata());
        JoinHandle {
            id: task.metadata().id,
            task: Some(task.fallible()),
            header,
        }
    }

    /// The task's id, also after it finished. Inside the task,
    /// [`pool::task_id()`](crate::task_id) gives the same id.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let a = pool.spawn(async {});
    /// let b = pool.spawn(async {});
    /// assert_ne!(a.id(), b.id());
    /// ```
    pub fn id(&self) -> TaskId {
        self.id
    }

    fn header(&self) -> Option<&TaskHeader> {
        self.task.as_ref().map(|_| {
            // SAFETY: `task` is `Some`, so it holds a reference to the task's
            // allocation, in which the header lives.
            unsafe { self.header.as_ref() }
        })
    }

    /// Cancels the task. Awaiting the handle then gives `Err(e)` with
    /// `e.is_cancelled()`, unless the task had already completed (then the
    /// output is kept and returned). The future is dropped the next time it
    /// would be polled, on a worker of its pool; a task that is running right
    /// now finishes its current poll first.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let handle = pool.spawn(std::future::pending::<()>());
    /// handle.abort();
    /// assert!(pool.block_on(handle).unwrap_err().is_cancelled());
    /// ```
    pub fn abort(&self) {
        if let Some(header) = self.header() {
            if self.task.as_ref().is_some_and(|t| t.is_finished()) {
                return;
            }
            header.abort();
            if let Some(slot) = header.slot() {
                header.registry().tasks.wake(slot);
            }
        }
    }

    /// True once the task has completed, panicked or been cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let handle = pool.spawn(async {});
    /// while !handle.is_finished() {
    ///     std::thread::yield_now();
    /// }
    /// ```
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(|t| t.is_finished())
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let task = self
            .task
            .as_mut()
            .expect("JoinHandle polled after it returned its output");
        let out = match Pin::new(task).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Some(result)) => result.map(TaskOutput::into_inner),
            // The runnable was dropped without completing: the pool shut down.
            Poll::Ready(None) => Err(JoinError::cancelled()),
        };
        self.task = None;
        Poll::Ready(out)
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.detach();
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Why a task gave no output: it panicked, or it was cancelled.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let err = pool.block_on(pool.spawn(async { panic!("boom") })).unwrap_err();
/// assert!(err.is_panic());
/// assert_eq!(err.to_string(), "task panicked: boom");
/// ```
pub struct JoinError {
    /// Boxed, cancellation too: a non-null pointer, so that a task's output
    /// slot (`Result<T, JoinError>`) is no wider than `T` when `T` is small
    /// (8 bytes for `()`, where a null "cancelled" would take 16).
    repr: Box<Repr>,
}

enum Repr {
    Cancelled,
    Panic(Panic),
}

struct Panic {
    /// The payload, behind a lock only so that `JoinError` is `Sync`
    /// (payloads are only `Send`); it is taken by `into_panic`.
    payload: Mutex<Option<Box<dyn Any + Send + 'static>>>,
    /// The panic message, when the payload is a string.
    message: Option<String>,
}

impl JoinError {
    pub(crate) fn cancelled() -> JoinError {
        JoinError {
            repr: Box::new(Repr::Cancelled),
        }
    }

    pub(crate) fn panic(payload: Box<dyn Any + Send + 'static>) -> JoinError {
        let message = payload
            .downcast_ref::<&'static str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned());
        JoinError {
            repr: Box::new(Repr::Panic(Panic {
                payload: Mutex::new(Some(payload)),
                message,
            })),
        }
    }

    /// True if the task was cancelled: aborted, or dropped by its pool's
    /// shutdown before it completed.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let h = pool.spawn(std::future::pending::<()>());
    /// drop(pool); // shutdown drops the pending task
    /// assert!(pool::block_on(h).unwrap_err().is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(*self.repr, Repr::Cancelled)
    }

    /// True if the task panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let err = pool.block_on(pool.spawn(async { panic!("oops") })).unwrap_err();
    /// assert!(err.is_panic() && !err.is_cancelled());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(*self.repr, Repr::Panic(_))
    }

    /// The panic payload, to resume the panic elsewhere
    /// (`std::panic::resume_unwind`).
    ///
    /// # Panics
    ///
    /// If the task was cancelled rather than panicked: check
    /// [`is_panic`](JoinError::is_panic) first.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let err = pool.block_on(pool.spawn(async { std::panic::panic_any(7u8) })).unwrap_err();
    /// assert_eq!(*err.into_panic().downcast::<u8>().unwrap(), 7);
    /// ```
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match &*self.repr {
            Repr::Panic(panic) => panic
                .payload
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take()
                .expect("the payload is taken only here, once"),
            Repr::Cancelled => {
                panic!("JoinError::into_panic called on a cancelled task; check is_panic() first")
            }
        }
    }
}

impl Drop for Panic {
    /// A payload may itself panic when dropped: never let that unwind.
    fn drop(&mut self) {
        let payload = self
            .payload
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(payload) = payload {
            discard(payload);
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.repr {
            Repr::Cancelled => f.write_str("task was cancelled"),
            Repr::Panic(panic) => match &panic.message {
                Some(m) => write!(f, "task panicked: {m}"),
                None => f.write_str("task panicked"),
            },
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.repr {
            Repr::Cancelled => f.write_str("JoinError::Cancelled"),
            Repr::Panic(panic) => f
                .debug_tuple("JoinError::Panic")
                .field(&panic.message.as_deref().unwrap_or("<non-string payload>"))
                .finish(),
        }
    }
}

impl std::error::Error for JoinError {}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn join_error_is_one_pointer_wide() {
        assert_eq!(
            std::mem::size_of::<super::JoinError>(),
            std::mem::size_of::<usize>()
        );
        assert_eq!(std::mem::size_of::<super::TaskHeader>(), 40);
        // The niche of the boxed error: a unit output costs one word.
        assert_eq!(
            std::mem::size_of::<Result<super::TaskOutput<()>, super::JoinError>>(),
            std::mem::size_of::<usize>()
        );
    }
}
