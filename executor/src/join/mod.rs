//! Fork-join on the pool's own workers: [`join`] and [`scope`], Rayon's
//! design (RFC 0005) on the deques and the one sleep manager that run the
//! async tasks. See `README.md` beside this file.
//!
//! # Invariants
//!
//! * On a worker of the pool, `join(a, b)` makes `b` a [`StackJob`] on its
//!   stack (no allocation) and links it into the worker's list of
//!   unfinished halves (`LazyJob`); runs `a`; unlinks `b` and, if it was
//!   never offered to other workers, runs it inline. An offered half (the
//!   outermost `join` of the stack, or the oldest unoffered one when an
//!   idle worker asked) was pushed on the worker's LIFO job deque and
//!   posted as an internal job: it is popped back and run inline, or, if a
//!   thief took it, its latch is waited for with `WorkerThread::wait_until`
//!   (running other jobs and tasks, sleeping through the protocol). `join`
//!   returns only once both halves have finished, so `b` may borrow from
//!   its stack.
//! * Off the pool's workers (a plain thread, `Pool::block_on`, a blocking
//!   thread, a worker of another pool), the whole call runs on one of the
//!   pool's workers inside a task, and the caller waits for that task's
//!   handle: the task's future (which borrows the caller's closures) has
//!   been dropped by the time its handle resolves.
//! * Panics: both halves (every spawn of a scope) finish first; then the
//!   first panic is resumed in the caller: `a`'s before `b`'s, the scope
//!   closure's before its spawns'.

pub(crate) mod job;
pub(crate) mod job_blocks;
pub(crate) mod job_latch;
pub(crate) mod job_ref;
pub(crate) mod lazy_jobs;
pub(crate) mod offers;
pub(crate) mod scope;
pub(crate) mod worker_jobs;

pub use scope::Scope;

use crate::context::pool_cells;
use crate::scheduler::block_on::block_on_in;
use crate::scheduler::registry::Registry;
use crate::scheduler::spawn::spawn_owed_task;
use crate::scheduler::worker::worker_thread::WorkerThread;
use job::{both, JobResult, StackJob};
use job_latch::SpinLatch;
use lazy_jobs::LazyJob;
use offers::link_half;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Run `a` and `b`, potentially in parallel, on the current pool (the pool
/// whose worker or blocking thread this is, the pool of the enclosing
/// `Pool::block_on`, else the global pool), and return both results.
///
/// On a worker, `a` runs at once and `b` waits on this stack (without an
/// allocation), offered to other workers when one of them runs out of work
/// (and at once for the worker's outermost `join`); if nobody took `b`, it
/// runs here after `a`. While
/// it waits for a `b` that another worker runs, the worker runs other jobs
/// and tasks. Called inside an async task, `join` blocks that task (not its
/// worker) until it returns. Off the pool's workers the call is run on one
/// of them and the caller waits.
///
/// If either closure panics, `join` waits for the other, then resumes the
/// panic (`a`'s if both panicked).
///
/// # Panics
///
/// Resumes a panic of `a` or `b`. Panics if the pool shuts down before the
/// work could start on it (a call from outside a pool being dropped).
///
/// # Examples
///
/// ```
/// fn fib(n: u64) -> u64 {
///     if n < 2 {
///         return n;
///     }
///     let (a, b) = pool::join(|| fib(n - 1), || fib(n - 2));
///     a + b
/// }
/// let pool = pool::Pool::new().unwrap();
/// assert_eq!(pool.join(|| fib(20), || fib(10)), (6765, 55));
/// ```
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    on_current_pool(|w| join_on_worker(w, a, b))
}

/// `join` on the pool of `registry`.
pub(crate) fn join_in<A, B, RA, RB>(registry: &Arc<Registry>, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    in_pool(registry, |w| join_on_worker(w, a, b))
}

/// Run `op` on a worker of the current pool (as `with_current` chooses it).
/// The fast path, a worker of its own pool with no other pool entered, is
/// the one every nested `join` of a recursion takes.
#[inline]
fn on_current_pool<OP, R>(op: OP) -> R
where
    OP: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    if let Some(w) = pool_cells::worker() {
        if pool_cells::current_is_worker_pool(w) {
            return op(w);
        }
    }
    crate::context::current::with_current(|registry| in_pool(registry, op))
}

/// Run `op` on a worker of `registry`: here if this thread is one, else in
/// a task on the pool, waiting for it (see the module invariants).
fn in_pool<OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    if let Some(w) = pool_cells::worker() {
        if Arc::ptr_eq(w.registry(), registry) {
            return op(w);
        }
    }
    let mut result: Option<std::thread::Result<R>> = None;
    let slot = SendPtr(&mut result as *mut Option<std::thread::Result<R>>);
    let work = move || {
        let slot = slot;
        let w = pool_cells::worker().expect("a pool's task runs on one of its workers");
        let r = catch_unwind(AssertUnwindSafe(|| op(w)));
        // SAFETY: the caller waits below, and reads `result` only after
        // this task's handle resolved, which happens after this write.
        unsafe { *slot.0 = Some(r) };
    };
    let work: Box<dyn FnOnce() + Send + '_> = Box::new(work);
    // SAFETY: the caller does not return before the task's handle resolves
    // below, and by then the task's future, which owns `work` and whatever
    // it borrows, was dropped (`TaskFuture` drops it before completing, and
    // a cancelled task is dropped before its handle learns it). So `work`
    // never outlives what it borrows, though its type says `'static`.
    let work: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(work) };
    let handle = spawn_owed_task(
        registry,
        async move { work() },
        std::panic::Location::caller(),
    );
    // The work forks at once: its first `join` offers a half (a scope's
    // first spawn is pushed), and the worker that offers it goes on
    // computing. A sleeper woken by a thread that goes on running starts
    // late on a small VM (p50 2.7 ms on 2 vCPUs, for rayon's thieves as
    // for ours), one woken by a thread about to block within tens of
    // microseconds: so this thread, about to block on the handle, posts
    // the half ahead, as one more job than the task. At worst it wakes a
    // worker that finds nothing and sleeps again (sleep/README.md, "A
    // fork-join call from outside"; docs/BENCHMARKS.md, "The second
    // worker's wake").
    registry.sleep_manager().new_internal_jobs(2);
    // Waiting, this thread holds the pool's clock as `Pool::block_on` does.
    let outcome = block_on_in(Some(registry), handle);
    match result {
        Some(Ok(r)) => r,
        Some(Err(payload)) => resume_unwind(payload),
        None => panic!(
            "pool::join/scope: the pool shut down before the work could start \
             ({outcome:?}); call it while the pool is running"
        ),
    }
}

