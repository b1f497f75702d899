//! Tasks: what wraps a spawned future, and the handle that awaits it.
//!
//! A task is one `async_task` allocation holding the schedule function (which
//! owns an `Arc<Registry>`), the [`TaskHeader`] metadata, and the future
//! wrapped in a [`TaskFuture`]. The wrapper catches panics, honours
//! `JoinHandle::abort`, and takes the task out of the pool's registry of live
//! tasks when the future is dropped.
//!
//! # Invariants
//!
//! * The header's registry pointer is valid for as long as anything can read
//!   the header: the schedule function stored in the same allocation owns an
//!   `Arc` of that registry, and `async_task` drops the schedule function only
//!   when it frees the allocation, after the future (and its `Registration`)
//!   is gone and after the last `Task`/`Runnable`/`Waker` reference.
//! * The header's slot is set once, before the task is first scheduled, so
//!   every later reader (the future's drop, `abort`) sees it.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll};

/// The per-task metadata, stored in the task's allocation.
pub(crate) struct TaskHeader {
    registry: NonNull<Registry>,
    /// Where the task's waker is registered; set once before the first run.
    slot: OnceLock<Slot>,
    /// Set by `JoinHandle::abort`; the next poll ends the task.
    aborted: AtomicBool,
}

// SAFETY: the header is shared between the threads that run, wake and await
// the task. Its fields are atomics, a `OnceLock` and a pointer that is only
// ever turned into `&Registry`; `Registry` is `Sync`, so sharing that
// reference across threads is sound.
unsafe impl Send for TaskHeader {}
// SAFETY: as above.
unsafe impl Sync for TaskHeader {}

impl TaskHeader {
    /// A header for a task whose schedule function owns an `Arc` of `registry`.
    pub(crate) fn new(registry: &Registry) -> TaskHeader {
        TaskHeader {
            registry: NonNull::from(registry),
            slot: OnceLock::new(),
            aborted: AtomicBool::new(false),
        }
    }

    pub(crate) fn registry(&self) -> &Registry {
        // SAFETY: the module invariant: the schedule function in the same
        // allocation owns an `Arc<Registry>` and outlives every reader of
        // this header.
        unsafe { self.registry.as_ref() }
    }

    pub(crate) fn set_slot(&self, slot: Slot) {
        let set = self.slot.set(slot);
        debug_assert!(set.is_ok(), "task registered twice");
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
        if this.registration.header.aborted.load(Ordering::Acquire) {
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
        if let Some(&slot) = self.header.slot.get() {
            self.header.registry().tasks.remove(slot);
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
            header.aborted.store(true, Ordering::Release);
            if let Some(&slot) = header.slot.get() {
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

enum Repr {
    Cancelled,
    Panic {
        /// The payload, behind a lock only so that `JoinError` is `Sync`
        /// (payloads are only `Send`); it is taken by `into_panic`.
        payload: Mutex<Box<dyn Any + Send + 'static>>,
        /// The panic message, when the payload is a string.
        message: Option<String>,
    },
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
            repr: Repr::Panic {
                payload: Mutex::new(payload),
                message,
            },
        }
    }

    /// True if the task was cancelled: aborted, or dropped by its pool's
    /// shutdown before it completed.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// True if the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic { .. })
    }

    /// The panic payload, to resume the panic elsewhere
    /// (`std::panic::resume_unwind`).
    ///
    /// # Panics
    ///
    /// If the task was cancelled rather than panicked: check
    /// [`is_panic`](JoinError::is_panic) first.
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self.repr {
            Repr::Panic { payload, .. } => payload
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
            Repr::Panic {
                message: Some(m), ..
            } => write!(f, "task panicked: {m}"),
            Repr::Panic { message: None, .. } => f.write_str("task panicked"),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => f.write_str("JoinError::Cancelled"),
            Repr::Panic { message, .. } => f
                .debug_tuple("JoinError::Panic")
                .field(&message.as_deref().unwrap_or("<non-string payload>"))
                .finish(),
        }
    }
}

impl std::error::Error for JoinError {}
