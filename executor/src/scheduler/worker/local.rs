//! A worker's `spawn_local` tasks: the ones ready on its own thread (its
//! local queue), the ones woken on other threads (its inbox, which the sleep
//! protocol watches: `sleep/inbox.rs`), and the count of those whose
//! futures are not dropped yet, which keeps the worker from leaving before
//! they are.
//!
//! # Invariants
//!
//! * Only the worker's own thread touches `LocalTasks` (it lives in the
//!   `WorkerThread`, which is `!Sync`): no atomic, no lock but the inbox's.
//! * A local task is run or dropped only on this thread: when the worker
//!   leaves it cancels every live one here (`cancel_all`) before it closes
//!   the inbox.

use crate::sleep::inbox::Inbox;
use crate::task::future::cancel;
use crate::task::header::Runnable;
use crate::task::owned::OwnedTasks;
use crossbeam_deque::Worker;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::task::Waker;

/// The `spawn_local` tasks of one worker.
#[derive(Default)]
pub(super) struct LocalTasks {
    /// Ready, oldest first: no other thread sees them (those woken
    /// elsewhere wait in the inbox).
    queue: RefCell<VecDeque<Runnable>>,
    /// Whose turn it is in a search, the local queue's or the deque's
    /// (`pop_own`).
    turn: Cell<bool>,
    /// Registered tasks whose futures are not dropped yet.
    live: Cell<usize>,
}

impl LocalTasks {
    /// A ready local task, on the worker's own thread: to the back of the
    /// queue.
    #[inline]
    pub(super) fn push(&self, runnable: Runnable) {
        self.queue.borrow_mut().push_back(runnable);
    }

    /// The next local task, in the order they were woken: the ones woken
    /// on other threads (`inbox`, one load when it is empty) go behind the
    /// queue first. (Taken only once the queue was empty, they waited for
    /// ever behind a local task that yields in a loop.)
    fn pop(&self, inbox: &Inbox<Runnable>) -> Option<Runnable> {
        let mut queue = self.queue.borrow_mut();
        inbox.take_into(&mut *queue);
        queue.pop_front()
    }

    /// Has the worker local tasks whose futures are not dropped yet? A
    /// queued local task is a live one, so a worker with none (most have
    /// none) pops its deque alone (`WorkerThread::pop_own`).
    #[inline]
    pub(super) fn any_live(&self) -> bool {
        self.live.get() != 0
    }

    /// Is a local task queued here (not counting the inbox)?
    pub(super) fn has_queued(&self) -> bool {
        !self.queue.borrow().is_empty()
    }

    /// A task of the worker's own, when it has live local tasks
    /// (`any_live`): local tasks and the deque take turns, so neither
    /// starves the other (the deque's may also be stolen; the local ones
    /// only run here).
    pub(super) fn pop_own(
        &self,
        deque: &Worker<Runnable>,
        inbox: &Inbox<Runnable>,
    ) -> Option<Runnable> {
        let local_first = !self.turn.get();
        self.turn.set(local_first);
        if local_first {
            self.pop(inbox).or_else(|| deque.pop())
        } else {
            deque.pop().or_else(|| self.pop(inbox))
        }
    }

    /// A local task was registered.
    pub(super) fn started(&self) {
        self.live.set(self.live.get() + 1);
    }

    /// A local task dropped its future.
    pub(super) fn ended(&self) {
        self.live.set(self.live.get() - 1);
    }

    /// On the way out of worker `index`: cancel every live local task, on
    /// this thread, then close `inbox`. Each is aborted and woken through
    /// the table of live tasks (`tasks`), which queues it here; one woken
    /// by another thread may still be in flight (scheduled, not yet in the
    /// inbox), and once shutdown has drained the registry (a worker that
    /// outlived shutdown's wait) the shutdown thread wakes them itself. So
    /// the loop runs until the count of live local tasks is zero: every one
    /// of them reaches this thread and is dropped here, and after that no
    /// wake can schedule one again.
    pub(super) fn cancel_all(&self, tasks: &OwnedTasks, index: usize, inbox: &Inbox<Runnable>) {
        loop {
            let live = tasks.abort_local_tasks_in(index);
            // Each wake queues the task here (or finds it queued already).
            live.into_iter().for_each(Waker::wake);
            while let Some(runnable) = self.pop(inbox) {
                cancel(runnable);
            }
            if self.live.get() == 0 {
                break;
            }
            std::thread::yield_now();
        }
        for runnable in inbox.close() {
            cancel(runnable);
        }
    }
}
