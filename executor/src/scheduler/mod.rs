//! The scheduler: the workers, how work enters and is found, how the pool
//! starts and shuts down. The third floor, above `task/` and `sleep/`,
//! below `io/`, `join/` and `trace/` (which reach it through `context.rs`
//! and the registry's methods).
//!
//! | file | what |
//! |---|---|
//! | `registry.rs` | `Registry`: what one pool shares; `inject`, `wake_worker`, `metrics` |
//! | `spawn.rs` | `Registry::spawn`, `spawn_blocking`, and the schedule functions (the one door in) |
//! | `worker/mod.rs` | `WorkerThread`: main loop, `execute`, `schedule_local`, `wait_until` |
//! | `worker/search.rs` | `find_work`: search order, steals, the injector and driver ticks |
//! | `lifo.rs` | `LifoSlot`: the task a worker runs next |
//! | `watcher.rs` | the watcher thread's loop: LIFO rescues, the stall detector's looks, the coarse clock |
//! | `coop.rs` | the cooperative budget: `budgeted` polls, `poll_proceed`, `consume_budget`, `unconstrained` |
//! | `block_on.rs` | `block_on` and the signal its waker sets |
//! | `blocking.rs` | `BlockingPool`: the threads of `spawn_blocking` |
//! | `job.rs` | `JobRef`: a fork-join job as a worker's job deque holds it |
//! | `metrics.rs` | `Metrics` and the per-worker counters it sums |
//! | `timeline.rs` | the worker timeline (each worker's event ring) and its Chrome trace JSON |
//! | `driver.rs` | `IoDriver`: what the scheduler needs of the I/O driver a floor above |
//! | `config.rs` | `Config`: a pool's settings and their checks |
//! | `start.rs` | `start`: threads launched with a rollback guard |
//! | `shutdown.rs` | the shutdown, its steps in order |
//! | `global.rs` | the global pool |
//!
//! `../context.rs`, on this floor too, holds every thread-local of the crate.

pub(crate) mod block_on;
mod blocking;
mod config;
pub(crate) mod coop;
mod driver;
pub(crate) mod global;
mod job;
pub(crate) mod lifo;
mod metrics;
mod registry;
mod shutdown;
mod shutdown_state;
mod spawn;
mod start;
mod threads;
mod timeline;
#[cfg(feature = "tokio-compat")]
mod tokio_compat;
mod watcher;
mod worker;

pub(crate) use config::{invalid_input, Config};
pub(crate) use driver::{Binding as DriverBinding, Bound as DriverBound, Driver, IoDriver};
pub(crate) use job::JobRef;
pub use metrics::Metrics;
pub(crate) use registry::Registry;
pub(crate) use shutdown::shutdown;
pub(crate) use start::start;
pub(crate) use threads::Threads;
pub(crate) use watcher::Look;
pub(crate) use worker::WorkerThread;
