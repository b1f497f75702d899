//! The stall detector: [`Builder::on_stall`](crate::Builder::on_stall).
//!
//! The watcher thread (`scheduler/watcher.rs`) runs it as its `Look`: it
//! looks at every worker at each of its
//! ticks (20 us to 1 ms apart while any worker is awake; it parks while all
//! sleep). A worker publishes, in its own stats line, the id of the task it
//! is polling (`WorkerStats::begin_poll`); a look that finds the same poll
//! (same poll count, same task) as an earlier look knows that poll has run
//! at least since that earlier look, and reports it once when that is
//! longer than the threshold. Workers read no clock for this. The report's
//! spawn location is looked up in the table of live tasks then, once.
//!
//! # Invariants
//!
//! * One report per poll: a poll is identified by its worker and that
//!   worker's poll count, which moves at the start of every poll.
//! * `running_for` is a lower bound: the time since the first look that saw
//!   the poll. The poll began before that look and after the one before it,
//!   so it is short by at most one tick (1 ms).
//! * The handler runs on the watcher thread, never on a worker, under
//!   `catch_unwind`: a panicking handler is reported by the panic hook and
//!   the watcher goes on.

use crate::scheduler::registry::Registry;
use crate::scheduler::watcher::Look;
use crate::task::id::TaskId;
use crate::unwind::call_quietly;
use std::panic::Location;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A poll that has run longer than the threshold given to
/// [`Builder::on_stall`](crate::Builder::on_stall), reported while it
/// still runs.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Stall {
    /// The index of the worker running the poll.
    pub worker: usize,
    /// The task being polled.
    pub task: TaskId,
    /// Its name, if it was spawned with one
    /// ([`task::Builder::name`](crate::task::Builder::name)).
    pub name: Option<String>,
    /// Where that task was spawned.
    pub spawned_at: &'static Location<'static>,
    /// How long the poll has run so far (at least; short by at most the
    /// watcher's tick, 1 ms).
    pub running_for: Duration,
}

/// Where live task `task` was spawned, and its name if it has one (a walk
/// over the registry: only for a report).
fn spawn_site(
    registry: &Registry,
    task: TaskId,
) -> Option<(&'static Location<'static>, Option<String>)> {
    let mut found = None;
    registry.tasks().for_each_live(|header, name| {
        if header.id() == task && header.is_live_task() {
            found = Some((header.spawned_at(), name.map(|n| n.to_string())));
        }
    });
    found
}

/// What `Builder::on_stall` was given.
pub(crate) type StallHandler = Arc<dyn Fn(&Stall) + Send + Sync + 'static>;

#[derive(Clone)]
pub(crate) struct StallConfig {
    pub(crate) threshold: Duration,
    pub(crate) handler: StallHandler,
}

/// What the watcher last saw of one worker's poll.
#[derive(Clone, Copy)]
struct Seen {
    polls: u64,
    task: Option<TaskId>,
    since: Instant,
    reported: bool,
}

/// The watcher's stall-detecting state.
pub(crate) struct StallWatch {
    config: StallConfig,
    seen: Vec<Seen>,
}

impl StallWatch {
    /// A detector with `config`; it learns the pool's workers at its first
    /// look.
    pub(crate) fn new(config: StallConfig) -> StallWatch {
        StallWatch {
            config,
            seen: Vec::new(),
        }
    }
}

impl Look for StallWatch {
    /// Forget what was seen: the watcher parked, so every poll it saw has
    /// ended (every worker slept).
    fn reset(&mut self) {
        for seen in &mut self.seen {
            seen.polls = u64::MAX;
        }
    }

    /// One look at every worker; reports the polls that crossed the
    /// threshold since the last look.
    fn look(&mut self, registry: &Registry) {
        let now = Instant::now();
        if self.seen.is_empty() {
            let unseen = Seen {
                polls: u64::MAX,
                task: None,
                since: now,
                reported: false,
            };
            self.seen = vec![unseen; registry.num_workers()];
        }
        for (worker, seen) in self.seen.iter_mut().enumerate() {
            let (polls, task) = registry.worker_stats(worker).current_poll();
            if polls != seen.polls || task != seen.task {
                *seen = Seen {
                    polls,
                    task,
                    since: now,
                    reported: false,
                };
                continue;
            }
            let Some(task) = task else {
                continue;
            };
            let running_for = now.duration_since(seen.since);
            if !seen.reported && running_for >= self.config.threshold {
                seen.reported = true;
                // Where it was spawned: from its header, found in the
                // registry (workers publish only the id, to keep polls
                // cheap). A task whose poll ended meanwhile is not reported.
                let Some((spawned_at, name)) = spawn_site(registry, task) else {
                    continue;
                };
                registry.count_stall();
                let stall = Stall {
                    worker,
                    task,
                    name,
                    spawned_at,
                    running_for,
                };
                let handler = &self.config.handler;
                call_quietly(|| handler(&stall));
            }
        }
    }
}
