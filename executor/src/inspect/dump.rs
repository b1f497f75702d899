//! The live-task dump: [`Pool::tasks`](crate::Pool::tasks) and
//! [`Handle::tasks`](crate::Handle::tasks).
//!
//! # Invariants
//!
//! * The dump reads each task's header under its registry shard's lock:
//!   the entry's waker holds a reference to the task, so the header it
//!   reads is alive (`task::header_of`). It never wakes, polls or drops a
//!   task, and takes one shard lock at a time.
//! * A task is listed from its spawn until its future is dropped (`DONE`):
//!   a finished task whose registry entry waits for its removal batch is
//!   skipped. Blocking closures are not listed: they are not tasks of the
//!   workers.
//! * The state is a snapshot assembled from separate reads (the workers'
//!   current tasks first, then each header): a task that changes state
//!   meanwhile shows one of the states it was in.

use crate::scheduler::registry::Registry;
use crate::task::coarse_clock::COARSE_TICK_NS;
use crate::task::id::TaskId;
use std::fmt;
use std::panic::Location;
use std::time::Duration;

/// One live task, as [`Pool::tasks`](crate::Pool::tasks) saw it.
///
/// `Display` gives one line, for a log:
/// `task 7 idle, 3 polls, age 1.502s, spawned at src/main.rs:12:5`, with
/// its name after the id if it has one: ``task 7 `fetcher` idle, ...``.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The task's id (as [`JoinHandle::id`](crate::JoinHandle::id)).
    pub id: TaskId,
    /// Its name, if it was spawned with one
    /// ([`task::Builder::name`](crate::task::Builder::name)).
    pub name: Option<String>,
    /// Where `spawn` was called.
    pub spawned_at: &'static Location<'static>,
    /// What the task is doing.
    pub state: TaskState,
    /// Polls so far (they saturate at 2^30 - 1).
    pub polls: u64,
    /// Time since the spawn, to the coarse clock's tick (the kernel's, 1-10
    /// ms, counted in 1/256 s); taken modulo 97 days.
    pub age: Duration,
}

/// What a live task is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskState {
    /// Woken (or just spawned) and waiting in a queue for a worker.
    Scheduled,
    /// Being polled by worker `worker` (its index) right now.
    Running {
        /// The worker's index.
        worker: usize,
    },
    /// Waiting for a wake that has not come.
    Idle,
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskState::Scheduled => f.write_str("scheduled"),
            TaskState::Running { worker } => write!(f, "running on worker {worker}"),
            TaskState::Idle => f.write_str("idle"),
        }
    }
}

impl fmt::Display for TaskInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task {}", self.id)?;
        if let Some(name) = &self.name {
            write!(f, " `{name}`")?;
        }
        write!(
            f,
            " {}, {} poll{}, age {:.3}s, spawned at {}",
            self.state,
            self.polls,
            if self.polls == 1 { "" } else { "s" },
            self.age.as_secs_f64(),
            self.spawned_at
        )
    }
}

/// A dump of live tasks that reads well in a log: a summary line, then
/// one line per task, running tasks first, then scheduled, then idle, the
/// oldest first within each.
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let _idle = pool.spawn(std::future::pending::<()>());
/// # while pool.tasks().iter().any(|t| t.state != pool::TaskState::Idle) { std::thread::yield_now(); }
/// let text = pool::TaskDump(&pool.tasks()).to_string();
/// assert!(text.starts_with("1 live task (0 running, 0 scheduled, 1 idle)"));
/// assert!(text.contains("idle, 1 poll, age"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TaskDump<'a>(pub &'a [TaskInfo]);

impl fmt::Display for TaskDump<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = |pick: fn(&TaskState) -> bool| self.0.iter().filter(|t| pick(&t.state)).count();
        let running = count(|s| matches!(s, TaskState::Running { .. }));
        let scheduled = count(|s| *s == TaskState::Scheduled);
        let idle = count(|s| *s == TaskState::Idle);
        write!(
            f,
            "{} live task{} ({running} running, {scheduled} scheduled, {idle} idle)",
            self.0.len(),
            if self.0.len() == 1 { "" } else { "s" },
        )?;
        let mut order: Vec<&TaskInfo> = self.0.iter().collect();
        let rank = |s: &TaskState| match s {
            TaskState::Running { .. } => 0,
            TaskState::Scheduled => 1,
            TaskState::Idle => 2,
        };
        order.sort_by_key(|t| (rank(&t.state), std::cmp::Reverse(t.age), t.id));
        for task in order {
            write!(f, "\n  {task}")?;
        }
        Ok(())
    }
}

/// Every live task of `registry`'s pool, ordered by id.
pub(crate) fn collect(registry: &Registry) -> Vec<TaskInfo> {
    let running: Vec<Option<TaskId>> = (0..registry.num_workers())
        .map(|w| registry.worker_stats(w).running_task())
        .collect();
    let now = registry.clock().now();
    let mut tasks = Vec::new();
    registry.tasks().for_each_live(|header, name| {
        if !header.is_live_task() {
            return;
        }
        let (scheduled, polls) = header.activity();
        let state = match running.iter().position(|r| *r == Some(header.id())) {
            Some(worker) => TaskState::Running { worker },
            None if scheduled => TaskState::Scheduled,
            None => TaskState::Idle,
        };
        tasks.push(TaskInfo {
            id: header.id(),
            name: name.map(|n| n.to_string()),
            spawned_at: header.spawned_at(),
            state,
            polls: polls.into(),
            age: Duration::from_nanos(u64::from(header.age(now)) * COARSE_TICK_NS),
        });
    });
    tasks.sort_by_key(|t| t.id);
    tasks
}
