//! `note_wait`, what a pool future calls when it returns `Pending` inside a
//! task's poll, and `Noting`, a future that does it for one it wraps: the
//! entry into the records of `waits.rs`.

use super::schedule::{Registry, Schedule};
use super::waits::Wait;
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A pool future returned `Pending` for `wait`: record it for the task
/// being polled on this thread (nothing off the workers, or in a
/// `block_on` future that is no task's).
#[inline]
pub(crate) fn note_wait(wait: Wait) {
    <Registry as Schedule>::note_wait(wait);
}

pin_project! {
    /// `future`, which records `wait` each time it returns `Pending` (for
    /// futures made of others that record nothing themselves: a child's
    /// exit watched through a pidfd or a signal, a file operation).
    pub(crate) struct Noting<F> {
        #[pin]
        future: F,
        wait: Wait,
    }
}

impl<F> Noting<F> {
    pub(crate) fn new(future: F, wait: Wait) -> Noting<F> {
        Noting { future, wait }
    }
}

impl<F: Future> Future for Noting<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let poll = this.future.poll(cx);
        if poll.is_pending() {
            note_wait(*this.wait);
        }
        poll
    }
}
