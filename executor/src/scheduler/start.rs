//! Starting a pool: its registry, one thread per worker and the watcher
//! (what the watcher runs at each look, the stall detector, comes apart
//! from the `Config`: it names the registry, and the settings do not).
//!
//! # Invariants
//!
//! * Every value of the `Config` is checked before any thread starts.
//! * A seeded pool (`seeded/`) starts no thread: its logical workers are
//!   built here and handed to the registry.
//! * `start` either returns a pool whose every thread started, or an error
//!   after shutting down what it had started: the threads started so far
//!   are held by a guard (`Starting`, Rayon's `Terminator` pattern) whose
//!   drop runs the pool's shutdown (`shutdown.rs`), so every way out of
//!   `start` but success stops and joins them.

use super::config::Config;
use super::io_driver::{Driver, IoDriver};
use super::registry::Registry;
use super::shutdown::shutdown;
use super::threads::Threads;
use super::watcher::{self, Look};
use super::worker;
#[cfg(feature = "tokio-compat")]
use crate::context::pool_cells;
use crate::context::thread_kind::ThreadKind;
use crate::seeded::logical_workers::LogicalWorkers;
#[cfg(feature = "tokio-compat")]
use crate::tokio_compat::runtimes::TokioRuntimes;
use crossbeam_deque::Worker;
use std::io;
use std::sync::Arc;
use std::thread;

/// Shuts down what started, unless `start` got to the end.
struct Starting<'a> {
    registry: &'a Arc<Registry>,
    threads: Threads,
}

impl Starting<'_> {
    /// Everything started: disarm the guard.
    fn finish(mut self) -> Threads {
        let threads = std::mem::take(&mut self.threads);
        std::mem::forget(self);
        threads
    }
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        shutdown(self.registry, &mut self.threads, None);
    }
}

/// Check `config` and start a pool with it.
///
/// # Errors
///
/// `InvalidInput` for a setting out of range, or the error of the I/O
/// driver or of a thread that failed to start (after the threads already
/// started were stopped and joined).
pub(crate) fn start(
    mut config: Config,
    look: Option<Box<dyn Look>>,
) -> io::Result<(Arc<Registry>, Threads)> {
    let workers = config.check()?;
    let thread_name = config.thread_name().to_owned();
    let stack_size = config.stack_size;
    let deques: Vec<(Worker<_>, Worker<_>)> = (0..workers)
        .map(|_| (Worker::new_fifo(), Worker::new_lifo()))
        .collect();
    let stealers = deques
        .iter()
        .map(|(tasks, jobs)| (tasks.stealer(), jobs.stealer()))
        .collect();
    #[cfg(feature = "console")]
    let console_listener = config.console_listener.take();
    let io = Arc::new(<Driver as IoDriver>::new(
        config.start_paused,
        workers,
        config.seed,
    )?);
    let registry = Arc::new(Registry::new(stealers, config, io, look.is_some()));
    if let Some(seeded) = registry.seeded() {
        // No thread: the logical workers are stepped by `block_on`'s
        // thread (`seeded/`), and nothing watches them (a step is one
        // poll, so no poll of theirs is ever long behind another's back).
        let logical = deques
            .into_iter()
            .enumerate()
            .map(|(index, (deque, jobs))| {
                worker::worker_thread::WorkerThread::new(Arc::clone(&registry), index, deque, jobs)
            })
            .collect();
        let runner = LogicalWorkers::new(Arc::clone(&registry), logical);
        seeded.install(Box::new(runner));
        return Ok((registry, Threads::default()));
    }

    let mut starting = Starting {
        registry: &registry,
        threads: Threads::default(),
    };
    // Before the workers: each enters the runtime's context as it starts.
    #[cfg(feature = "tokio-compat")]
    {
        let weak = Arc::downgrade(&registry);
        let serve = move || {
            if let Some(registry) = weak.upgrade() {
                // Kept until the thread ends (`leave_served_pool`, at its stop).
                std::mem::forget(pool_cells::enter_blocking_thread(&registry));
            }
        };
        let runtimes = TokioRuntimes::start(
            registry.blocking().config(),
            registry.num_workers(),
            &thread_name,
            serve,
            pool_cells::leave_served_pool,
        )?;
        let _ = registry.tokio().set(runtimes);
    }
    for (index, (deque, jobs)) in deques.into_iter().enumerate() {
        let mut builder = thread::Builder::new();
        if let Some(bytes) = stack_size {
            builder = builder.stack_size(bytes);
        }
        let r = Arc::clone(&registry);
        let thread = ThreadKind::Worker(index).spawn(&thread_name, builder, move || {
            worker::main_loop::main_loop(r, index, deque, jobs)
        })?;
        starting.threads.workers.push(thread);
    }
    let r = Arc::clone(&registry);
    let watcher = ThreadKind::Watcher.spawn(&thread_name, thread::Builder::new(), move || {
        watcher::run(r, look)
    })?;
    starting.threads.watcher = Some(watcher);
    #[cfg(feature = "console")]
    if let (Some(listener), Some(console)) = (console_listener, registry.console()) {
        use crate::inspect::console::server::Server;
        let table = Arc::clone(console.table());
        let registry = Arc::downgrade(&registry);
        starting.threads.console = Some(Server::start(table, registry, listener, &thread_name)?);
    }
    let threads = starting.finish();
    Ok((registry, threads))
}
