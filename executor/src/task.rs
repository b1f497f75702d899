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
//! * The future is dropped exactly once, by `async_task`: when it completes,
//!   when its `Runnable` is dropped (shutdown), or when it is cancelled.
//! * A `JoinHandle` holds the task until it has returned its output; its
//!   header pointer is only read while it does.

use crate::owned::Slot;
use crate::registry::Registry;
use async_task::FallibleTask;
use pin_project_lite::pin_project;
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// The top bit of `TaskHeader::state`: the task was aborted.
const ABORTED: u64 = 1 << 63;
/// The slot bits of a task that is not registered (yet, or ever).
const UNREGISTERED: u64 = !ABORTED;

/// The per-task metadata, stored in the task's allocation.
pub(crate) struct TaskHeader {
    pub(crate) registry: Arc<Registry>,
    /// Where the task's waker is registered (`Slot::pack`, whose top bit is
    /// always clear), or `UNREGISTERED`; set once, before the first run. Its top
    /// bit, `ABORTED`, is set by `JoinHandle::abort`: the next poll ends the
    /// task. One word for both keeps every task 8 bytes smaller.
    state: AtomicU64,
}

impl TaskHeader {
    pub(crate) fn new(registry: Arc<Registry>) -> TaskHeader {
        TaskHeader {
            registry,
            state: AtomicU64::new(UNREGISTERED),
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
        debug_assert_eq!(packed & ABORTED, 0);
        // Keeps an `ABORTED` bit set meanwhile (none can be: the handle was
        // not returned yet).
        let old = self.state.fetch_and(packed | ABORTED, Ordering::Release);
        debug_assert_eq!(old & !ABORTED, UNREGISTERED, "task registered twice");
    }

    fn slot(&self) -> Option<Slot> {
        match self.state.load(Ordering::Acquire) & !ABORTED {
            UNREGISTERED => None,
            word => Some(Slot::unpack(word)),
        }
    }

    fn is_aborted(&self) -> bool {
        self.state.load(Ordering::Acquire) & ABORTED != 0
    }

    fn abort(&self) {
        self.state.fetch_or(ABORTED, Ordering::Release);
    }
}

pin_project! {
    /// The future a task actually runs: the user's future, with panics
    /// caught and aborts honoured.
    pub(crate) struct TaskFuture<'a, F> {
        #[pin]
        future: F,
        // Declared after the future, so it is dropped after it.
        registration: Registration<'a>,
    }
}

impl<'a, F> TaskFuture<'a, F> {
    pub(crate) fn new(future: F, header: &'a TaskHeader) -> Self {
        TaskFuture {
            future,
            registration: Registration { header },
        }
    }
}

impl<F: Future> Future for TaskFuture<'_, F> {
    type Output = Result<F::Output, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // `Acquire` is not needed for correctness (the flag carries no data)
        // but pairs with `abort`'s `Release` for a prompt, clear read.
        if this.registration.header.is_aborted() {
            return Poll::Ready(Err(JoinError::cancelled()));
        }
        match catch_unwind(AssertUnwindSafe(|| this.future.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Err(payload) => Poll::Ready(Err(JoinError::panic(payload))),
        }
    }
}

/// Takes the task out of the registry of live tasks when the future drops.
struct Registration<'a> {
    header: &'a TaskHeader,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
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
    task: Option<FallibleTask<Result<T, JoinError>, TaskHeader>>,
    header: NonNull<TaskHeader>,
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
    pub(crate) fn new(task: async_task::Task<Result<T, JoinError>, TaskHeader>) -> Self {
        let header = NonNull::from(task.metadata());
        JoinHandle {
            task: Some(task.fallible()),
            header,
        }
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
            Poll::Ready(Some(result)) => result,
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
    repr: Repr,
}

/// One pointer wide, so that a task's output slot (`Result<T, JoinError>`)
/// costs little more than `T`.
enum Repr {
    Cancelled,
    Panic(Box<Panic>),
}

struct Panic {
    /// The payload, behind a lock only so that `JoinError` is `Sync`
    /// (payloads are only `Send`); it is taken by `into_panic`.
    payload: Mutex<Box<dyn Any + Send + 'static>>,
    /// The panic message, when the payload is a string.
    message: Option<String>,
}

impl JoinError {
    pub(crate) fn cancelled() -> JoinError {
        JoinError {
            repr: Repr::Cancelled,
        }
    }

    pub(crate) fn panic(payload: Box<dyn Any + Send + 'static>) -> JoinError {
        let message = payload
            .downcast_ref::<&'static str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned());
        JoinError {
            repr: Repr::Panic(Box::new(Panic {
                payload: Mutex::new(payload),
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
        matches!(self.repr, Repr::Cancelled)
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
        matches!(self.repr, Repr::Panic(_))
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
        match self.repr {
            Repr::Panic(panic) => panic
                .payload
                .into_inner()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            Repr::Cancelled => {
                panic!("JoinError::into_panic called on a cancelled task; check is_panic() first")
            }
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
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
        match &self.repr {
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
        assert_eq!(std::mem::size_of::<super::TaskHeader>(), 16);
    }
}