/// A raw pointer that may cross to the worker that writes through it.
struct SendPtr<T>(*mut T);

// SAFETY: the pointee is only written by the one task, and read by the
// owner after that task has finished (see `in_pool`).
unsafe impl<T: Send> Send for SendPtr<T> {}

/// `join` on worker `w` (see the module invariants): a plain one inline in
/// the caller, a linked one in its own frame.
#[inline]
fn join_on_worker<A, B, RA, RB>(w: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let depth = w.jobs().enter_join();
    if depth.links() {
        linked_join(w, depth.outermost(), a, b)
    } else {
        plain_join(a, b)
    }
}

/// A `join` that links its second half, where it may be offered to other
/// workers (`lazy_jobs.rs`); `outermost` as
/// `JoinDepth::outermost` says.
#[inline(never)]
fn linked_join<A, B, RA, RB>(w: &WorkerThread, outermost: bool, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let job_b = StackJob::new(b, SpinLatch::new(w.index()));
    // SAFETY: `job_b` stays in this frame until its latch is set (a thief
    // ran it) or it is popped back below, or it was never offered and is
    // run inline; every path out waits for one.
    let job_b_ref = unsafe { job_b.as_job_ref() };
    let half = LazyJob::new(job_b_ref);
    link_half(w, &half, outermost);
    // `a`'s panic is caught, so the half is always unlinked.
    let result_a = JobResult::call(a);
    if !w.jobs().unlink(&half) {
        // Nobody was offered `b`: no other thread can have it. Run it here;
        // a panic of `b` after an `a` that returned may unwind from here
        // as it is (both halves have finished), one after `a`'s is caught
        // so that `a`'s is the one resumed.
        let func = job_b.take_func();
        return match result_a {
            JobResult::Ok(ra) => (ra, func()),
            result_a => both(result_a, JobResult::call(func)),
        };
    }
    loop {
        if job_b.latch.core.probe() {
            return both(result_a, job_b.take_result());
        }
        match w.jobs().pop() {
            Some(job) if job.is(&job_b_ref) => return both(result_a, job_b.run_inline()),
            // Pushed by `a` and not run by it (a spawn on an outer scope).
            Some(job) => w.execute_job(job),
            None => {
                // Stolen: help until the thief sets the latch.
                w.wait_until(&job_b.latch.core);
                return both(result_a, job_b.take_result());
            }
        }
    }
}

/// A `join` that does not link its second half
/// (`lazy_jobs.rs`): `a`, then `b`, as plain calls. If
/// `a` panics, `b` runs while it unwinds (its own panic caught and
/// dropped) and `a`'s goes on, as a linked `join` resumes `a`'s after both
/// halves.
#[inline]
fn plain_join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB,
{
    let mut b = RunOnUnwind {
        b: Some(b),
        run: |b| {
            let _ = catch_unwind(AssertUnwindSafe(b));
        },
    };
    let ra = a();
    let rb = b.b.take().expect("a join's second half runs once")();
    (ra, rb)
}

/// A plain `join`'s second half while its first runs: run by the drop if
/// the first unwinds.
struct RunOnUnwind<B> {
    b: Option<B>,
    run: fn(B),
}

impl<B> Drop for RunOnUnwind<B> {
    fn drop(&mut self) {
        if let Some(b) = self.b.take() {
            (self.run)(b);
        }
    }
}

/// Run `op` with a [`Scope`] whose spawned closures may borrow anything
/// that outlives the scope, on the current pool (chosen as for [`join`]),
/// and return its result once every spawned closure has finished.
///
/// Spawned closures run on the pool's workers (the one running the scope
/// included, while it waits), in no promised order.
///
/// # Panics
///
/// A panic of `op` or of a spawned closure is resumed after all of them
/// finished (`op`'s first, else the first spawn's to panic). Panics if the
/// pool shuts down before the work could start on it.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let mut data = vec![1u64; 1000];
/// pool.scope(|s| {
///     for chunk in data.chunks_mut(100) {
///         s.spawn(move |_| chunk.iter_mut().for_each(|x| *x *= 2));
///     }
/// });
/// assert_eq!(data.iter().sum::<u64>(), 2000);
/// ```
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    on_current_pool(|w| scope::scope_on_worker(w, op))
}

/// `scope` on the pool of `registry`.
pub(crate) fn scope_in<'scope, OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    in_pool(registry, |w| scope::scope_on_worker(w, op))
}
