//! The coarse clock of task ages: `coarse_ticks`, and `CoarseClock`, one
//! pool's published reading of it.
//!
//! # Invariants
//!
//! * A task's age comes from `coarse_ticks`, kept in 32 bits of 1/256 s:
//!   exact to the kernel's tick (1-10 ms), taken modulo 194 days (a task's
//!   header keeps half of it in 30 bits: its age is modulo 97 days). A spawn
//!   reads it from its pool's `CoarseClock`, which the watcher publishes at
//!   every look while it runs (at most a look, 1 ms, behind; the watcher
//!   runs whenever a worker spawned locally) and withdraws before it parks;
//!   with nothing published, the spawn reads the clock itself. (A clock
//!   read per spawn cost spawn_many_local 10% of its time.)
//! * The clock is a statistic, never protocol state: `Relaxed` throughout.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

/// `CLOCK_MONOTONIC_COARSE`: the kernel tick's resolution (1-10 ms), a few
/// nanoseconds a reading.
#[cfg(target_os = "linux")]
#[inline]
fn coarse_timespec() -> libc::timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec`, which `ts` is.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts
}

/// The same coarse clock in nanoseconds (`tokio-compat`: a busy worker's
/// periodic turn of its runtime, where `Instant::now` every 61 searches
/// cost yield_many 3% of a worker's time).
#[cfg(all(target_os = "linux", feature = "tokio-compat"))]
#[inline]
pub(crate) fn coarse_now_ns() -> u64 {
    let ts = coarse_timespec();
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Ticks of a coarse monotonic clock, for task ages: 1/256 s
/// (`COARSE_TICK_NS`), modulo 2^32 (194 days), from
/// `CLOCK_MONOTONIC_COARSE` on Linux (the kernel tick's resolution, 1-10
/// ms; a few nanoseconds a reading, no division), else `Instant`.
#[inline]
pub(crate) fn coarse_ticks() -> u32 {
    #[cfg(target_os = "linux")]
    {
        let ts = coarse_timespec();
        // tv_nsec * 256 / 10^9 without a division: 1099 / 2^32 is 256 / 10^9
        // to 0.05%, and stays below 256 for tv_nsec < 10^9.
        ((ts.tv_sec as u64) << 8 | (ts.tv_nsec as u64 * 1099) >> 32) as u32
    }
    #[cfg(not(target_os = "linux"))]
    {
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let elapsed = EPOCH.get_or_init(std::time::Instant::now).elapsed();
        (elapsed.as_secs() << 8 | u64::from(elapsed.subsec_nanos()) * 1099 >> 32) as u32
    }
}

/// A pool's clock for task ages: `coarse_ticks` as its watcher last
/// published it while the pool was busy (so a spawn costs one relaxed load,
/// no clock read), else read afresh. Bit 0 of the word says "published".
#[derive(Debug, Default)]
pub(crate) struct CoarseClock {
    word: CachePadded<AtomicU64>,
}

impl CoarseClock {
    /// `coarse_ticks`, at most one watcher look (1 ms) old.
    #[inline(always)]
    pub(crate) fn now(&self) -> u32 {
        // Relaxed: a statistic (see the module invariants).
        let word = self.word.load(Ordering::Relaxed);
        if word & 1 != 0 {
            (word >> 1) as u32
        } else {
            coarse_ticks()
        }
    }

    /// Watcher, at each look while any worker is awake.
    pub(crate) fn publish(&self) {
        self.word
            .store(u64::from(coarse_ticks()) << 1 | 1, Ordering::Relaxed);
    }

    /// Watcher, before it parks or returns: spawns read the clock again.
    pub(crate) fn withdraw(&self) {
        self.word.store(0, Ordering::Relaxed);
    }
}

/// The length of one `coarse_ticks` tick, 1/256 s, in nanoseconds.
pub(crate) const COARSE_TICK_NS: u64 = 1_000_000_000 / 256;
