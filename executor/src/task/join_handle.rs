//! `JoinHandle`: an owned permission to await a task's output.
//!
//! # Invariants
//!
//! * A `JoinHandle` holds the task until it has returned its output; its
//!   header pointer is only read while it does, and the header's `Arc` keeps
//!   the owning pool alive for `abort`'s wake.
//! * It keeps the task's id itself: the id outlives the task's allocation.

use super::abort_handle::AbortHandle;
use super::error::JoinError;
use super::future::TaskOutput;
use super::header::TaskHeader;
use super::id::TaskId;
use super::noting::note_wait;
use super::schedule::{Registry, Schedule};
use super::waits::{Wait, WaitKind};
use async_task::FallibleTask;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

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
            id: task.metadata().id(),
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
                header.owner().live_tasks().wake(slot);
            }
        }
    }

    /// A handle that can cancel the task from anywhere, without a claim on
    /// its output (see [`AbortHandle`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let handle = pool.spawn(std::future::pending::<()>());
    /// let abort = handle.abort_handle();
    /// std::thread::spawn(move || abort.abort()).join().unwrap();
    /// assert!(pool.block_on(handle).unwrap_err().is_cancelled());
    /// ```
    pub fn abort_handle(&self) -> AbortHandle {
        match self.header() {
            Some(header) => AbortHandle::new(header, self.id),
            None => AbortHandle::finished(self.id),
        }
    }

    /// Poll for the output without spending the cooperative budget (a
    /// `JoinSet` spends it once for the set).
    pub(crate) fn poll_output(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
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
        // A task's output spends the cooperative budget of the task awaiting
        // it (`scheduler/coop.rs`).
        if Registry::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let Poll::Ready(out) = self.poll_output(cx) else {
            // SAFETY: `task` is still held (the output was not returned),
            // which keeps the header alive (module invariants).
            let site = unsafe { self.header.as_ref() }.spawn_site();
            note_wait(Wait::new(WaitKind::Join, site, self.id.as_u64()));
            return Poll::Pending;
        };
        Registry::made_progress();
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
