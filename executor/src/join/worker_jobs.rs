//! `WorkerJobs`: what one worker keeps of fork-join, on its own thread:
//! its job deque, its list of linked `join` halves (`lazy_jobs.rs`), the
//! depth of `join`s on its stack, its copy of the request flag and its
//! cache of job blocks (`job_blocks.rs`).
//!
//! A leaf: the worker (`scheduler/worker/worker_thread.rs`) holds one and runs what
//! its deque holds; `join` and `scope` (`mod.rs`, `scope.rs`) push, link
//! and offer through it, and tell the worker what they posted
//! (`WorkerThread::posted_job`).
//!
//! # Invariants
//!
//! * Only the owning thread pushes to and pops from `deque`; other workers
//!   steal from its other end (`WorkerInfo::job_stealer`).
//! * The list of linked halves follows the stack (`lazy_jobs.rs`): a half
//!   is linked before its `join` runs the first half and unlinked after.
//! * `depth` counts the `join`s on this thread's stack; `JoinDepth` puts
//!   it back on return or unwind.

use super::job_blocks::JobBlocks;
use super::job_ref::JobRef;
use super::lazy_jobs::{LazyJob, LINK_EVERY};
use crossbeam_deque::Worker;
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

/// One worker's side of fork-join.
pub(crate) struct WorkerJobs {
    /// Fork-join jobs (`join`, `scope`): LIFO, so a `join` pops its own
    /// second half back first; thieves take the oldest.
    deque: Worker<JobRef>,
    /// Ran or pushed a fork-join job since the worker last started
    /// searching.
    ran: Cell<bool>,
    /// The deque may hold jobs: set by `push`, cleared by a `pop` that
    /// finds none. Only this thread pushes (thieves only take), so while
    /// it is clear the deque is empty, and a worker that runs only async
    /// tasks skips the deque's pop at every search (about 12 instructions
    /// a task, callgrind).
    maybe_jobs: Cell<bool>,
    /// The newest unfinished `join` half of this thread's stack
    /// (`lazy_jobs.rs`).
    lazy: Cell<Option<NonNull<LazyJob>>>,
    /// How many `join`s this thread's stack is in, linked or plain
    /// (`lazy_jobs.rs`).
    depth: Cell<u32>,
    /// The worker's `WorkerInfo::wants_jobs`, read at every `join`: one
    /// load from here instead of the registry's, its workers' and the
    /// line's (the fork's hottest samples, `perf annotate`).
    wants: NonNull<AtomicBool>,
    /// The memory of the heap jobs it ran, for the next ones it makes.
    blocks: JobBlocks,
}

impl WorkerJobs {
    /// The side of a worker that owns `deque`, whose request flag is
    /// `wants`.
    ///
    /// # Safety
    ///
    /// `wants` outlives this value (it is the worker's `WorkerInfo`, which
    /// the registry the worker holds keeps alive).
    pub(crate) unsafe fn new(deque: Worker<JobRef>, wants: &AtomicBool) -> WorkerJobs {
        WorkerJobs {
            deque,
            ran: Cell::new(false),
            maybe_jobs: Cell::new(false),
            lazy: Cell::new(None),
            depth: Cell::new(0),
            wants: NonNull::from(wants),
            blocks: JobBlocks::default(),
        }
    }

    /// Push `job` onto the deque (the caller posts it:
    /// `WorkerThread::posted_job`).
    #[inline]
    pub(crate) fn push(&self, job: JobRef) {
        self.deque.push(job);
        self.maybe_jobs.set(true);
        self.ran.set(true);
    }

    /// The newest job of the deque.
    #[inline]
    pub(crate) fn pop(&self) -> Option<JobRef> {
        if !self.maybe_jobs.get() {
            return None;
        }
        let job = self.deque.pop();
        if job.is_none() {
            self.maybe_jobs.set(false);
        }
        job
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.deque.is_empty()
    }

    /// The worker ran a job.
    #[inline]
    pub(crate) fn ran_one(&self) {
        self.ran.set(true);
    }

    /// Whether the worker ran or pushed a job since the last call.
    #[inline]
    pub(crate) fn take_ran(&self) -> bool {
        self.ran.replace(false)
    }

    /// This worker's cache of job blocks (`job_blocks.rs`).
    #[inline]
    pub(crate) fn blocks(&self) -> &JobBlocks {
        &self.blocks
    }

    /// Enter a `join`: whether it links its second half (`lazy_jobs.rs`:
    /// at every `LINK_EVERY`-th depth of the stack, or when an idle worker
    /// asked for work), and the depth to restore when it returns.
    #[inline]
    pub(crate) fn enter_join(&self) -> JoinDepth<'_> {
        let depth = self.depth.get();
        self.depth.set(depth.wrapping_add(1));
        let links = depth % LINK_EVERY == 0 || self.wanted();
        JoinDepth {
            jobs: self,
            depth,
            links,
        }
    }

    /// Link `half` as the newest unfinished `join` half of this stack. It
    /// must be unlinked with `unlink` before it moves or is dropped.
    #[inline]
    pub(crate) fn link(&self, half: &LazyJob) {
        half.older.set(self.lazy.get());
        self.lazy.set(Some(NonNull::from(half)));
    }

    /// Unlink `half`, the newest linked one; true if it was offered (the
    /// caller then pops it back or waits for its thief, as rayon does).
    #[inline]
    pub(crate) fn unlink(&self, half: &LazyJob) -> bool {
        debug_assert!(self
            .lazy
            .get()
            .is_some_and(|p| std::ptr::eq(p.as_ptr(), half)));
        self.lazy.set(half.older.get());
        half.offered.get()
    }

    /// Whether an idle worker asked this one for a `join` half.
    #[inline]
    pub(crate) fn wanted(&self) -> bool {
        // SAFETY: `wants` outlives `self` (`new`). Relaxed: a hint
        // (`lazy_jobs.rs`).
        unsafe { self.wants.as_ref() }.load(Ordering::Relaxed)
    }

    /// Another worker asked for work: clear the request and return the
    /// oldest unoffered half (the biggest piece of the recursion), to
    /// offer.
    #[cold]
    pub(crate) fn answer_request(&self) -> Option<&LazyJob> {
        // Relaxed: a hint (`lazy_jobs.rs`); a request made after this store
        // is seen at a later `join`.
        // SAFETY: `wants` outlives `self` (`new`).
        unsafe { self.wants.as_ref() }.store(false, Ordering::Relaxed);
        // SAFETY: every half linked from `lazy` is alive on this thread's
        // stack until its `join` unlinks it.
        unsafe { LazyJob::oldest_unoffered(self.lazy.get()) }
    }
}

/// A `join` on this worker's stack (`WorkerJobs::enter_join`): the stack's
/// depth goes back when it is dropped, on return or unwind.
pub(crate) struct JoinDepth<'a> {
    jobs: &'a WorkerJobs,
    depth: u32,
    links: bool,
}

impl JoinDepth<'_> {
    /// Whether this `join` links its second half, where it can be offered;
    /// else both halves are plain calls.
    #[inline]
    pub(crate) fn links(&self) -> bool {
        self.links
    }

    /// Whether this `join` is the outermost of its worker's stack (no
    /// other `join` of this thread is under way).
    #[inline]
    pub(crate) fn outermost(&self) -> bool {
        self.depth == 0
    }
}

impl Drop for JoinDepth<'_> {
    #[inline]
    fn drop(&mut self) {
        self.jobs.depth.set(self.depth);
    }
}
