//! The poll-time histogram: [`Histogram`], [`Bucket`], and the per-worker
//! counts it sums (`PollTimes`).
//!
//! # Invariants
//!
//! * The buckets are fixed, log-scale: bucket `k` (for `k < BUCKETS - 1`)
//!   counts the polls that took more than `2^(k-1)` us and at most `2^k` us
//!   (bucket 0: at most 1 us); the last counts the rest (`le` is
//!   `Duration::MAX`). 22 buckets span 1 us to about a second, the range
//!   from a trivial poll to one the stall detector reports, at a factor of
//!   two apart, and a bucket's index is a `leading_zeros`, no search.
//! * Each worker counts into its own `PollTimes` and is its only writer (a
//!   relaxed load and store, as `WorkerStats::bump_owned`); a snapshot sums
//!   them. Only workers poll tasks, so there is no shared block.
//! * Off (the default, `Builder::poll_time_histogram`) a worker neither
//!   reads the clock for it nor touches these counters: every count is 0.
//! * On, a poll is timed with two readings of the CPU's tick counter
//!   (`ticks.rs`: `rdtsc` on x86_64, 10-13 ns a reading against
//!   25-35 ns for `Instant::now` on the machines measured), turned into
//!   nanoseconds at a rate measured once, over 200 us, when the pool is
//!   built (an error of a few parts in 100 000, nothing against buckets a
//!   factor of two apart). The kernel keeps time with the same counter
//!   where it is invariant and synchronized across CPUs; a reading that
//!   goes back across a migration counts as 0.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The number of buckets: 1 us, 2 us, ... 2^20 us (about 1.05 s), then the
/// rest.
pub(crate) const BUCKETS: usize = 22;

/// How long a task's polls took, counted by bucket: the
/// [poll-time histogram](crate::Pool::poll_time_histogram) of a pool built
/// with [`Builder::poll_time_histogram(true)`](crate::Builder::poll_time_histogram).
///
/// The buckets are log-scale, a factor of two apart: at most 1 us, 2 us,
/// 4 us, ... 2^20 us (about 1.05 s), then the rest (whose `le` is
/// [`Duration::MAX`]). Each bucket counts its own polls only (not the
/// smaller ones too, as Prometheus' cumulative buckets do).
///
/// # Examples
///
/// A poll is counted when it returns, a moment after the task's
/// `JoinHandle` may have completed.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let pool = pool::Builder::new()
///     .worker_threads(1)
///     .poll_time_histogram(true)
///     .build()
///     .unwrap();
/// pool.block_on(pool.spawn(async {
///     let start = Instant::now();
///     while start.elapsed() < Duration::from_millis(3) {} // a 3 ms poll
/// }))
/// .unwrap();
/// let mut histogram = pool.poll_time_histogram();
/// while histogram.total() == 0 {
///     std::thread::yield_now();
///     histogram = pool.poll_time_histogram();
/// }
/// let long = histogram
///     .buckets
///     .iter()
///     .filter(|b| b.le > Duration::from_millis(2))
///     .map(|b| b.count)
///     .sum::<u64>();
/// assert_eq!(long, 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Histogram {
    /// The buckets, in ascending order of `le`; the last one's is
    /// [`Duration::MAX`].
    pub buckets: Vec<Bucket>,
}

/// One bucket of a [`Histogram`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Bucket {
    /// The bucket's upper bound: it counts polls that took at most this
    /// long, and longer than the previous bucket's bound.
    pub le: Duration,
    /// The polls in this bucket alone.
    pub count: u64,
}

impl Histogram {
    /// The sum of every bucket's count.
    pub fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.count).sum()
    }
}

/// The upper bound of bucket `k`.
fn bound(k: usize) -> Duration {
    if k + 1 == BUCKETS {
        Duration::MAX
    } else {
        Duration::from_micros(1 << k)
    }
}

/// The bucket of a poll that took `ns` nanoseconds.
#[inline]
pub(crate) fn bucket_of(ns: u64) -> usize {
    // Whole microseconds, rounded up: a poll of 1.5 us is not at most 1 us.
    let us = ns.div_ceil(1000);
    if us <= 1 {
        return 0;
    }
    // The smallest k with 2^k >= us.
    let k = (u64::BITS - (us - 1).leading_zeros()) as usize;
    k.min(BUCKETS - 1)
}

/// One worker's poll-time counts, and the time of its polls in all (the
/// `_sum` of a Prometheus histogram).
#[derive(Debug, Default)]
pub(crate) struct PollTimes {
    counts: [AtomicU64; BUCKETS],
    total_ns: AtomicU64,
}

impl PollTimes {
    /// Owner only: count a poll that took `ns` nanoseconds.
    #[inline]
    pub(crate) fn record(&self, ns: u64) {
        // Relaxed loads and stores: statistics with one writer (module
        // invariants).
        let bump =
            |c: &AtomicU64, n: u64| c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        bump(&self.counts[bucket_of(ns)], 1);
        bump(&self.total_ns, ns);
    }

    /// Add these counts into `sums` (one per bucket), and return the time
    /// of these polls in all, in nanoseconds.
    pub(crate) fn add_to(&self, sums: &mut [u64; BUCKETS]) -> u64 {
        for (sum, c) in sums.iter_mut().zip(&self.counts) {
            *sum += c.load(Ordering::Relaxed);
        }
        self.total_ns.load(Ordering::Relaxed)
    }
}

/// The histogram of `sums`, one count per bucket.
pub(crate) fn histogram(sums: &[u64; BUCKETS]) -> Histogram {
    Histogram {
        buckets: sums
            .iter()
            .enumerate()
            .map(|(k, &count)| Bucket {
                le: bound(k),
                count,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_lands_in_the_smallest_bucket_that_holds_it() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1_000), 0);
        assert_eq!(bucket_of(1_001), 1);
        assert_eq!(bucket_of(2_000), 1);
        assert_eq!(bucket_of(2_001), 2);
        assert_eq!(bucket_of(15_000_000), 14); // 15 ms <= 2^14 us = 16.4 ms
        assert_eq!(bucket_of(1 << 40), BUCKETS - 1);
        for ns in [1, 999, 1_000, 1_001, 3_500, 70_000, 15_000_000, 900_000_000] {
            let k = bucket_of(ns);
            let d = Duration::from_nanos(ns);
            assert!(d <= bound(k), "{ns} ns above bucket {k}");
            assert!(k == 0 || d > bound(k - 1), "{ns} ns fits bucket {}", k - 1);
        }
    }

    #[test]
    fn the_buckets_ascend_and_end_at_max() {
        let h = histogram(&[0; BUCKETS]);
        assert_eq!(h.buckets.len(), BUCKETS);
        assert!(h.buckets.windows(2).all(|w| w[0].le < w[1].le));
        assert_eq!(h.buckets[BUCKETS - 1].le, Duration::MAX);
        assert_eq!(h.buckets[0].le, Duration::from_micros(1));
    }
}
