//! A pool's worker threads: what each keeps, how it runs tasks and jobs,
//! schedules on itself, searches, and sleeps. The `impl WorkerThread` is
//! split by concept: the per-task work in `worker_thread.rs`, the loop and
//! its states in `main_loop.rs`, the search in `search.rs`.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | this map: it only declares |
//! | `worker_thread.rs` | `WorkerThread`: what a worker keeps, `execute`, `execute_job`, `schedule_local`, its cache of pool shares |
//! | `main_loop.rs` | `main_loop` and `wait_until`: the worker's states, its busy periods, its idle rounds and sleep |
//! | `search.rs` | `find_work`: search order, steals, the injector and driver ticks, posting a stolen batch |
//! | `local.rs` | `LocalTasks`: the worker's `spawn_local` queue, its inbox's side, their cancellation |
//! | `removals.rs` | `Removals`: finished tasks of other workers' shards, removed in batches |
//!

pub(crate) mod local;
pub(crate) mod main_loop;
pub(crate) mod removals;
pub(crate) mod search;
pub(crate) mod worker_thread;
