//! `JobRef`: a type-erased fork-join job, what a worker's job deque holds.
//! The jobs themselves (`StackJob`, `HeapJob`) are in `job.rs`; the
//! workers (`scheduler/worker/`) only steal and execute these references.
//!
//! # Invariants
//!
//! * A `JobRef` is run exactly once, and never dropped without being run: a
//!   worker that leaves its main loop runs what is left in its job deque.
//! * Whoever makes a `JobRef` (`JobRef::new`) keeps the job alive until it
//!   has run, or until the reference was popped back unrun.

/// A type-erased job: `execute_fn(pointer)` runs it once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobRef {
    pointer: *const (),
    execute_fn: unsafe fn(*const ()),
}

// SAFETY: a `JobRef` is only created for jobs whose closures and results
// are `Send` (the bounds of `join` and `Scope::spawn`), and the job types
// synchronize their hand-off through their latches.
unsafe impl Send for JobRef {}

impl JobRef {
    /// A reference to the job at `pointer`, run by `execute_fn(pointer)`.
    ///
    /// # Safety
    ///
    /// The job stays alive and in place until `execute_fn` ran on it (once)
    /// or the reference was popped back unrun; `execute_fn` may be called
    /// from any worker of the pool.
    pub(crate) unsafe fn new(pointer: *const (), execute_fn: unsafe fn(*const ())) -> JobRef {
        JobRef {
            pointer,
            execute_fn,
        }
    }

    /// Whether `self` and `other` are the same job (the same address: two
    /// live jobs never share one).
    pub(crate) fn is(&self, other: &JobRef) -> bool {
        std::ptr::eq(self.pointer, other.pointer)
    }

    /// Run the job.
    ///
    /// # Safety
    ///
    /// Called once per job, while the job is alive (see the module
    /// invariants).
    pub(crate) unsafe fn execute(self) {
        // SAFETY: the caller's contract.
        unsafe { (self.execute_fn)(self.pointer) }
    }
}
