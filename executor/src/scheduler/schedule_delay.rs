//! The load signal: how long a task waits between its wake and its poll
//! (`Metrics::schedule_delay`, `Handle::schedule_delay`), measured on one
//! sampled task at a time, as Go's scheduler measures its goroutines'
//! latency, and smoothed.
//!
//! A task carries no timestamp (its header has no room, and a clock read
//! per wake would cost every task). Instead a *sample* goes round:
//!
//! 1. Someone *arms* the sampler: the watcher at each of its looks (it
//!    runs while workers put tasks in their LIFO slots, which a busy pool's
//!    wakes do), every read of the signal (so a pool whose workers are
//!    stuck in long polls, or take all their work from queues, is sampled
//!    when someone asks), and the end of a sample that waited `REARM_OVER`
//!    or more (under load, one sample follows the other, so the signal
//!    stays fresh exactly while it is high).
//! 2. The next schedule of any task of the pool (a wake, a yield, a spawn)
//!    finds it armed, takes the sample: the task's id, and the time.
//! 3. The worker that runs that task's runnable (polled, or dropped after
//!    an abort) ends the sample: the delay feeds a running mean with a
//!    weight of 1/8 a sample (TCP's smoothed round-trip time).
//!
//! The hot paths pay a load and a compare each: a schedule reads whether the
//! sampler is armed, a run whether its task is the sampled one (callgrind:
//! 5 instructions a schedule and 4 a run, on `yield_many`). Clock reads
//! and stores happen once a sample: at most one a `REARM_OVER` under load.
//!
//! The signal answers "how long would a task woken now wait?": the smoothed
//! delay, or the age of the sample under way when that is longer (a pool
//! whose workers are all stuck in long polls reads a rising delay before the
//! sample ends). A pool that ran nothing for `FRESH` reads zero: its next
//! task meets an idle worker.
//!
//! Not part of the sleep protocol: nothing here blocks, parks or wakes
//! anyone, and a stale read only makes the figure a sample late. The
//! orderings below say what each read needs.

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A sample that waited this long or longer arms the next at once.
const REARM_OVER: Duration = Duration::from_micros(50);
/// The smoothed delay is reported while its last sample ended this
/// recently; after that the pool has been idle.
const FRESH: Duration = Duration::from_millis(100);

/// `state`: no sample under way and none asked for.
const IDLE: u64 = 0;
/// `state`: the next schedule takes a sample.
const ARMED: u64 = u64::MAX;
/// `state`: a schedule is writing its sample's time.
const TAKING: u64 = u64::MAX - 1;
/// `state`: a run is folding its sample into the mean.
const ENDING: u64 = u64::MAX - 2;

pub(crate) struct ScheduleDelay {
    /// `IDLE`, `ARMED`, `TAKING`, `ENDING`, or the id of the sampled task
    /// (task ids start at 1 and never reach `ENDING`).
    state: AtomicU64,
    /// When the sampled task was scheduled, in ns since `epoch`.
    since: AtomicU64,
    /// The smoothed delay, in ns.
    smoothed: AtomicU64,
    /// When the last sample ended, in ns since `epoch`.
    last_end: AtomicU64,
    epoch: Instant,
}

