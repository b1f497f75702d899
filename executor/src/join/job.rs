//! Jobs: the unit of fork-join work, as in Rayon. A job is a pointer and a
//! function that runs it (a `JobRef`, `job_ref.rs`), pushed on a
//! worker's job deque; here are the two kinds of job behind it.
//!
//! # Invariants
//!
//! * A [`StackJob`] lives on the stack of the worker that called `join`,
//!   which does not return until the job's latch is set (a thief ran it) or
//!   it popped the job back and ran it inline: a `JobRef` to it is never
//!   used after its frame is gone.
//! * A [`HeapJob`] (a scope's spawn) lives in a block of its worker's cache
//!   (`job_blocks.rs`) when it fits one, else in a box; it is
//!   moved out and its memory let go (to the running worker's cache, or
//!   freed) when it runs, before its closure. The scope it borrows from
//!   waits for its count latch, which the job decrements only after its
//!   closure returned or panicked.
//! * Every job is run exactly once, and never dropped without being run: a
//!   worker that leaves its main loop runs what is left in its job deque.

use super::job_blocks;
use super::job_latch::SpinLatch;
use super::job_ref::JobRef;
use crate::context::pool_cells;
use std::any::Any;
use std::cell::UnsafeCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

/// What a job's closure produced.
pub(crate) enum JobResult<R> {
    None,
    Ok(R),
    Panic(Box<dyn Any + Send>),
}

impl<R> JobResult<R> {
    #[inline]
    pub(crate) fn call(f: impl FnOnce() -> R) -> JobResult<R> {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(r) => JobResult::Ok(r),
            Err(payload) => JobResult::Panic(payload),
        }
    }
}

/// The second half of a `join`, on its caller's stack.
pub(crate) struct StackJob<F, R> {
    pub(crate) latch: SpinLatch,
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<JobResult<R>>,
}

impl<F: FnOnce() -> R + Send, R: Send> StackJob<F, R> {
    #[inline]
    pub(crate) fn new(func: F, latch: SpinLatch) -> Self {
        StackJob {
            latch,
            func: UnsafeCell::new(Some(func)),
            result: UnsafeCell::new(JobResult::None),
        }
    }

    /// A reference to push on a deque.
    ///
    /// # Safety
    ///
    /// `self` must not move or be dropped until the job ran (its latch is
    /// set) or the `JobRef` was popped back unrun.
    #[inline]
    pub(crate) unsafe fn as_job_ref(&self) -> JobRef {
        // SAFETY: the caller keeps `self` in place until it ran or was
        // popped back; `execute` runs it once, from any worker.
        unsafe { JobRef::new(self as *const Self as *const (), Self::execute) }
    }

    /// A thief runs the job: result first, then the latch (after which the
    /// job may be gone).
    unsafe fn execute(this: *const ()) {
        // SAFETY: `this` came from `as_job_ref` and the job is alive until
        // its latch is set, below.
        let this = unsafe { &*(this as *const Self) };
        // SAFETY: only the one execution touches `func` and `result` before
        // the latch is set; the owner reads them only after.
        unsafe {
            let func = (*this.func.get()).take().expect("a stack job runs once");
            *this.result.get() = JobResult::call(func);
        }
        // SAFETY: see `SpinLatch::set`: the last use of `this`.
        unsafe { SpinLatch::set(&this.latch) };
    }

    /// The owner popped its job back: run it here.
    #[inline]
    pub(crate) fn run_inline(&self) -> JobResult<R> {
        JobResult::call(self.take_func())
    }

    /// The owner never offered the job, or popped it back: its closure, to
    /// run inline. Taken in place, not by moving the job out of its frame
    /// (a copy of the whole job, whose fresh stores a wide load cannot
    /// forward from: a stall on every fork).
    #[inline]
    pub(crate) fn take_func(&self) -> F {
        // SAFETY: the job was never offered, or was popped back unrun, so
        // no other thread can reach it: the owner alone touches `func`.
        unsafe { (*self.func.get()).take() }.expect("a join's second half runs once")
    }

    /// The owner saw the latch set: take the thief's result.
    #[inline]
    pub(crate) fn take_result(&self) -> JobResult<R> {
        // SAFETY: the latch is set, so the thief is done with the job (its
        // `execute` wrote the result before the set); the owner alone
        // touches it from here on.
        unsafe { std::mem::replace(&mut *self.result.get(), JobResult::None) }
    }
}

/// Resume the first panic of two halves, else return both values.
#[inline]
pub(crate) fn both<RA, RB>(a: JobResult<RA>, b: JobResult<RB>) -> (RA, RB) {
    match (a, b) {
        (JobResult::Ok(a), JobResult::Ok(b)) => (a, b),
        (JobResult::Panic(p), _) | (_, JobResult::Panic(p)) => resume_unwind(p),
        (JobResult::None, _) | (_, JobResult::None) => {
            unreachable!("both halves of a join ran before it returns")
        }
    }
}

/// A boxed job (a scope's spawn) that frees itself when run.
pub(crate) struct HeapJob<F> {
    func: F,
}

impl<F: FnOnce() + Send> HeapJob<F> {
    /// `func` as a job: in a block of this worker's cache when it fits
    /// (`job_blocks.rs`), else boxed.
    pub(crate) fn into_job_ref(func: F) -> JobRef {
        if !job_blocks::fits::<Self>() {
            let job = Box::new(HeapJob { func });
            // SAFETY: the box is leaked until `execute` takes it back, once.
            return unsafe { JobRef::new(Box::into_raw(job) as *const (), Self::execute) };
        }
        let block = match pool_cells::worker() {
            Some(w) => w.jobs().blocks().take(),
            None => job_blocks::alloc_block(),
        };
        let job = block.cast::<Self>();
        // SAFETY: the block is unused, and `Self` fits its size and
        // alignment (checked above).
        unsafe { job.as_ptr().write(HeapJob { func }) };
        // SAFETY: the block holds the job until `execute_in_block` takes it
        // out, once.
        unsafe { JobRef::new(job.as_ptr() as *const (), Self::execute_in_block) }
    }

    /// Run the job made in a block: move it out, give the block to the
    /// running worker's cache (a spawn inside `func` can reuse it), run.
    unsafe fn execute_in_block(this: *const ()) {
        let job = this as *mut Self;
        // SAFETY: `this` is the block `into_job_ref` wrote the job into,
        // and a job runs once: it is read out once, and the block is unused
        // after.
        let job = unsafe { job.read() };
        // SAFETY: `this` is a job block (non-null), unused from here on.
        let block = unsafe { NonNull::new_unchecked(this as *mut u8) };
        match pool_cells::worker() {
            // SAFETY: as above.
            Some(w) => unsafe { w.jobs().blocks().give(block) },
            // SAFETY: as above.
            None => unsafe { job_blocks::free_block(block) },
        }
        // The closure catches its own panics (see `Scope::spawn`).
        (job.func)();
    }

    unsafe fn execute(this: *const ()) {
        // SAFETY: `this` came from `Box::into_raw` in `into_job_ref`, and a
        // job runs once.
        let job = unsafe { Box::from_raw(this as *mut Self) };
        // The closure catches its own panics (see `Scope::spawn`).
        (job.func)();
    }
}
