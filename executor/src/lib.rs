//! `pool`: a work-stealing async executor whose idle workers sleep and wake
//! with Rayon's jobs-event-counter protocol.
//!
//! Tasks are [`async_task`] runnables. Each worker owns a FIFO
//! `crossbeam_deque::Worker`; the others steal from it, and threads outside
//! the pool push into a global injector. Idle workers search for a while,
//! announce themselves sleepy, search once more and sleep: each on its own
//! condvar, except one, once the pool has used a socket or a timer, which
//! sleeps in the pool's I/O driver (`epoll_wait` until readiness, the next
//! timer or a wake). A new task wakes a sleeper only when no awake worker is
//! idle, and at most one per task. An idle pool costs no CPU.
//!
//! ```
//! let pool = pool::Pool::new().unwrap();
//! let total = pool.block_on(async {
//!     let tasks: Vec<_> = (0..100u64).map(|i| pool::spawn(async move { i * i })).collect();
//!     let mut total = 0;
//!     for t in tasks {
//!         total += t.await.unwrap();
//!     }
//!     total
//! });
//! assert_eq!(total, 328_350);
//! ```
//!
//! # The current pool
//!
//! The free functions ([`spawn`], [`Handle::current`]) act on the current
//! pool, innermost first: the pool whose [`Pool::block_on`] is running its
//! future on this thread, or that a [`Handle::enter`] guard made current;
//! else the pool of the worker thread running the code; else the pool of
//! the blocking thread (or, with `tokio-compat`, of one of the pool's tokio
//! blocking threads); else the global pool, started on first use with one worker per
//! available CPU (`POOL_WORKER_THREADS` overrides the count).
//!
//! # Features
//!
//! Off by default:
//!
//! * `hyper`: `hyper::serve` (HTTP/1 and HTTP/2 for any tower or hyper
//!   service: an axum `Router`, tonic's `Routes`), `hyper::Connector`
//!   for hyper-util's client, and hyper's runtime pieces.
//! * `axum` (with `hyper`): `hyper::serve` also puts axum's
//!   `ConnectInfo<addr>` in every request, so axum's `ConnectInfo`
//!   extractor works.
//! * `tokio-io`: tokio's `AsyncRead`/`AsyncWrite` on pool's sockets, pipes
//!   and [`io::Async`].
//! * `tokio-compat`: every worker owns a tokio current-thread runtime and
//!   drives it itself (between tasks, and while it sleeps, inside it), so
//!   tokio-only code (reqwest, tonic's channel, tower's timeouts, sqlx)
//!   runs in pool tasks with no per-poll cost and no tokio thread of its
//!   own. README: "The tokio-typed ecosystem" says what runs on which
//!   thread.
//! * `console`: tokio-console served by the pool itself
//!   (`Builder::console`, `POOL_CONSOLE`), with no `tracing` subscriber
//!   and no `--cfg tokio_unstable`.
//! * `prometheus`: the pool's metrics as a `prometheus-client` collector
//!   (`Handle::prometheus_collector`).
//!
//! # Macros
//!
//! `#[pool::main]` runs an `async fn main` on a new pool, and
//! `#[pool::test]` makes an `async fn` a test that runs on a fresh pool:
//!
//! ```
//! #[pool::main(worker_threads = 2)]
//! async fn main() -> Result<(), pool::JoinError> {
//!     let answer = pool::spawn(async { 6 * 7 }).await?;
//!     assert_eq!(answer, 42);
//!     Ok(())
//! }
//! ```
//!
//! # Seeing inside
//!
//! Every task has a [`TaskId`] ([`JoinHandle::id`], [`task_id`]) and
//! remembers where it was spawned. [`Pool::tasks`] lists the live tasks
//! (format them with [`TaskDump`]), [`Builder::on_stall`] reports polls
//! that hog a worker while they run, and [`Builder::trace`] (or
//! `POOL_TRACE=path` for the global pool) records each worker's timeline as
//! Chrome trace JSON, which Perfetto opens.
//!
//! # How it works
//!
//! `docs/ARCHITECTURE.md` draws the crate's floors and follows a task from
//! `spawn` to `poll`, and `executor/src/sleep/README.md` states the sleep
//! protocol and why it never loses a wakeup.
#![deny(missing_docs)]
#![warn(missing_debug_implementations)]

// The floors, lowest first (`docs/ARCHITECTURE.md`; a file imports only
// its own floor and the floors below it, which `tests/tests/layering.rs`
// checks).
//
// 0. Leaves, which import nothing of the crate.
mod sync;
mod teeth;
mod unwind;
// 1. The sleep protocol.
mod sleep;
// 2. Tasks (public: `pool::task::Builder`, and the task types).
pub mod task;
// 3. The scheduler, and the context of the current thread.
mod context;
mod scheduler;
mod seeded;
pub mod sim;
mod tokio_compat;
// 4. I/O, fork-join, seeing inside.
mod inspect;
pub mod io;
mod join;
// 5. The public API.
mod builder;
mod free_fns;
pub mod fs;
mod handle;
#[cfg(feature = "hyper")]
pub mod hyper;
mod join_set;
pub mod net;
mod pool;
pub mod process;
#[cfg(feature = "prometheus")]
mod prometheus;
pub mod signal;
mod task_local;
mod task_spawns;
pub mod time;

