//! The CPU's tick counter, which the worker timeline, the poll-time
//! histogram and the console's clock read: `ticks` (`rdtsc` on x86_64,
//! 10-13 ns a reading against 25-35 ns for `Instant::now` on the machines
//! measured; `Instant` elsewhere) and `TickRate`, its rate measured once.
//! The busy time of `metrics.rs` reads `Instant` instead (its totals add up
//! exactly and it is read per busy period, not per poll).

use std::time::{Duration, Instant};

/// A reading of the CPU's tick counter.
#[inline]
pub(crate) fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no preconditions; every x86_64 CPU has it.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// The tick counter's rate, measured against `Instant` once: turns two
/// readings of `ticks` into nanoseconds (the poll-time histogram's clock,
/// and the console's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TickRate {
    /// Nanoseconds per tick, in 32.32 fixed point.
    ns_per_tick: u64,
}

/// `Instant::now` and the tick counter read at one moment: the tick reading
/// is the midpoint of two taken around the `Instant` one, from the tightest
/// of three such pairs. Read one after the other, a slow `Instant::now`
/// (its first call, an interrupt) put microseconds between them, a percent
/// of the calibration's 200 us (the clock then read 20.36 ms for 20.09).
fn paired_reading() -> (Instant, u64) {
    let mut best: Option<(u64, Instant, u64)> = None;
    for _ in 0..3 {
        let before = ticks();
        let now = Instant::now();
        let width = ticks().wrapping_sub(before);
        if best.is_none_or(|(w, _, _)| width < w) {
            best = Some((width, now, before.wrapping_add(width / 2)));
        }
    }
    let (_, now, mid) = best.expect("three readings were taken");
    (now, mid)
}

/// How long the rate of the tick counter is measured.
const CALIBRATION: Duration = Duration::from_micros(200);

impl TickRate {
    /// Measure the tick counter's rate against `Instant` (a 200 us spin,
    /// once, when a pool that times its polls is built).
    pub(crate) fn calibrate() -> TickRate {
        if !cfg!(target_arch = "x86_64") {
            return TickRate {
                ns_per_tick: 1 << 32,
            };
        }
        let (start, started) = paired_reading();
        loop {
            if start.elapsed() >= CALIBRATION {
                let (end, ended) = paired_reading();
                let elapsed = end.duration_since(start);
                let spent = ended.wrapping_sub(started).max(1);
                let q = (elapsed.as_nanos() << 32) / u128::from(spent);
                return TickRate {
                    ns_per_tick: u64::try_from(q).unwrap_or(u64::MAX).max(1),
                };
            }
            std::hint::spin_loop();
        }
    }

    /// A reading, for `ns_since`.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        ticks()
    }

    /// Nanoseconds since the reading `start`.
    #[inline]
    pub(crate) fn ns_since(&self, start: u64) -> u64 {
        let elapsed = ticks().saturating_sub(start);
        ((u128::from(elapsed) * u128::from(self.ns_per_tick)) >> 32) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::TickRate;
    use std::time::{Duration, Instant};

    #[test]
    fn the_tick_rate_agrees_with_instant() {
        let clock = TickRate::calibrate();
        let (start, ticks) = (Instant::now(), clock.now());
        std::thread::sleep(Duration::from_millis(20));
        let (ns, real) = (clock.ns_since(ticks), start.elapsed().as_nanos() as u64);
        assert!(
            ns.abs_diff(real) < real / 100,
            "{ns} ns by ticks, {real} ns by Instant"
        );
    }
}
