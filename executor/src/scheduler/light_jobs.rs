//! The light jobs of `pool::fs` on the blocking engine: one file operation
//! each, not a task. They go onto a queue of their own, `Batch`, which
//! *drainers* empty. A drainer is one blocking task that runs jobs until
//! the queue is empty and, if no other drainer is lingering, stays empty
//! for `LINGER`; so a burst of small operations, or one task's operations
//! back to back, pays one thread hand-off rather than one each. A new
//! drainer starts only while the queue holds more jobs than there are free
//! drainers, up to `MAX_DRAINERS` running recent jobs. The registry starts
//! a drainer as a `spawn_blocking` closure (`Registry::run_batched`,
//! `scheduler/spawn.rs`): this file knows nothing of the registry.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// A light job: one file operation (`pool::fs`), run by a drainer.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The most drainers at once that run jobs started less than `STUCK` ago:
/// enough to keep a device's queue full with positional reads in flight,
/// few enough that a burst does not start a thread per job. A drainer whose
/// job has run for `STUCK` (a FIFO's open waiting for its other end, a
/// hung network file system) does not count, so such jobs never starve the
/// queue behind them (while jobs keep coming: the check is made at each
/// submission).
const MAX_DRAINERS: usize = 16;

/// See `MAX_DRAINERS`.
const STUCK: Duration = Duration::from_millis(10);

/// How long a drainer whose queue emptied waits for the next job before it
/// ends: about one task's turn around (a wake, a poll, the next
/// operation's submission), so a task's operations back to back find it.
const LINGER: Duration = Duration::from_micros(50);

/// The queue of light jobs and the drainers emptying it.
#[derive(Default)]
struct Batch {
    jobs: VecDeque<Job>,
    /// The drainers, by slot (a drainer keeps its slot while it lives).
    slots: Vec<Drainer>,
    /// Drainers not running a job (starting, or lingering): each takes a
    /// queued job without a new thread hand-off.
    free: usize,
    /// A drainer is waiting `LINGER` for the next job.
    lingering: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Drainer {
    Vacant,
    Free,
    /// Running a job since then.
    Busy(Instant),
}

impl Batch {
    /// A new drainer's slot, counted free.
    fn add_drainer(&mut self) -> usize {
        self.free += 1;
        match self.slots.iter().position(|d| *d == Drainer::Vacant) {
            Some(i) => {
                self.slots[i] = Drainer::Free;
                i
            }
            None => {
                self.slots.push(Drainer::Free);
                self.slots.len() - 1
            }
        }
    }

    /// Free drainer `me` ends.
    fn remove_drainer(&mut self, me: usize) {
        debug_assert!(self.slots[me] == Drainer::Free);
        self.slots[me] = Drainer::Vacant;
        self.free -= 1;
    }

    /// Drainers free, or running a job started less than `STUCK` ago.
    fn running(&self) -> usize {
        self.slots
            .iter()
            .filter(|d| match d {
                Drainer::Vacant => false,
                Drainer::Free => true,
                Drainer::Busy(since) => since.elapsed() < STUCK,
            })
            .count()
    }
}

/// The light jobs of one pool and their drainers.
#[derive(Default)]
pub(crate) struct LightJobs {
    batch: Mutex<Batch>,
    /// `batch.jobs.len()`, for a lingering drainer to watch without the
    /// lock (written under it).
    batch_len: AtomicUsize,
    /// Set by `close`: drainers stop, dropping their jobs.
    closing: AtomicBool,
    /// Light jobs run so far (`Metrics::fs_blocking_ops`).
    light_jobs_run: AtomicU64,
}

impl LightJobs {
    /// Shutdown, step 1: drainers stop and drop their jobs; a job submitted
    /// from now on is dropped at once.
    pub(crate) fn close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// Run `job` on a blocking thread, batched with the other light jobs
    /// (see the module docs). A job the pool never runs (it shut down) is
    /// dropped: its owner learns it from what the job owned.
    ///
    /// `start_drainer(me)` starts drainer `me` on a blocking thread: a
    /// closure that calls `drain(me)` (the registry's `run_batched`).
    pub(crate) fn submit(&self, job: Job, start_drainer: impl FnOnce(usize)) {
        if self.closing.load(Ordering::Acquire) {
            return; // dropped: the pool is going
        }
        let mut batch = self.batch.lock();
        batch.jobs.push_back(job);
        self.batch_len.store(batch.jobs.len(), Ordering::Release);
        if batch.jobs.len() <= batch.free {
            return; // a free drainer (starting or lingering) takes it
        }
        if batch.running() >= MAX_DRAINERS {
            return; // the busy drainers get to it soon
        }
        let me = batch.add_drainer();
        drop(batch);
        start_drainer(me);
    }

    /// Light jobs run so far.
    pub(crate) fn light_jobs_run(&self) -> u64 {
        self.light_jobs_run.load(Ordering::Relaxed)
    }

    /// Drainer `me`: run light jobs until none comes for `LINGER`.
    pub(crate) fn drain(&self, me: usize) {
        let mut batch = self.batch.lock();
        loop {
            if self.closing.load(Ordering::Acquire) {
                batch.remove_drainer(me);
                self.batch_len.store(0, Ordering::Release);
                let jobs = std::mem::take(&mut batch.jobs);
                drop(batch);
                drop(jobs); // their owners see the pool gone
                return;
            }
            if let Some(job) = batch.jobs.pop_front() {
                self.batch_len.store(batch.jobs.len(), Ordering::Release);
                batch.slots[me] = Drainer::Busy(Instant::now());
                batch.free -= 1;
                drop(batch);
                // Counted before it runs: its owner, woken by it, sees it.
                self.light_jobs_run.fetch_add(1, Ordering::Relaxed);
                // A job catches its own panics (it is an operation and a
                // channel to its owner).
                job();
                batch = self.batch.lock();
                batch.slots[me] = Drainer::Free;
                batch.free += 1;
                continue;
            }
            // One drainer lingers at a time: more would spin on the
            // workers' cores for the same next job.
            let came = if batch.lingering {
                false
            } else {
                batch.lingering = true;
                drop(batch);
                let came = self.linger();
                batch = self.batch.lock();
                batch.lingering = false;
                came
            };
            if !came && batch.jobs.is_empty() {
                // Under the lock submitters read `free` under: a job pushed
                // after this starts a drainer of its own.
                batch.remove_drainer(me);
                return;
            }
        }
    }

    /// Wait up to `LINGER` for a light job; true if one came.
    fn linger(&self) -> bool {
        let start = Instant::now();
        loop {
            // Acquire: pairs with the submitter's Release store; the job
            // itself is read under the lock anyway.
            if self.batch_len.load(Ordering::Acquire) > 0 {
                return true;
            }
            if start.elapsed() >= LINGER {
                return false;
            }
            thread::yield_now();
        }
    }
}
