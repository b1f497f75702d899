//! Feature `tokio-compat`: a tokio runtime on every worker, driven by the
//! worker itself, so that tokio-only code (tokio::spawn, tokio::net,
//! tokio::time, and what is built on them: axum's `on_upgrade`, sqlx,
//! reqwest, tower's timeouts) runs on the pool's own threads, with no side
//! thread and no hop between threads.
//!
//! # What runs where
//!
//! * Worker `i` owns a tokio current-thread runtime and enters its context
//!   for life: a `tokio::spawn` from a task polled on worker `i` lands on
//!   runtime `i`, and a tokio socket or timer made there registers in
//!   runtime `i`'s reactor. A tokio task stays on the worker whose runtime
//!   it was spawned on (thread-per-core style); pool tasks still move
//!   between workers. So that long-lived tokio tasks (WebSockets, client
//!   connections) do not pile up on one worker, a worker whose runtime has
//!   more than `BALANCE_SLACK` tokio tasks alive beyond another's polls its
//!   pool tasks in that one's context until it has not (`balance`).
//! * **Busy**, the worker runs its pool tasks inside its runtime's
//!   `block_on` (`run_busy`), as tokio's own workers run tokio's: a
//!   `tokio::spawn` or a wake of a tokio task from a pool task is a push
//!   onto the runtime's own queue. The busy period steps aside for tokio
//!   at the next task boundary when a pool task spawned onto it (at once:
//!   the spawned task runs before the worker's next pool task, as from
//!   tokio's LIFO slot), every 8 searches if tokio tasks are alive or
//!   queued from another thread, and every `TURN_INTERVAL` (250 us,
//!   checked every 61 searches where it polls the pool's driver); and once
//!   more before it goes idle if tokio tasks are alive. Stepping aside is
//!   cheap: the period runs as the runtime's runner task (`Runner`) once
//!   it first steps aside, and a step aside is the runner waking itself,
//!   so tokio runs its queue and polls its reactor and timers every 61
//!   tasks, as on its own workers, not at every step. Pool tasks run there
//!   under no tokio budget, and, as in any tokio `block_on`, one cannot
//!   start a tokio runtime or call `tokio::task::block_in_place` (use
//!   `pool::spawn_blocking`).
//! * **Idle** but not asleep (searching), the worker gives its runtime a
//!   turn (`turn`) when tasks were scheduled onto it from another thread
//!   (one load of the queue's length every 8 searches), and every
//!   `TURN_INTERVAL` otherwise. What its driver polls (and a sleep in the
//!   driver) make ready it wakes inside a turn while tokio tasks are
//!   alive (`wake_inside`), so that a wake of one of them is a push onto
//!   the runtime's own queue, not a write to its eventfd.
//! * **Asleep**, the worker blocks inside its runtime
//!   ([`GuestRuntime`](crate::sleep::park::GuestRuntime), `sleep/README.md`, "Sleeping in a
//!   guest runtime"): tokio's reactor wait covers tokio's sockets and timers, and a
//!   sleep-protocol wake wakes the runtime's `block_on` future. The
//!   sleeper that holds the pool's driver also has its runtime watch the
//!   pool's epoll descriptor and next timer (`epoll_bridge.rs`); when they
//!   bring work it ends its sleep itself, as the driver's sleeper does,
//!   and wakes that work as its own. While a worker sleeps this way it is
//!   not the current worker: the tokio tasks it runs are outsiders of the
//!   pool, so their spawns and wakes go through the injector and wake a
//!   sleeper as any other thread's do (maybe this one).
//! * Other threads enter the workers' runtimes: the pool's and tokio's
//!   blocking threads one each, in turn, for life; a `Pool::block_on`
//!   future on a plain thread (`main`) the runtime with the fewest tokio
//!   tasks, chosen anew at every poll (`TokioRuntimes::poll_outside`).
//!   While that future uses tokio, it is polled as `#[tokio::main]`'s body
//!   is, inside the runtime's `tokio::runtime::Handle::block_on`, on a
//!   budget of 4 tokio operations, not tokio's 128: an accept loop
//!   (`axum::serve`) yields every 4 connections, and the next poll spawns
//!   the next ones on the other runtime, so a burst of connections
//!   spreads over the workers.
//!   tokio's `spawn_blocking` runs on `{name}-tokio-blocking` threads of
//!   the runtime it was called on; each runtime may start the pool's
//!   `max_blocking_threads` divided by the workers, and lets them go after
//!   the pool's `blocking_keep_alive`; they have its thread stack size.
//!
//! # Shutdown
//!
//! A worker shuts its runtime down when it exits, after its own pool tasks
//! were dropped (its tokio tasks are dropped there; a running
//! `spawn_blocking` closure is not waited for). Shutdown's last step
//! (`scheduler/shutdown.rs`, step 6) shuts down the runtimes of workers that never
//! ran.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | this map: it only declares |
//! | `runtimes.rs` | `TokioRuntimes`: the pool's runtimes, one per worker, built at start; the peers' handles and metrics; outside threads entering them: blocking threads in turn, a `block_on` future's polls the lightest, on a short budget; the last step of shutdown |
//! | `worker_runtime.rs` | `WorkerRuntime`: a worker's own runtime, driven by it: busy periods inside it, turns, the runtime its sleeps block in, the balance of tokio tasks |
//! | `runner.rs` | `Runner`: the runtime's runner task, and how a busy period is lent to it and taken back |
//! | `outside_polls.rs` | `OutsidePolls`: how a `block_on` future off the workers has used tokio lately (whether its next poll is budgeted); a leaf, built with or without the feature |
//! | `epoll_bridge.rs` | the pool's I/O driver watched from a tokio reactor while its holder sleeps in its runtime |

#[cfg(feature = "tokio-compat")]
pub(crate) mod epoll_bridge;
pub(crate) mod outside_polls;
#[cfg(feature = "tokio-compat")]
pub(crate) mod runner;
#[cfg(feature = "tokio-compat")]
pub(crate) mod runtimes;
#[cfg(feature = "tokio-compat")]
pub(crate) mod worker_runtime;
