//! `AbortHandle`: cancels a task without owning its output.
//!
//! # Invariants
//!
//! * An `AbortHandle` holds a waker of its task, taken from the table
//!   of live tasks while the task was live (`TaskHeader::live_waker`), or
//!   nothing if the task was already gone then. The waker keeps the task's
//!   allocation, and so its header, alive; it never keeps the future alive.
//! * Aborting sets the header's `ABORTED` flag, then wakes the task: its
//!   next poll drops the future, on a thread of its pool (for a
//!   `spawn_local` task, its own worker: the wake goes through its schedule
//!   function).

use super::header::TaskHeader;
use super::id::TaskId;
use std::fmt;
use std::task::Waker;

/// Cancels a task from anywhere, without a claim on its output: `Clone`,
/// `Send` and `Sync`. Given by [`JoinHandle::abort_handle`] and
/// [`JoinSet::spawn`](crate::JoinSet::spawn).
///
/// Aborting a task that already finished does nothing.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let handle = pool.spawn(std::future::pending::<()>());
/// let abort = handle.abort_handle();
/// assert_eq!(abort.id(), handle.id());
/// abort.abort();
/// assert!(pool.block_on(handle).unwrap_err().is_cancelled());
/// assert!(abort.is_finished());
/// ```
///
/// [`JoinHandle::abort_handle`]: crate::JoinHandle::abort_handle
#[derive(Clone)]
pub struct AbortHandle {
    /// A waker of the task, or `None` if it was gone when this was made.
    waker: Option<Waker>,
    id: TaskId,
}

impl AbortHandle {
    /// The handle of the task with `header`, whose id is `id`.
    pub(super) fn new(header: &TaskHeader, id: TaskId) -> AbortHandle {
        AbortHandle {
            waker: header.live_waker(),
            id,
        }
    }

    /// The handle of a task that is already gone.
    pub(super) fn finished(id: TaskId) -> AbortHandle {
        AbortHandle { waker: None, id }
    }

    fn header(&self) -> Option<&TaskHeader> {
        self.waker.as_ref().map(TaskHeader::of_live_waker)
    }

    /// Cancels the task: its future is dropped the next time it would be
    /// polled (a task that is running now finishes its current poll first),
    /// and its `JoinHandle` gives `Err(e)` with `e.is_cancelled()`, unless
    /// it had already completed.
    pub fn abort(&self) {
        if let (Some(waker), Some(header)) = (&self.waker, self.header()) {
            if header.is_done() {
                return;
            }
            header.abort();
            waker.wake_by_ref();
        }
    }

    /// True once the task's future is gone: it completed, panicked or was
    /// cancelled. (Its `JoinHandle` may see the output a moment later.)
    pub fn is_finished(&self) -> bool {
        self.header().is_none_or(TaskHeader::is_done)
    }

    /// The task's id.
    pub fn id(&self) -> TaskId {
        self.id
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}
