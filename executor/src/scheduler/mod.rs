//! The scheduler: the workers and what they run, how work enters the pool
//! and is found, the blocking pool, how the pool starts and shuts down.
//! On floor 3 with the rest of the runtime (`docs/ARCHITECTURE.md`,
//! "Floors"): fork-join is `join/`, the timers `time/`, the recorders and
//! the tools that read them `inspect/`, tokio hosting `tokio_compat/`,
//! seeded runs `seeded/`, every thread-local `context/`.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | this map: it only declares |
//! | `registry.rs` | `Registry`: what one pool shares; `wake_worker`, `enable_driver`, `enter_tokio`; the `task::Schedule` impl |
//! | `spawn.rs` | `spawn_task`, `spawn_task_on`, `spawn_local_task`, `spawn_blocking_task`, `run_batched`, and the three doors in: `schedule_task`, `schedule_pinned`, `schedule_blocking` (and `inject`, `send_home`) |
//! | `worker/` | `WorkerThread`: what a worker keeps, its loop, search, `spawn_local` queue, removals (its own map) |
//! | `slot.rs` | `TaskSlot`: a task a worker keeps unposted (its LIFO slot, its deferred task), which the watcher may take |
//! | `watcher.rs` | the watcher thread's loop: LIFO rescues, the stall detector's looks, the coarse clock |
//! | `coop.rs` | the cooperative budget: `budgeted` polls, `poll_proceed`, `consume_budget`, `unconstrained`; `yield_now` |
//! | `block_on.rs` | `block_on`: poll, sleep on the thread's wake signal (`sleep/block_on_wake.rs`), repeat |
//! | `blocking.rs` | `BlockingPool`: the threads of `spawn_blocking`, handed what they need of the pool (`BlockingPoolOwner`), and its queue bound |
//! | `schedule_delay.rs` | `ScheduleDelay`: the load signal, a sampled task's wait from its schedule to its run, smoothed |
//! | `task_limit.rs` | `TaskLimit`: `Builder::max_tasks`, the places of live tasks, the spawns refused |
//! | `light_calls.rs` | `LightCalls`: the batched light calls of `pool::fs` on the blocking engine, and their drainers |
//! | `io_driver.rs` | `IoDriver`: what the runtime needs of the I/O driver (`io/`, a floor above) |
//! | `config.rs` | `Config`, `BlockingConfig`: a pool's settings (plain data) and their checks |
//! | `start.rs` | `start`: threads launched with a rollback guard |
//! | `threads.rs` | `Threads`: the threads a shutdown joins |
//! | `thread_name.rs` | each `ThreadKind` of thread's full name and the short one `ps` and `top` show |
//! | `shutdown.rs` | the shutdown, its six steps in order; `drain_queues` |
//! | `shutdown_state.rs` | `ShutdownState`: what spawns read of a shutdown, and the workers' exits |
//! | `global.rs` | the global pool |

pub(crate) mod block_on;
pub(crate) mod blocking;
pub(crate) mod config;
pub(crate) mod coop;
pub(crate) mod global;
pub(crate) mod io_driver;
pub(crate) mod light_calls;
pub(crate) mod registry;
pub(crate) mod schedule_delay;
pub(crate) mod shutdown;
pub(crate) mod shutdown_state;
pub(crate) mod slot;
pub(crate) mod spawn;
pub(crate) mod start;
pub(crate) mod task_limit;
pub(crate) mod thread_name;
pub(crate) mod threads;
pub(crate) mod watcher;
pub(crate) mod worker;
