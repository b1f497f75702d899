//! Seeing inside a pool: what the workers record (the counters of
//! `metrics.rs`, the poll times, the timeline, tokio-console's task table)
//! and what reads it (the metrics snapshot, the live-task dump, the stall
//! detector, which runs on the watcher thread as its `Look`,
//! `scheduler/watcher.rs`, and tokio-console's server). On the runtime's
//! floor, beside the scheduler. See `README.md` here for what each costs
//! and how to read a timeline.
//!
//! What every task carries lives on the floors below: task ids and the
//! coarse clock of task ages in `task/` (`task/id.rs`,
//! `task/coarse_clock.rs`), the current task in `context/pool_cells.rs`.
//!
//! # Invariants
//!
//! * Nothing here is part of the sleep protocol: every atomic read here is
//!   a statistic or a record, read with `Relaxed` (a stale value shows an
//!   older state of the pool, never a wrong one for a moment that existed),
//!   and nothing here blocks, wakes or posts work.

pub(crate) mod addr;
#[cfg(feature = "console")]
pub(crate) mod console;
pub(crate) mod dump;
pub(crate) mod metrics;
pub(crate) mod poll_times;
pub(crate) mod snapshot;
pub(crate) mod stall;
pub(crate) mod ticks;
pub(crate) mod timeline;
pub(crate) mod timeline_lane;

pub use dump::{TaskDump, TaskInfo, TaskState, WaitPoint};
pub use metrics::{Metrics, WorkerMetrics};
pub use poll_times::{Bucket, Histogram};
pub use stall::Stall;
