//! `Runner`: a worker's tokio runtime's runner task, which runs the steps
//! of a busy period lent to it (`WorkerRuntime::run_busy`), so that
//! stepping aside for tokio is a push onto the runtime's queue, not a wake
//! of its `block_on` future; and `Handover`, how a busy period is lent to
//! the runner and taken back, also on a panic.

use std::any::Any;
use std::cell::Cell;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::ptr::NonNull;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// What a busy step asks of tokio before the next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Aside {
    /// Nothing: the busy period is over.
    Done,
    /// Run what is queued on the runtime.
    RunQueue,
    /// Run what is queued, then poll the reactor and timers without
    /// blocking (tokio's own workers do it every 61 tasks; the pool's
    /// worker at a turn: every 8 searches while tokio tasks are alive or
    /// queued from outside, and every `TURN_INTERVAL`, so that readiness
    /// of a socket in this runtime's reactor is seen while the worker is
    /// busy).
    PollDriver,
}

/// A busy period's step (`WorkerRuntime::busy_step`) as `run_busy` lends it
/// to the runner.
type Step = dyn FnMut() -> Aside;

/// How a busy period passes between its `block_on` future and the
/// runtime's runner task (`Runner`). Touched only on the worker's thread.
#[derive(Default)]
pub(super) struct Handover {
    /// The step of the busy period under way, lent by `run_busy` for the
    /// length of its `block_on` (`Lent`), taken out while it runs.
    step: Cell<Option<NonNull<Step>>>,
    /// The runner has the period: set by the `block_on` future when it
    /// hands it over, cleared by the runner when a step found nothing to do.
    handed: Cell<bool>,
    /// The runner's waker, from its first poll.
    runner: Cell<Option<Waker>>,
    /// The `block_on` future's waker, woken when the runner is done.
    owner: Cell<Option<Waker>>,
    /// A panic of a step the runner ran, resumed by `run_busy`.
    panic: Cell<Option<Box<dyn Any + Send>>>,
}

impl Handover {
    /// Lend `step` until the returned guard drops.
    pub(super) fn lend<'a>(&'a self, step: &'a mut (dyn FnMut() -> Aside + 'a)) -> Lent<'a> {
        let step: NonNull<dyn FnMut() -> Aside + 'a> = NonNull::from(step);
        // SAFETY: only the lifetime changes. `Lent` takes the pointer back
        // out of the cell before `step`'s borrow ends, also on a panic, and
        // nothing dereferences it once out (`run_step`).
        let step: NonNull<Step> = unsafe { std::mem::transmute(step) };
        self.step.set(Some(step));
        Lent(self)
    }

    /// Run the lent step once; None if none is lent.
    pub(super) fn run_step(&self) -> Option<Aside> {
        let step = self.step.take()?;
        let _back = PutBack(&self.step, step);
        // SAFETY: `step` points at `run_busy`'s closure, alive while it is
        // lent (`lend`). It was taken out of the cell for this call, so no
        // other call (a nested one would find the cell empty) makes a
        // second `&mut` to it.
        Some(unsafe { (*step.as_ptr())() })
    }
}

/// Puts a lent step back into its cell after a run, also on a panic.
struct PutBack<'a>(&'a Cell<Option<NonNull<Step>>>, NonNull<Step>);

impl Drop for PutBack<'_> {
    fn drop(&mut self) {
        self.0.set(Some(self.1));
    }
}

/// A busy period's step, lent to the runner; taken back when dropped.
pub(super) struct Lent<'a>(&'a Handover);

impl Lent<'_> {
    /// Run the step from the `block_on` future.
    pub(super) fn step(&self) -> Aside {
        self.0.run_step().unwrap_or(Aside::Done)
    }

    /// Hand the period to the runner, to be woken (`owner`) when it is
    /// done; false if there is no runner yet.
    pub(super) fn hand_over(&self, owner: &Waker) -> bool {
        let Some(runner) = self.0.runner.take() else {
            return false;
        };
        self.0.owner.set(Some(owner.clone()));
        self.0.handed.set(true);
        // On this thread, inside the runtime's scheduler context: a push
        // onto its own queue, behind what the step put there.
        runner.wake_by_ref();
        self.0.runner.set(Some(runner));
        true
    }

    /// Once the runner is done with the period: Ok, or the panic of the
    /// step it ran.
    pub(super) fn taken_back(&self) -> Option<Result<(), Box<dyn Any + Send>>> {
        if self.0.handed.get() {
            return None;
        }
        Some(self.0.panic.take().map_or(Ok(()), Err))
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.0.step.set(None);
        self.0.handed.set(false);
        self.0.owner.set(None);
    }
}

/// The runtime's runner: a tokio task that runs the steps of a busy period
/// handed to it (`WorkerRuntime::run_busy`), so that stepping aside for tokio
/// is a push onto its queue, not a wake of the `block_on` future (a write
/// to the runtime's eventfd and a driver poll each). Spawned when the
/// worker's runtime is made; never completes (it is dropped with the
/// runtime), so it is one of the runtime's alive tasks, which
/// `alive_tasks` does not count.
pub(super) struct Runner(pub(super) Rc<Handover>);

// SAFETY: a current-thread runtime polls and drops its tasks on the thread
// that drives it: the runner's is driven by its worker alone (its
// `block_on` calls and its shutdown in `WorkerRuntime::drop`, on the worker's
// thread; the runtime left `TokioRuntimes` for this worker before the runner
// was spawned), so the `Rc` and what it reaches stay on that thread.
unsafe impl Send for Runner {}

impl Future for Runner {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let hand = &*self.0;
        let runner = hand.runner.take();
        hand.runner.set(match runner {
            Some(w) if w.will_wake(cx.waker()) => Some(w),
            _ => Some(cx.waker().clone()),
        });
        if !hand.handed.get() {
            return Poll::Pending;
        }
        match catch_unwind(AssertUnwindSafe(|| hand.run_step())) {
            Ok(Some(Aside::RunQueue)) => {
                // Behind what tokio has queued.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Ok(Some(Aside::PollDriver)) => {
                // Tokio wakes a task that yields once it has run its queue
                // and polled its driver without blocking (1.54:
                // `yield_now`, `Defer`): then it pushes the runner onto
                // its queue, with no write to its eventfd.
                let _ = pin!(tokio::task::yield_now()).poll(cx);
                return Poll::Pending;
            }
            Ok(Some(Aside::Done) | None) => {}
            Err(panic) => hand.panic.set(Some(panic)),
        }
        hand.handed.set(false);
        if let Some(owner) = hand.owner.take() {
            owner.wake();
        }
        Poll::Pending
    }
}