#[cfg(all(test, loom))]
mod models;

pub use builder::Builder;
pub use context::pool_cells::task_id;
pub use context::thread_kind::ThreadKind;
pub use free_fns::{
    block_on, mark_blocked, mark_unblocked, spawn, spawn_blocking, spawn_local, try_spawn,
};
pub use handle::{EnterGuard, Handle};
pub use inspect::{
    Bucket, Histogram, Metrics, Stall, TaskDump, TaskInfo, TaskState, WaitPoint, WorkerMetrics,
};
pub use join::{join, scope, Scope};
pub use join_set::JoinSet;
pub use pool::Pool;
pub use pool_macros::{main, test};
pub use scheduler::coop::{consume_budget, unconstrained, yield_now};
pub use seeded::pool_seed::SeedStrategy;
pub use task::{AbortHandle, JoinError, JoinHandle, SpawnError, TaskId};
pub use task_local::{AccessError, LocalKey, TaskLocalFuture};

/// What the expansions of `#[pool::main]` and `#[pool::test]` call. Not a
/// public API: it may change without notice.
#[doc(hidden)]
pub mod __private {
    /// A fresh pool for a macro-generated `main` or test.
    ///
    /// # Panics
    ///
    /// If the pool cannot start, with the attribute's name and the reason.
    pub fn pool_for_macro(
        worker_threads: Option<usize>,
        thread_name: Option<&str>,
        start_paused: bool,
        seed: Option<u64>,
        network: bool,
        attribute: &str,
    ) -> crate::pool::Pool {
        let mut builder = crate::builder::Builder::new().start_paused(start_paused);
        if let Some(seed) = seed {
            builder = builder.seed(seed);
        }
        if network {
            builder = builder.network(crate::sim::settings::Network::new());
        }
        if let Some(n) = worker_threads {
            builder = builder.worker_threads(n);
        }
        if let Some(name) = thread_name {
            builder = builder.thread_name(name);
        }
        // `POOL_CONSOLE` serves tokio-console from the pool of `main`, as
        // from the global pool (not from tests': they would share a port).
        #[cfg(feature = "console")]
        let console = attribute
            .contains("main")
            .then(crate::inspect::console::record::addr_from_env)
            .flatten();
        #[cfg(feature = "console")]
        if let Some(addr) = &console {
            builder = builder.console(addr);
        }
        builder.build().unwrap_or_else(|e| {
            #[cfg(feature = "console")]
            let from = console.map_or("", |_| crate::inspect::console::record::blame_env(&e));
            #[cfg(not(feature = "console"))]
            let from = "";
            panic!("{attribute}: the pool failed to start: {e}{from}")
        })
    }

    /// What a seeded test's body returns: did it fail (its sweep stops)?
    pub trait SeedOutcome {
        fn failed(&self) -> bool;
    }

    impl SeedOutcome for () {
        fn failed(&self) -> bool {
            false
        }
    }

    impl<T, E> SeedOutcome for Result<T, E> {
        fn failed(&self) -> bool {
            self.is_err()
        }
    }

    /// A seeded `#[pool::test]`: `body` on a fresh seeded pool for each
    /// seed from `first` on, `seeds` of them (`POOL_SEEDS` over it; one,
    /// `POOL_SEED`'s, when that is set), until one fails (a panic, whose
    /// run prints its seed, or an `Err`, returned).
    ///
    /// # Panics
    ///
    /// If `POOL_SEEDS` is not a positive count, or a pool cannot start.
    pub fn run_seeds<T: SeedOutcome>(
        worker_threads: Option<usize>,
        thread_name: Option<&str>,
        first: u64,
        seeds: Option<u64>,
        network: bool,
        attribute: &str,
        body: impl Fn(&crate::pool::Pool) -> T,
    ) -> T {
        let count = match std::env::var("POOL_SEEDS") {
            _ if std::env::var_os(crate::seeded::pool_seed::SEED_VAR).is_some() => 1,
            Ok(v) if !v.trim().is_empty() => match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => n,
                _ => panic!(
                    "{attribute}: POOL_SEEDS must be a positive count of seeds to run, got {v:?}"
                ),
            },
            _ => seeds.unwrap_or(1),
        };
        let mut ran = 0;
        loop {
            let seed = first.wrapping_add(ran);
            let pool = pool_for_macro(
                worker_threads,
                thread_name,
                true,
                Some(seed),
                network,
                attribute,
            );
            let out = body(&pool);
            drop(pool);
            if out.failed() {
                eprintln!("{attribute}: seed {seed} failed; rerun it with POOL_SEED={seed}");
                return out;
            }
            ran += 1;
            if ran == count {
                return out;
            }
        }
    }
}

#[allow(dead_code)]
fn _ensure_send_and_sync() {
    fn is_send_sync<T: Send + Sync>() {}
    fn is_unpin<T: Unpin>() {}
    is_send_sync::<Pool>();
    is_send_sync::<Handle>();
    is_send_sync::<JoinHandle<()>>();
    is_send_sync::<JoinError>();
    is_unpin::<JoinHandle<std::marker::PhantomPinned>>();
}

/// The README's example, compiled and run as a doctest so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
