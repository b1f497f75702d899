//! `Pick`: how a seeded run picks the actor of each step among those that
//! can act (`SeedStrategy`), from the pool's one generator.
//!
//! # Invariants
//!
//! * Actors are numbered the same way at every step: logical worker `i` is
//!   `i`, the run's waiter (its `block_on` future) is `n`, the logical
//!   blocking thread `n + 1`.
//! * `Random` draws one number per step; `Pct` draws when it is made and,
//!   past its `steps`, one per step as `Random` does: a run's choices
//!   depend on the seed and the steps taken alone.

use crate::scheduler::worker::search::XorShift64Star;
use crate::seeded::pool_seed::SeedStrategy;

/// The actors a run can pick from: `n` workers, the waiter, the blocking
/// thread.
pub(crate) fn actors(workers: usize) -> usize {
    workers + 2
}

pub(crate) enum Pick {
    Random,
    /// PCT's state: each actor's priority (the highest that can act
    /// steps), the steps at which the actor that just stepped drops to a
    /// priority below every initial one, and the steps taken so far.
    Pct {
        priorities: Vec<u64>,
        /// Ascending; `changes[j]` lowers the stepping actor to `changes.len() - j`.
        changes: Vec<u64>,
        taken: u64,
        /// From this many steps on, the choice is uniform: a task that
        /// spins (yields until another acts) cannot starve that other for
        /// ever behind its higher priority.
        steps: u64,
    },
}

impl Pick {
    pub(crate) fn new(strategy: SeedStrategy, actors: usize, rng: &XorShift64Star) -> Pick {
        match strategy {
            SeedStrategy::Random => Pick::Random,
            SeedStrategy::Pct { depth, steps } => {
                let low = u64::from(depth.max(1));
                // Distinct initial priorities `low..low + actors`, in a
                // seeded order (Fisher-Yates).
                let mut priorities: Vec<u64> = (0..actors as u64).map(|p| low + p).collect();
                for i in (1..priorities.len()).rev() {
                    priorities.swap(i, rng.next_usize(i + 1));
                }
                let mut changes: Vec<u64> = (1..low)
                    .map(|_| rng.next_usize(steps.max(1).min(usize::MAX as u64) as usize) as u64)
                    .collect();
                changes.sort_unstable();
                Pick::Pct {
                    priorities,
                    changes,
                    taken: 0,
                    steps,
                }
            }
        }
    }

    /// The actor of the next step among `ready` (not empty).
    pub(crate) fn choose(&self, ready: &[usize], rng: &XorShift64Star) -> usize {
        match self {
            Pick::Pct { taken, steps, .. } if taken >= steps => ready[rng.next_usize(ready.len())],
            Pick::Random => ready[rng.next_usize(ready.len())],
            Pick::Pct { priorities, .. } => *ready
                .iter()
                .max_by_key(|&&a| priorities[a])
                .expect("a step has an actor"),
        }
    }

    /// `actor` took a step.
    pub(crate) fn stepped(&mut self, actor: usize) {
        if let Pick::Pct {
            priorities,
            changes,
            taken,
            ..
        } = self
        {
            let n = changes.len() as u64;
            for (j, &at) in changes.iter().enumerate() {
                if at == *taken {
                    priorities[actor] = n - j as u64;
                }
            }
            *taken += 1;
        }
    }
}
