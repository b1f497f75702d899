//! Loom models of the sleep protocol (with a sleeper on its condvar, one
//! blocked in a stand-in I/O driver, and one asleep in a stand-in guest
//! runtime), the latches, `block_on`, the inbox of `spawn_local` wakes,
//! the jump of a paused clock, the task shares that keep a pool alive and
//! the hand-over of an idle worker's timers to the driver's sleeper.
//!
//! Built only under `--cfg loom`, where `crate::sync` is loom's: every
//! atomic, fence, lock and condvar of the protocol code below is explored
//! interleaving by interleaving. Run them with
//!
//! ```text
//! scripts/loom            # every model, then the teeth check
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p pool --release --lib models -- --nocapture
//! ```
//!
//! Each model prints how many interleavings it explored. A lost wakeup shows
//! as loom's "deadlock" panic: a thread blocked forever with nobody left to
//! wake it.
//!
//! The queues are modelled by loom atomics written with `Release` and read
//! with `Acquire` (weaker than crossbeam's, which the protocol must not rely
//! on), so the fences are what the models check. The protocol has seven
//! seq-cst fences (the poster's, the sleeper's, the finder's, and the
//! pair of a sleeper that found the driver held and of the driver's
//! releaser in `sleep/mod.rs`, two in `sleep/watcher_park.rs`), and
//! `scripts/loom` checks that the models have teeth in eleven ways (a loom deadlock aborts
//! the process, so each is checked from outside): `POOL_LOOM_TOOTH=skip_poster_fence` or `POOL_LOOM_TOOTH=skip_sleeper_fence` remove one fence, and loom must find the
//! lost wakeup in `injected_job_while_the_worker_falls_asleep_is_never_lost`
//! (the condvar sleeper's and the driver sleeper's); `POOL_LOOM_TOOTH=skip_finder_fence` removes the finder's, and loom must find the
//! stranded job; `POOL_LOOM_TOOTH=watcher_looks_first` puts the watcher's
//! read of the counters before it announces itself parked, and loom must
//! find it asleep through a poll; `POOL_LOOM_TOOTH=skip_inbox_check` leaves
//! a worker's inbox out of its final check, and loom must find the
//! `spawn_local` task woken from another thread lost (`inbox.rs`); `POOL_LOOM_TOOTH=split_guest_waker` has a sleeper in a guest runtime store its waker
//! apart from its read of its flag, and loom must find the wake lost
//! (`guest_runtime.rs`); `POOL_LOOM_TOOTH=skip_missed_fence` removes the fence of
//! a sleeper that found the driver held, and loom must find readiness
//! that nobody watches (`driver.rs`); `POOL_LOOM_TOOTH=skip_quiet_unpark` and `POOL_LOOM_TOOTH=sleeper_adds_itself` break the paused clock's jump, and loom
//! must find it missed (a deadlock) or early (`paused_jump.rs`); `POOL_LOOM_TOOTH=relaxed_shares` relaxes a task share's give-back, and loom
//! must find a holder's read of the pool racing its free (`shares.rs`); `POOL_LOOM_TOOTH=leave_reads_first` has an idle worker read the driver
//! sleeper's wait before it hands its timers over, and loom must find a
//! timer waited for past its deadline (`timer_hand_over.rs`).

pub(crate) mod block_on;
pub(crate) mod counters;
pub(crate) mod driver;
pub(crate) mod guest_runtime;
pub(crate) mod inbox;
pub(crate) mod join;
pub(crate) mod latch;
pub(crate) mod park;
pub(crate) mod paused_jump;
pub(crate) mod shares;
pub(crate) mod sleep;
pub(crate) mod timer_hand_over;
pub(crate) mod watcher;

use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts the interleavings a model explores, and reports them when dropped.
pub(super) struct Explored {
    name: &'static str,
    count: &'static AtomicUsize,
}

impl Explored {
    pub(super) fn new(name: &'static str, count: &'static AtomicUsize) -> Self {
        count.store(0, Ordering::Relaxed);
        Explored { name, count }
    }
}

impl Drop for Explored {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            eprintln!(
                "loom model {}: {} interleavings explored",
                self.name,
                self.count.load(Ordering::Relaxed)
            );
        }
    }
}

/// Run `f` as a loom model named `name`, counting its interleavings.
pub(super) fn model(
    name: &'static str,
    count: &'static AtomicUsize,
    f: impl Fn() + Sync + Send + 'static,
) {
    model_bounded(name, count, usize::MAX, f);
}

/// `model`, with at most `bound` preemptions whatever
/// `LOOM_MAX_PREEMPTIONS` says: for a model of three busy threads whose
/// third preemption multiplies its run time past what CI can spend (each
/// such model says why its bound is enough).
pub(super) fn model_bounded(
    name: &'static str,
    count: &'static AtomicUsize,
    bound: usize,
    f: impl Fn() + Sync + Send + 'static,
) {
    let explored = Explored::new(name, count);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(bound, |b| b.min(bound)));
    builder.check(move || {
        count.fetch_add(1, Ordering::Relaxed);
        f();
    });
    drop(explored);
}
