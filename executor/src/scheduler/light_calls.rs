//! The light calls of `pool::fs` on the blocking engine: one file operation
//! each, not a task. They go onto a queue of their own, `Batch`, which
//! *drainers* empty. A drainer is one blocking task that runs calls until
//! the queue is empty and, if no other drainer is lingering, stays empty
//! for `LINGER`; so a burst of small operations, or one task's operations
//! back to back, pays one thread hand-off rather than one each. A new
//! drainer starts only while the queue holds more calls than there are free
//! drainers, up to `MAX_DRAINERS` running recent calls. The registry starts
//! a drainer as a `spawn_blocking` closure (`run_batched`, `spawn.rs`,
//! `scheduler/spawn.rs`): this file knows nothing of the registry.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// A light call: one file operation (`pool::fs`), run by a drainer.
pub(crate) type LightCall = Box<dyn FnOnce() + Send>;

/// The most drainers at once that run calls started less than `STUCK` ago:
/// enough to keep a device's queue full with positional reads in flight,
/// few enough that a burst does not start a thread per call. A drainer whose
/// call has run for `STUCK` (a FIFO's open waiting for its other end, a
/// hung network file system) does not count, so such calls never starve the
/// queue behind them (while calls keep coming: the check is made at each
/// submission).
const MAX_DRAINERS: usize = 16;

/// See `MAX_DRAINERS`.
const STUCK: Duration = Duration::from_millis(10);

/// How long a drainer whose queue emptied waits for the next call before it
/// ends: about one task's turn around (a wake, a poll, the next
/// operation's submission), so a task's operations back to back find it.
const LINGER: Duration = Duration::from_micros(50);

/// The queue of light calls and the drainers emptying it.
#[derive(Default)]
struct Batch {
    calls: VecDeque<LightCall>,
    /// The drainers, by slot (a drainer keeps its slot while it lives).
    slots: Vec<Drainer>,
    /// Drainers not running a call (starting, or lingering): each takes a
    /// queued call without a new thread hand-off.
    free: usize,
    /// A drainer is waiting `LINGER` for the next call.
    lingering: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Drainer {
    Vacant,
    Free,
    /// Running a call since then.
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

    /// Drainers free, or running a call started less than `STUCK` ago.
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

/// The light calls of one pool and their drainers.
#[derive(Default)]
pub(crate) struct LightCalls {
    batch: Mutex<Batch>,
    /// `batch.calls.len()`, for a lingering drainer to watch without the
    /// lock (written under it).
    batch_len: AtomicUsize,
    /// Set by `close`: drainers stop, dropping their calls.
    closing: AtomicBool,
    /// Light calls run so far (`Metrics::fs_blocking_ops`).
    light_calls_run: AtomicU64,
}

impl LightCalls {
    /// Shutdown, step 1: drainers stop and drop their calls; a call submitted
    /// from now on is dropped at once.
    pub(crate) fn close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// Run `call` on a blocking thread, batched with the other light calls
    /// (see the module docs). A call the pool never runs (it shut down) is
    /// dropped: its owner learns it from what the call owned.
    ///
    /// `start_drainer(me)` starts drainer `me` on a blocking thread: a
    /// closure that calls `drain(me)` (the registry's `run_batched`).
    pub(crate) fn submit(&self, call: LightCall, start_drainer: impl FnOnce(usize)) {
        if self.closing.load(Ordering::Acquire) {
            return; // dropped: the pool is going
        }
        let mut batch = self.batch.lock();
        batch.calls.push_back(call);
        self.batch_len.store(batch.calls.len(), Ordering::Release);
        if batch.calls.len() <= batch.free {
            return; // a free drainer (starting or lingering) takes it
        }
        if batch.running() >= MAX_DRAINERS {
            return; // the busy drainers get to it soon
        }
        let me = batch.add_drainer();
        drop(batch);
        start_drainer(me);
    }

    /// Light calls run so far.
    pub(crate) fn light_calls_run(&self) -> u64 {
        self.light_calls_run.load(Ordering::Relaxed)
    }

    /// Drainer `me`: run light calls until none comes for `LINGER`.
    pub(crate) fn drain(&self, me: usize) {
        let mut batch = self.batch.lock();
        loop {
            if self.closing.load(Ordering::Acquire) {
                batch.remove_drainer(me);
                self.batch_len.store(0, Ordering::Release);
                let calls = std::mem::take(&mut batch.calls);
                drop(batch);
                drop(calls); // their owners see the pool gone
                return;
            }
            if let Some(call) = batch.calls.pop_front() {
                self.batch_len.store(batch.calls.len(), Ordering::Release);
                batch.slots[me] = Drainer::Busy(Instant::now());
                batch.free -= 1;
                drop(batch);
                // Counted before it runs: its owner, woken by it, sees it.
                self.light_calls_run.fetch_add(1, Ordering::Relaxed);
                // A call catches its own panics (it is an operation and a
                // channel to its owner).
                call();
                batch = self.batch.lock();
                batch.slots[me] = Drainer::Free;
                batch.free += 1;
                continue;
            }
            // One drainer lingers at a time: more would spin on the
            // workers' cores for the same next call.
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
            if !came && batch.calls.is_empty() {
                // Under the lock submitters read `free` under: a call pushed
                // after this starts a drainer of its own.
                batch.remove_drainer(me);
                return;
            }
        }
    }

    /// Wait up to `LINGER` for a light call; true if one came.
    fn linger(&self) -> bool {
        let start = Instant::now();
        loop {
            // Acquire: pairs with the submitter's Release store; the call
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