impl ScheduleDelay {
    pub(crate) fn new() -> ScheduleDelay {
        ScheduleDelay {
            state: AtomicU64::new(IDLE),
            since: AtomicU64::new(0),
            smoothed: AtomicU64::new(0),
            last_end: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Ask for a sample unless one is under way.
    #[inline]
    pub(crate) fn arm(&self) {
        // Relaxed: whoever takes the sample writes its own data after; a
        // stale read only arms a sample later.
        if self.state.load(Ordering::Relaxed) == IDLE {
            let _ = self
                .state
                .compare_exchange(IDLE, ARMED, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// A task was handed to a queue: take the sample if armed (`id`, the
    /// task's id, is asked for only then).
    #[inline]
    pub(crate) fn scheduled(&self, id: impl FnOnce() -> u64) {
        // Relaxed: the compare-exchange below decides who takes it.
        if self.state.load(Ordering::Relaxed) == ARMED {
            self.take(id());
        }
    }

    #[cold]
    fn take(&self, id: u64) {
        // Acquire: `ARMED` was written by the last end's release store, or
        // by a read-modify-write in the release sequence of its `IDLE`, so
        // its mean is seen here and, through the `Release` below, by this
        // sample's end.
        if self
            .state
            .compare_exchange(ARMED, TAKING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            self.since.store(self.now(), Ordering::Relaxed);
            // Release: whoever reads the id (`ran`, `delay`) reads this
            // sample's `since`.
            self.state.store(id, Ordering::Release);
        }
    }

    /// A worker is about to run task `id`'s runnable.
    #[inline]
    pub(crate) fn ran(&self, id: u64) {
        // Relaxed, then the fence below on a match: the common case is a
        // plain load.
        if self.state.load(Ordering::Relaxed) == id {
            self.end(id);
        }
    }

    #[cold]
    fn end(&self, id: u64) {
        // Acquire (with the Release store in `take`): `since` is this
        // sample's.
        fence(Ordering::Acquire);
        let since = self.since.load(Ordering::Relaxed);
        // Only the winner of this exchange touches the mean, and no sample
        // is taken until it is done (`arm` arms only from `IDLE`): one
        // writer.
        if self
            .state
            .compare_exchange(id, ENDING, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            let now = self.now();
            let delay = now.saturating_sub(since);
            let old = self.smoothed.load(Ordering::Relaxed);
            let new = if self.last_end.load(Ordering::Relaxed) == 0 {
                delay
            } else {
                // old + (delay - old) / 8, in signed arithmetic.
                (old as i64 + (delay as i64 - old as i64) / 8) as u64
            };
            self.smoothed.store(new, Ordering::Relaxed);
            self.last_end.store(now.max(1), Ordering::Relaxed);
            // Release: the next sample's end reads this mean after it.
            // Under load the next sample is asked for at once.
            let next = if delay >= REARM_OVER.as_nanos() as u64 {
                ARMED
            } else {
                IDLE
            };
            self.state.store(next, Ordering::Release);
        }
    }

    /// How long a task woken now would wait (see the module docs); and
    /// ask for a sample, for the next read.
    pub(crate) fn delay(&self) -> Duration {
        self.arm();
        let now = self.now();
        // Acquire (with the Release store in `take`): a sampled id comes
        // with its `since`.
        let state = self.state.load(Ordering::Acquire);
        let waiting = match state {
            IDLE | ARMED | TAKING | ENDING => 0,
            _ => now.saturating_sub(self.since.load(Ordering::Relaxed)),
        };
        let last_end = self.last_end.load(Ordering::Relaxed);
        let smoothed = if last_end != 0 && now.saturating_sub(last_end) < FRESH.as_nanos() as u64 {
            self.smoothed.load(Ordering::Relaxed)
        } else {
            0
        };
        Duration::from_nanos(waiting.max(smoothed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_taken_only_when_armed_and_ended_by_its_own_task() {
        let d = ScheduleDelay::new();
        d.scheduled(|| 5);
        assert_eq!(d.state.load(Ordering::Relaxed), IDLE, "not armed");
        d.arm();
        d.scheduled(|| 5);
        d.scheduled(|| 6); // a second schedule does not replace it
        assert_eq!(d.state.load(Ordering::Relaxed), 5);
        d.arm(); // one sample at a time
        assert_eq!(d.state.load(Ordering::Relaxed), 5);
        std::thread::sleep(Duration::from_millis(20));
        assert!(d.delay() >= Duration::from_millis(20), "the age shows");
        d.ran(6);
        assert_eq!(d.state.load(Ordering::Relaxed), 5, "another task's run");
        d.ran(5);
        assert_eq!(
            d.state.load(Ordering::Relaxed),
            ARMED,
            "a sample past REARM_OVER asks for the next"
        );
        let first = d.delay();
        assert!(first >= Duration::from_millis(20), "{first:?}");
        // A quick sample moves the mean an eighth of the way, and asks for
        // no other.
        d.scheduled(|| 7);
        d.ran(7);
        assert_eq!(d.state.load(Ordering::Relaxed), IDLE);
        let second = d.delay();
        assert!(second < first && second > first * 3 / 4, "{second:?}");
    }

    #[test]
    fn an_idle_pool_reads_zero() {
        let d = ScheduleDelay::new();
        assert_eq!(d.delay(), Duration::ZERO);
        assert_eq!(d.state.load(Ordering::Relaxed), ARMED, "a read arms");
        d.scheduled(|| 1);
        std::thread::sleep(Duration::from_millis(2));
        d.ran(1);
        assert!(d.delay() > Duration::ZERO);
        std::thread::sleep(FRESH + Duration::from_millis(20));
        assert_eq!(d.delay(), Duration::ZERO, "stale after FRESH");
    }
}
