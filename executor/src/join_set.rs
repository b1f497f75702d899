//! `JoinSet`: a set of tasks, joined in the order they complete.
//!
//! # How `join_next` finds a finished task without polling every member
//!
//! Each member's `JoinHandle` is polled with a waker of the member's own
//! (`MemberWaker`), not with the waker of the task awaiting the set. When a
//! member's task completes, async-task wakes that waker, which puts the
//! member's key on the set's ready queue (once: its `notified` flag) and
//! wakes the task awaiting the set. `join_next` polls only the members on
//! the ready queue: a member is polled once when spawned (to register its
//! waker) and once more when its task completes, so a completion costs
//! O(1) however many members the set has.
//!
//! # Invariants
//!
//! * A member's key is on the ready queue at most once per wake
//!   (`notified`); a key that is stale (its member removed, or its slot
//!   given to a new member) costs one spurious poll, never a lost one: the
//!   new member's own waker is registered by that poll.
//! * `notified` is cleared before the member's handle is polled, so a
//!   completion that lands after the poll registered the waker queues the
//!   key again.
//! * No lock is held while a waker is woken or a handle polled.
//! * Dropping the set aborts every member; each member's future is dropped
//!   by its own pool, exactly once (`JoinHandle::abort`).

use crate::scheduler::coop;
use crate::task::abort_handle::AbortHandle;
use crate::task::error::JoinError;
use crate::task::join_handle::JoinHandle;
use crate::task::noting::note_wait;
use crate::task::waits::{self, Wait, WaitKind};
use futures::task::{waker_ref, ArcWake};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::fmt;
use std::future::{poll_fn, Future};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// A set of tasks of the same output type, joined in the order they
/// complete.
///
/// Members are spawned on the current pool ([`pool::spawn`](crate::spawn)'s
/// rule). [`join_next`](JoinSet::join_next) returns the next member to
/// complete, and costs the same whether the set has ten members or a
/// million. Dropping the set aborts every task still in it.
///
/// # Examples
///
/// ```
/// # pool::block_on(async {
/// let mut set = pool::JoinSet::new();
/// for i in 0..10u64 {
///     set.spawn(async move { i * i });
/// }
/// let mut sum = 0;
/// while let Some(result) = set.join_next().await {
///     sum += result.unwrap();
/// }
/// assert_eq!(sum, 285);
/// # });
/// ```
pub struct JoinSet<T> {
    /// The members, by key; `None` for a free key (on `free`).
    members: Vec<Option<Member<T>>>,
    free: Vec<usize>,
    /// Members not polled yet (their wakers not registered): polled first,
    /// with no lock taken for them.
    unpolled: Vec<usize>,
    len: usize,
    ready: Arc<Ready>,
}

struct Member<T> {
    handle: JoinHandle<T>,
    waker: Arc<MemberWaker>,
}

/// The keys of members to poll, and the waker of the task awaiting the set.
#[derive(Default)]
struct Ready {
    queue: Mutex<ReadyQueue>,
}

#[derive(Default)]
struct ReadyQueue {
    keys: VecDeque<usize>,
    waiter: Option<Waker>,
}

/// The waker a member's handle is polled with.
struct MemberWaker {
    key: usize,
    /// Its key is on the ready queue, not yet taken by `join_next`.
    notified: AtomicBool,
    ready: Arc<Ready>,
}

impl ArcWake for MemberWaker {
    fn wake_by_ref(this: &Arc<Self>) {
        // AcqRel: pairs with the `Release` clear in `join_next`, which comes
        // before the poll that registered this waker.
        if this.notified.swap(true, Ordering::AcqRel) {
            return;
        }
        let waiter = {
            let mut queue = this.ready.queue.lock();
            queue.keys.push_back(this.key);
            queue.waiter.take()
        };
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }
}

