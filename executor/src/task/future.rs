//! `TaskFuture`: what a task actually runs, the user's future with panics
//! caught and aborts honoured; `TaskOutput`, what the task stores; and
//! `cancel`, how the pool ends a task it will never run normally.
//!
//! # Invariants
//!
//! * The future is dropped exactly once: by `TaskFuture::poll` as soon as it
//!   completes, panics or is aborted (so a panic in its destructor becomes
//!   the task's result), else by `TaskFuture`'s own drop (a runnable dropped
//!   unrun). The pool cancels a runnable by aborting and running it
//!   (`cancel`), which takes the first path.
//! * No user destructor unwinds into the pool or into `async_task` (which
//!   aborts the process on a panic in a destructor): the future, the output
//!   (`TaskOutput`) and a panic payload are each dropped under
//!   `catch_unwind`, and a panic there is caught and dropped in turn.
//! * When the future is dropped the task leaves its pool's table of live
//!   tasks (`Registration`, through `Schedule::release`), its name, if it
//!   has one, with its entry (`names.rs`).
//! * A task is never polled once that table is closed (shutdown took its
//!   wakers): its poll cancels it instead (`OwnedTasks::is_closed`).

use super::error::JoinError;
use super::header::Runnable;
use super::header::TaskHeader;
use super::schedule::Schedule;
use crate::unwind::discard;
use pin_project_lite::pin_project;
use std::any::Any;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project! {
    /// The future a task actually runs: the user's future, with panics
    /// caught (in its polls and in its destructor) and aborts honoured.
    pub(crate) struct TaskFuture<'a, F> {
        // Dropped by hand, under `catch_unwind` (see the module invariants).
        // Whether it was dropped is the header's `DONE` bit (`is_done`),
        // set just before the drop: no flag of its own, 8 bytes less.
        #[pin]
        future: ManuallyDrop<F>,
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
            registration: Registration { header },
        }
    }

    /// Drop the user's future (once), catching a panic of its destructor.
    fn drop_future(self: Pin<&mut Self>) -> Option<Box<dyn Any + Send>> {
        let this = self.project();
        let header = this.registration.header;
        if header.is_done() {
            return None;
        }
        // The dump skips the task from now on (its table entry goes when
        // `registration` drops, maybe in a batch: `owned.rs`).
        header.mark_done();
        // SAFETY: dropping a pinned value in place is what `Pin` allows; the
        // `DONE` bit above makes it the only drop, and the future is never
        // polled again (`poll` checks the bit first). Only the thread that
        // runs or drops the task's future reads and writes the bit, and
        // async-task serializes those.
        let future = unsafe { this.future.get_unchecked_mut() };
        // SAFETY: as above: `future` is dropped once and not used after.
        catch_unwind(AssertUnwindSafe(|| unsafe { ManuallyDrop::drop(future) })).err()
    }
}

impl<F: Future> Future for TaskFuture<'_, F> {
    type Output = Result<TaskOutput<F::Output>, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let header = self.registration.header;
        // A task polled after shutdown closed the table of live tasks
        // ends as cancelled: nothing would wake it again (`is_closed`).
        // So does one whose future is gone or that was aborted
        // (`begin_poll` says no, and counts no poll).
        if header.owner().live_tasks().is_closed() || !header.begin_poll() {
            return Poll::Ready(Err(match self.drop_future() {
                Some(payload) => panicked(header, payload),
                None if header.is_rejected() => JoinError::rejected(),
                None => JoinError::cancelled(),
            }));
        }
        let future = self.as_mut().project().future;
        // SAFETY: structural pinning through `ManuallyDrop`: the future is
        // never moved out, and dropped in place (`drop_future`).
        let future = unsafe { future.map_unchecked_mut(|f| &mut **f) };
        let owner = header.owner();
        let output = match owner.poll_future(header, cx, |cx| {
            catch_unwind(AssertUnwindSafe(|| future.poll(cx)))
        }) {
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
                Err(panicked(header, payload))
            }
            (Err(payload), later) => {
                if let Some(payload) = later {
                    discard(payload);
                }
                Err(panicked(header, payload))
            }
        })
    }
}

/// The error of `header`'s task, which panicked with `payload`: it names
/// the task if it has a name (read before its future's `Registration`
/// drops, which frees its entry and its name).
fn panicked(header: &TaskHeader, payload: Box<dyn Any + Send>) -> JoinError {
    JoinError::panic_of(payload, header.name())
}

/// A task's output, as async-task stores it: dropping it (a detached task's
/// output, or a handle dropped unread) never unwinds.
pub(crate) struct TaskOutput<T>(ManuallyDrop<T>);

impl<T> TaskOutput<T> {
    fn new(value: T) -> Self {
        TaskOutput(ManuallyDrop::new(value))
    }

    pub(super) fn into_inner(self) -> T {
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

/// Cancel a runnable the pool will never run normally (shutdown, a spawn
/// refused): mark its task aborted and run it, so that its future is
/// dropped under `catch_unwind` by `TaskFuture::poll` and its handle learns
/// the outcome (`cancelled`, or `panic` if the future's destructor panicked).
pub(crate) fn cancel(runnable: Runnable) {
    runnable.metadata().abort();
    runnable.run();
}

/// Refuse a runnable a full queue will not take (`max_blocking_queue`):
/// cancel it as `cancel` does, its handle learning `rejected` instead.
pub(crate) fn reject(runnable: Runnable) {
    runnable.metadata().mark_rejected();
    cancel(runnable);
}

/// Takes the task out of the table of live tasks when the future drops.
struct Registration<'a> {
    header: &'a TaskHeader,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let header = self.header;
        header.owner().release(
            header,
            header.slot(),
            header.is_local(),
            header.is_blocking(),
        );
    }
}
