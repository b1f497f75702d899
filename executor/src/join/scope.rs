//! `scope`: spawned closures that may borrow from the caller's stack.
//!
//! # Invariants
//!
//! * The scope's [`CountLatch`] counts its own closure plus every spawn not
//!   finished; `scope` returns only after it reached zero, so no spawned
//!   closure (nor anything it borrows) is in use after `scope` returns,
//!   panics included: a spawn's closure catches its own panic, records it,
//!   and only then decrements the count.
//! * A spawn on a worker of the scope's pool goes on that worker's job
//!   deque; from any other thread it goes into the pool as a task.

use super::job::HeapJob;
use super::job_latch::CountLatch;
use super::offers::push_job;
use crate::context::pool_cells;
use crate::scheduler::spawn::spawn_owed_task;
use crate::scheduler::worker::worker_thread::WorkerThread;
use crate::unwind::discard;
use std::any::Any;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

/// A fork-join scope (see [`scope`](crate::scope)): closures spawned on it
/// may borrow anything that outlives `'scope`.
pub struct Scope<'scope> {
    latch: CountLatch,
    /// The first panic of a spawned closure.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Invariant in `'scope`, as Rayon's: spawned closures may borrow for
    /// exactly `'scope`.
    marker: PhantomData<fn(&'scope ()) -> &'scope ()>,
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope").finish_non_exhaustive()
    }
}

/// The scope's address, sent to the job that runs a spawn.
struct ScopePtr<'scope>(*const Scope<'scope>);

// SAFETY: `Scope` is `Sync` (its fields are), and the scope outlives every
// spawn (see the module invariants).
unsafe impl Send for ScopePtr<'_> {}

impl<'scope> Scope<'scope> {
    /// Run `body` on the pool, as part of this scope: the scope does not
    /// return before it finished. `body` gets the scope, to spawn more.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let count = AtomicUsize::new(0);
    /// pool::Pool::new().unwrap().scope(|s| {
    ///     for _ in 0..10 {
    ///         s.spawn(|s| {
    ///             count.fetch_add(1, Ordering::Relaxed);
    ///             s.spawn(|_| { count.fetch_add(1, Ordering::Relaxed); });
    ///         });
    ///     }
    /// });
    /// assert_eq!(count.into_inner(), 20);
    /// ```
    ///
    /// A spawned closure cannot borrow what the scope may outlive, such as
    /// a local of the scope's own closure (it could still run after that
    /// local is gone):
    ///
    /// ```compile_fail,E0373
    /// pool::scope(|s| {
    ///     let local = 5;
    ///     s.spawn(|_| println!("{local}"));
    /// });
    /// ```
    pub fn spawn<BODY>(&self, body: BODY)
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.latch.increment();
        let scope = ScopePtr(self as *const Scope<'scope>);
        let job = HeapJob::into_job_ref(move || {
            let scope = scope;
            // SAFETY: the scope waits for this spawn's count (see the
            // module invariants), so it is alive until the `set` below.
            let this = unsafe { &*scope.0 };
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| body(this))) {
                this.record_panic(payload);
            }
            // SAFETY: the last use of `this`.
            unsafe { CountLatch::set(&this.latch) };
        });
        let registry = self.latch.registry();
        match pool_cells::worker() {
            Some(w) if Arc::ptr_eq(w.registry(), registry) => push_job(w, job),
            _ => {
                // Not on this pool's worker: run it in a task. The scope's
                // owner (a worker) finds it in the injector while it waits.
                drop(spawn_owed_task(
                    registry,
                    // SAFETY: the job is alive until run, once, by this task.
                    async move { unsafe { job.execute() } },
                    std::panic::Location::caller(),
                ));
            }
        }
    }

    fn record_panic(&self, payload: Box<dyn Any + Send>) {
        let mut first = self.panic.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(payload);
        } else {
            drop(first);
            discard(payload);
        }
    }
}

/// `scope` on worker `w` (see the module invariants).
pub(crate) fn scope_on_worker<'scope, OP, R>(w: &WorkerThread, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    let scope = Scope {
        latch: CountLatch::new(w.registry(), w.index()),
        panic: Mutex::new(None),
        marker: PhantomData,
    };
    let result = catch_unwind(AssertUnwindSafe(|| op(&scope)));
    // SAFETY: `scope` lives in this frame until after the wait below.
    unsafe { CountLatch::set(&scope.latch) };
    // The owner runs what it spawned from its own deque first, newest
    // first, as a join pops its second half back: most of a fan-out's
    // spawns never reach another worker, and popping them costs no search
    // (`wait_until` runs `find_work`, with its periodic duties and the busy
    // clock's readings: 60 of a spawn's 500 instructions in skynet). A job
    // below them, of an outer join or scope, runs here as a thief would
    // run it. What was stolen, or is spawned elsewhere, the wait helps with.
    while !scope.latch.core.probe() {
        match w.jobs().pop() {
            Some(job) => w.execute_job(job),
            None => break,
        }
    }
    if !scope.latch.core.probe() {
        w.wait_until(&scope.latch.core);
    }
    let spawn_panic = scope.panic.into_inner().unwrap_or_else(|e| e.into_inner());
    match (result, spawn_panic) {
        (Ok(r), None) => r,
        (Err(payload), later) => {
            if let Some(later) = later {
                discard(later);
            }
            resume_unwind(payload)
        }
        (Ok(r), Some(payload)) => {
            drop(r);
            resume_unwind(payload)
        }
    }
}
