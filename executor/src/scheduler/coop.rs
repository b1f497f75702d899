//! The cooperative budget: how many operations a task may complete in one
//! poll before pool's own futures make it yield; and `yield_now`, a
//! task's own yield.
//!
//! A task whose socket is always ready never sees `Pending`, so without a
//! budget it would keep its worker from every task queued behind it. Each
//! poll of a task (and each poll of a `block_on` future) starts with
//! [`BUDGET`] units (`budgeted`). Every future of the pool that can complete
//! without waiting (a socket operation, a timer, a `JoinHandle`, a
//! `JoinSet`, a signal, a child's exit) first asks `poll_proceed`: with
//! units left it goes on, and spends one when it completes
//! (`made_progress`); with none, it wakes its task and returns `Pending`.
//! The self-wake sends the task to the back of its worker's queue (a wake
//! while running, `WorkerThread::schedule_local`), so every task queued
//! before it runs first. With nothing queued there, it waits on its worker
//! until a search finds nothing else (the other workers' queues and the
//! injector included), and wakes nobody.
//!
//! A future that returns `Pending` spends nothing: the budget counts work
//! done, not polls. Outside a task's poll (a plain thread, a blocking
//! closure, a fork-join job) the budget is `UNCONSTRAINED`, as it is inside
//! [`unconstrained`].
//!
//! # Invariants
//!
//! * The budget lives in one thread-local (`BUDGET`, `context/plain_cells.rs`). `budgeted`
//!   restores the outer value when its poll ends (also on unwinding), so a
//!   task run inside another's `block_on` on a worker thread does not spend
//!   its caller's budget.
//! * A future never spends from an exhausted budget: `poll_proceed` comes
//!   first, `made_progress` only after it allowed the operation.

use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Operations one poll of a task may complete. Tokio's is 128 too; measured
/// with the fairness workload of `compare` (docs/BENCHMARKS-HISTORY.md).
pub(crate) const BUDGET: u32 = 128;

/// The budget outside a task's poll, and inside `unconstrained`.
pub(crate) const UNCONSTRAINED: u32 = u32::MAX;

/// Restores the outer budget when a budgeted poll ends.
struct Restore(u32);

impl Drop for Restore {
    #[inline]
    fn drop(&mut self) {
        crate::context::plain_cells::replace_budget(self.0);
    }
}

/// Run `f` (one poll) with `budget`, then restore the budget it replaced.
#[inline]
pub(crate) fn with_budget<R>(budget: u32, f: impl FnOnce() -> R) -> R {
    let _restore = Restore(crate::context::plain_cells::replace_budget(budget));
    f()
}

/// Run `f`, one poll of a task or a `block_on` future, with a fresh budget.
#[inline]
pub(crate) fn budgeted<R>(f: impl FnOnce() -> R) -> R {
    with_budget(BUDGET, f)
}

/// `budgeted`, for a worker's poll of a task: true if the poll ended with
/// the budget spent (`Metrics::forced_yields`: the task was made to yield,
/// or would have been at its next operation; tokio counts the same).
#[inline]
pub(crate) fn budgeted_ran_out(f: impl FnOnce()) -> bool {
    let _restore = Restore(crate::context::plain_cells::replace_budget(BUDGET));
    f();
    spent()
}

/// Is this poll's budget spent? (Its task is being made to yield, or would
/// be at its next operation.)
#[inline]
pub(crate) fn spent() -> bool {
    crate::context::plain_cells::budget() == 0
}

/// May an operation of pool's complete now? `Ready` if budget is left;
/// else wakes the task (it goes behind the others) and returns `Pending`.
#[inline]
pub(crate) fn poll_proceed(cx: &mut Context<'_>) -> Poll<()> {
    if crate::context::plain_cells::budget() == 0 {
        cx.waker().wake_by_ref();
        Poll::Pending
    } else {
        Poll::Ready(())
    }
}

/// An operation allowed by `poll_proceed` completed: spend one unit.
#[inline]
pub(crate) fn made_progress() {
    crate::context::plain_cells::spend_budget();
}

/// `poll_proceed`, then `poll`; one unit spent if that is `Ready`.
#[inline]
pub(crate) fn budget_poll<T>(
    cx: &mut Context<'_>,
    poll: impl FnOnce(&mut Context<'_>) -> Poll<T>,
) -> Poll<T> {
    if poll_proceed(cx).is_pending() {
        return Poll::Pending;
    }
    let out = poll(cx);
    if out.is_ready() {
        made_progress();
    }
    out
}

/// Spend one unit of the current task's budget, yielding first if it is
/// spent: a loop of user code that never awaits anything of the pool's can
/// call this to let the other tasks of its worker run.
///
/// The budget is renewed at every poll of a task (128 operations), and
/// pool's own futures (sockets, timers, `JoinHandle`, `JoinSet`, signals,
/// child processes) spend it too. Outside a task, and inside
/// [`unconstrained`], it never yields.
///
/// # Examples
///
/// ```
/// # pool::block_on(async {
/// let mut sum = 0u64;
/// for i in 0..1_000u64 {
///     sum += i; // CPU work that never awaits
///     pool::consume_budget().await; // yields now and then
/// }
/// assert_eq!(sum, 499_500);
/// # });
/// ```
pub async fn consume_budget() {
    std::future::poll_fn(|cx| budget_poll(cx, |_| Poll::Ready(()))).await
}

pin_project! {
    /// A future polled with no cooperative budget (`unconstrained`).
    struct Unconstrained<F> {
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for Unconstrained<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let future = self.project().future;
        with_budget(UNCONSTRAINED, || future.poll(cx))
    }
}

/// Run `future` without a cooperative budget: pool's futures inside it
/// never yield because the budget is spent (the budget of the task around
/// it is left as it was).
///
/// For a future that must not be interrupted between two ready
/// operations. Used on an always-ready source, it keeps its worker from
/// every other task again: prefer a larger unit of work per operation.
///
/// # Examples
///
/// ```
/// # pool::block_on(async {
/// let n = pool::unconstrained(async {
///     let mut n = 0;
///     for _ in 0..1_000 {
///         pool::consume_budget().await; // never yields in here
///         n += 1;
///     }
///     n
/// })
/// .await;
/// assert_eq!(n, 1_000);
/// # });
/// ```
pub async fn unconstrained<F: Future>(future: F) -> F::Output {
    Unconstrained { future }.await
}

/// Give the worker to the other runnable tasks once: the task is queued
/// behind them and polled again after they had their turn.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// pool.block_on(pool.spawn(async {
///     for _ in 0..3 {
///         pool::yield_now().await;
///     }
/// }))
/// .unwrap();
/// ```
pub async fn yield_now() {
    YieldNow { yielded: false }.await
}

/// The future of [`yield_now`]: pending once, having woken itself.
struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        // Woken while running: the schedule function puts the task at the
        // back of its worker's queue.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
