//! The offers of fork-join: a job pushed on a worker's job deque and
//! posted to the sleep manager (`push_job`, rayon's push), and a `join`'s
//! linked half offered when it is the outermost of its stack or another
//! worker asked (`link_half`, `lazy_jobs.rs`).

use super::job_ref::JobRef;
use super::lazy_jobs::LazyJob;
use crate::scheduler::worker::worker_thread::WorkerThread;

/// Push a fork-join job onto worker `w`'s job deque and post it as an
/// internal job, as a spawned task is: a sleeper is woken for it unless an
/// awake worker is idle (`WorkerThread::posted_job`).
pub(crate) fn push_job(w: &WorkerThread, job: JobRef) {
    w.jobs().push(job);
    w.posted_job();
}

/// Link `half` as worker `w`'s newest unfinished `join` half, and offer it
/// or an older one if that is due (`lazy_jobs.rs`). It must be unlinked
/// (`WorkerJobs::unlink`) before it moves or is dropped. `outermost`: its
/// `join` is the outermost of the worker's stack (`JoinDepth::outermost`).
#[inline]
pub(crate) fn link_half(w: &WorkerThread, half: &LazyJob, outermost: bool) {
    let jobs = w.jobs();
    jobs.link(half);
    if outermost {
        // The outermost `join` of this stack: offered at once, so the
        // first fork of a recursion wakes a sleeper as rayon's does.
        // By depth, not by "no older half linked": the second half of
        // that first fork, run here after it was popped back, has none
        // linked either, and offering each of its linked `join`s (a
        // push, a post and a fenced pop back apiece) cost a thief's
        // fib(28) about 13 000 offers a run (docs/BENCHMARKS.md, "The
        // second worker's wake").
        offer(w, half);
    } else if jobs.wanted() {
        if let Some(oldest) = jobs.answer_request() {
            offer(w, oldest);
        }
    } else {
        w.join_tick();
    }
}

/// Push `half` on the job deque and post it: rayon's push.
fn offer(w: &WorkerThread, half: &LazyJob) {
    half.offered.set(true);
    push_job(w, half.job);
}