impl<T> JoinSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        JoinSet {
            members: Vec::new(),
            free: Vec::new(),
            unpolled: Vec::new(),
            len: 0,
            ready: Arc::new(Ready::default()),
        }
    }

    /// The number of tasks in the set (also those finished and not yet
    /// joined).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the set has no tasks.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Cancel every task in the set. They stay in it: `join_next` returns
    /// each, as `Err(e)` with `e.is_cancelled()` unless it had completed.
    pub fn abort_all(&mut self) {
        for member in self.members.iter().flatten() {
            member.handle.abort();
        }
    }

    /// Add `handle`'s task to the set.
    fn insert(&mut self, handle: JoinHandle<T>) -> AbortHandle {
        let abort = handle.abort_handle();
        let key = self.free.pop().unwrap_or(self.members.len());
        // Polled first by `join_next` (`unpolled`): that poll registers
        // its waker.
        let waker = Arc::new(MemberWaker {
            key,
            notified: AtomicBool::new(true),
            ready: Arc::clone(&self.ready),
        });
        let member = Some(Member { handle, waker });
        if key == self.members.len() {
            self.members.push(member);
        } else {
            self.members[key] = member;
        }
        self.len += 1;
        self.unpolled.push(key);
        abort
    }

    /// The next member to complete, or `None` when the set is empty.
    fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        if self.len == 0 {
            return Poll::Ready(None);
        }
        // One unit of the cooperative budget per member joined.
        if coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        loop {
            let key = if let Some(key) = self.unpolled.pop() {
                key
            } else {
                let mut queue = self.ready.queue.lock();
                match queue.keys.pop_front() {
                    Some(key) => key,
                    None => {
                        if !queue
                            .waiter
                            .as_ref()
                            .is_some_and(|w| w.will_wake(cx.waker()))
                        {
                            queue.waiter = Some(cx.waker().clone());
                        }
                        return Poll::Pending;
                    }
                }
            };
            let Some(member) = self.members.get_mut(key).and_then(Option::as_mut) else {
                continue; // a stale key
            };
            member.waker.notified.store(false, Ordering::Release);
            let waker = waker_ref(&member.waker);
            if let Poll::Ready(out) = member.handle.poll_output(&mut Context::from_waker(&waker)) {
                self.members[key] = None;
                self.free.push(key);
                self.len -= 1;
                coop::made_progress();
                return Poll::Ready(Some(out));
            }
        }
    }

    /// Waits for the next task of the set to complete and returns its
    /// result, in completion order; `None` once the set is empty.
    ///
    /// Cancel safe: dropping the future loses no result.
    #[track_caller]
    pub fn join_next(&mut self) -> impl Future<Output = Option<Result<T, JoinError>>> + '_ {
        let site = waits::site_of(std::panic::Location::caller());
        poll_fn(move |cx| {
            let poll = self.poll_join_next(cx);
            if poll.is_pending() && self.len > 0 {
                note_wait(Wait::new(WaitKind::JoinSet, site, self.len as u64));
            }
            poll
        })
    }

    /// Waits for every task and returns their outputs, in completion order.
    ///
    /// # Panics
    ///
    /// If a task panicked, the first such panic is resumed here (after the
    /// set, and so every task still in it, is aborted). If a task was
    /// cancelled (aborted, or its pool shut down), with a message that says
    /// so: use [`join_next`](JoinSet::join_next) to see each result.
    pub async fn join_all(mut self) -> Vec<T> {
        let mut outputs = Vec::with_capacity(self.len);
        while let Some(result) = self.join_next().await {
            match result {
                Ok(output) => outputs.push(output),
                Err(e) if e.is_panic() => {
                    drop(self);
                    std::panic::resume_unwind(e.into_panic());
                }
                Err(e) => panic!(
                    "JoinSet::join_all: task {:?} was cancelled before it completed \
                     (aborted, or its pool shut down); use join_next to see each task's result",
                    e
                ),
            }
        }
        outputs
    }

    /// Aborts every task, then waits until all of them have ended (their
    /// results are dropped). The set is empty afterwards.
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }
}

impl<T: Send + 'static> JoinSet<T> {
    /// Spawns `future` on the current pool as a member of the set.
    #[track_caller]
    pub fn spawn<F>(&mut self, future: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
    {
        self.insert(crate::free_fns::spawn(future))
    }

    /// Runs `f` on the current pool's blocking threads as a member of the
    /// set (see [`pool::spawn_blocking`](crate::spawn_blocking)).
    #[track_caller]
    pub fn spawn_blocking<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
    {
        self.insert(crate::free_fns::spawn_blocking(f))
    }
}

impl<T: 'static> JoinSet<T> {
    /// Spawns a `!Send` future on this worker thread as a member of the
    /// set (see [`pool::spawn_local`](crate::spawn_local)).
    ///
    /// # Panics
    ///
    /// Off a worker thread of a pool, as `spawn_local` does.
    #[track_caller]
    pub fn spawn_local<F>(&mut self, future: F) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        self.insert(crate::free_fns::spawn_local(future))
    }
}

impl<T> Default for JoinSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for JoinSet<T> {
    fn drop(&mut self) {
        // Dropping each handle detaches its task: abort first.
        self.abort_all();
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.len).finish()
    }
}
