//! `LazyJob`: the second half of a `join` that its worker offers to the
//! others only when one of them asks for work (heartbeat scheduling, as in
//! Spice and chili, with the hungry thieves as the heartbeat).
//!
//! Rayon pushes every `join`'s second half onto the deque and posts it to
//! the sleep manager, and pops it back when nobody took it: two deque
//! operations (the pop with a seq-cst fence) and a look at the sleep
//! counters per fork, though most forks are never stolen. Here a `join`
//! links its second half into its worker's list of *unoffered* halves
//! (`WorkerJobs::lazy`, newest first, on the stack) and runs the first;
//! if nobody asked meanwhile, it unlinks the half and runs it inline, with
//! no atomic operation at all.
//!
//! A half is *offered* (pushed on the job deque and posted, exactly as
//! rayon's join does with every half) in two cases:
//!
//! * it is the outermost `join` of this worker's stack: the first fork of
//!   a recursion wakes a sleeping worker, as rayon's would;
//! * another worker found this worker's job deque empty while searching and
//!   asked (`WorkerInfo::wants_jobs`): the next `join` here offers the
//!   *oldest* unoffered half (the biggest piece of the recursion), then
//!   clears the request.
//!
//! Most `join`s do not even link: a `join` links its half only at every
//! [`LINK_EVERY`]-th depth of its worker's stack (the outermost included),
//! or when an idle worker has asked; the others run both halves as plain
//! calls (chili's `join_seq`, with depth in place of chili's count). A
//! recursion's stack then keeps an offerable half every `LINK_EVERY`
//! levels, the biggest pieces first, for a fork that costs a depth count
//! and a flag's load.
//!
//! The worker's side of the list (`WorkerJobs::enter_join`, `link`,
//! `unlink`, `answer_request`) is in `worker_jobs.rs`, and the offers
//! (`link_half`, `offer`, `push_job`) in `mod.rs`; this file is the list's
//! links.
//!
//! # Invariants
//!
//! * A plain `join` (not linked) was never seen by another thread, and its
//!   halves are never offered: it runs `a`, then `b`, and if `a` panics,
//!   `b` still runs before the panic goes on (`join/mod.rs`). Only the
//!   halves that are linked can be offered, so a request is answered at
//!   the next `join` (which links, since the flag is set) with the oldest
//!   linked unoffered half, its own at worst.
//! * The list is this thread's only (`Cell`s), and follows its stack: a
//!   `join` links its half before running the first and unlinks it after,
//!   and every `join` nested inside (on this thread, in the first half or
//!   in whatever the worker runs while it waits) unlinks its own first.
//! * Halves are offered oldest first, so the list is offered halves
//!   followed by unoffered ones: the oldest unoffered is found by walking
//!   from the newest until an offered one. They reach the job deque in the
//!   order of their age, as rayon's do.
//! * An unoffered half was never seen by another thread: its owner runs it
//!   inline, with no latch and no wake. An offered one is a rayon job from
//!   there on (`join/README.md`): popped back or stolen, its latch waited
//!   on with `wait_until`. The request flag is a hint: a lost or stale
//!   request only delays or adds an offer, and an offer is the push and
//!   post every `join` made before, so no wake can be lost through it
//!   (sleep/README.md, "Lazy joins").

use super::job_ref::JobRef;
use std::cell::Cell;
use std::ptr::NonNull;

/// A `join` links its second half at every `LINK_EVERY`-th depth of its
/// worker's stack (and when asked). 8: a fork-per-call recursion pays the
/// link (its `StackJob`, the list, the tick) at one `join` in 8 and keeps an
/// offerable half every 8 levels; `forkjoin --workers 1 --only fib` costs
/// are in docs/BENCHMARKS.md, "Plain joins".
pub(crate) const LINK_EVERY: u32 = 8;

/// A `join`'s second half, on the stack of the `join` that made it, linked
/// into its worker's list while the first half runs.
pub(crate) struct LazyJob {
    pub(super) job: JobRef,
    /// The next older unfinished half of this worker's stack (set when
    /// linked).
    pub(super) older: Cell<Option<NonNull<LazyJob>>>,
    /// Pushed on the job deque (it may have been stolen).
    pub(super) offered: Cell<bool>,
}

impl LazyJob {
    /// `job`, not linked yet.
    pub(crate) fn new(job: JobRef) -> LazyJob {
        LazyJob {
            job,
            older: Cell::new(None),
            offered: Cell::new(false),
        }
    }

    /// The oldest unoffered half of the list whose newest is `newest`
    /// (module invariants: the walk stops at the first offered one).
    ///
    /// # Safety
    ///
    /// Every half linked from `newest` is alive (this thread's list: each
    /// is on the stack of a `join` that has not unlinked it yet).
    pub(super) unsafe fn oldest_unoffered<'a>(
        newest: Option<NonNull<LazyJob>>,
    ) -> Option<&'a LazyJob> {
        let mut oldest = None;
        let mut at = newest;
        while let Some(p) = at {
            // SAFETY: the caller's contract.
            let half = unsafe { p.as_ref() };
            if half.offered.get() {
                break;
            }
            oldest = Some(half);
            at = half.older.get();
        }
        oldest
    }
}
