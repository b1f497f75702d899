//! The current pool: the one a spawn, a socket or a `join` outside any
//! worker uses. It falls back on the global pool (`scheduler/global.rs`),
//! which starts a pool, so it sits beside the cells it reads
//! (`mod.rs`), not among them: the scheduler's core never needs it.

use super::pool_cells::{entered, served_pool, worker};
use crate::scheduler::global;
use crate::scheduler::io_driver::Driver;
use crate::scheduler::registry::Registry;
use crate::scheduler::worker::worker_thread::WorkerThread;
use std::sync::Arc;

/// Run `f` with the current pool (see the module docs).
///
/// # Panics
///
/// If the current pool is the global pool and it cannot start.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&Arc<Registry>) -> R) -> R {
    with_current_worker(|registry, _| f(registry))
}

/// Run `f` with the current pool and, when this thread is one of that
/// pool's workers, the worker: a spawn hands it down to where the task is
/// counted, numbered and first scheduled instead of looking it up again.
///
/// # Panics
///
/// If the current pool is the global pool and it cannot start.
#[inline]
pub(crate) fn with_current_worker<R>(
    f: impl FnOnce(&Arc<Registry>, Option<&WorkerThread>) -> R,
) -> R {
    let worker = worker();
    if let Some(registry) = entered() {
        return f(
            registry,
            worker.filter(|w| Arc::ptr_eq(w.registry(), registry)),
        );
    }
    if let Some(w) = worker {
        return f(w.registry(), Some(w));
    }
    match served_pool() {
        Some(registry) => f(&registry, None),
        None => f(global::global(), None),
    }
}

/// The current pool, or `None` where that would be the global pool and it
/// has not started yet.
pub(crate) fn try_current() -> Option<Arc<Registry>> {
    if let Some(registry) = entered().or_else(|| worker().map(|w| w.registry())) {
        return Some(Arc::clone(registry));
    }
    served_pool().or_else(|| global::try_global().cloned())
}

/// `Err(Unsupported)` if the current pool is seeded: it cannot replay
/// `what` (real I/O), so it refuses it before it starts.
pub(crate) fn refuse_if_seeded(what: &str) -> std::io::Result<()> {
    match try_current().and_then(|r| r.seeded().map(|s| s.seed())) {
        Some(seed) => Err(crate::seeded::pool_seed::no_real_io(seed, what)),
        None => Ok(()),
    }
}

/// The current pool's I/O driver, enabled for its sleepers
/// (`Registry::enable_driver`): for a new socket or timer.
pub(crate) fn enabled_driver() -> Arc<Driver> {
    with_current(|registry| {
        registry.enable_driver();
        Arc::clone(registry.driver())
    })
}

/// This thread's index among the workers of the pool whose driver is
/// `driver`, if it is one of them (its timers go into its own shard).
#[inline]
pub(crate) fn worker_index_of(driver: &Driver) -> Option<usize> {
    worker()
        .filter(|w| std::ptr::eq(&**w.registry().driver(), driver))
        .map(|w| w.index())
}

/// Run `f` with the current pool's driver, without starting the global pool
/// or enabling the driver for its sleepers: `None` where the current pool
/// would be the global pool and it has not started yet. (`pool::time`
/// reads the pool's clock through it.)
pub(crate) fn with_current_driver<R>(f: impl FnOnce(Option<&Driver>) -> R) -> R {
    if let Some(registry) = entered() {
        return f(Some(registry.driver()));
    }
    if let Some(w) = worker() {
        return f(Some(w.registry().driver()));
    }
    match served_pool() {
        Some(registry) => f(Some(registry.driver())),
        None => f(global::try_global().map(|r| &**r.driver())),
    }
}

/// Is this thread in a pool (a worker, a blocking thread, or a
/// `Pool::block_on` / `Handle::enter` of one)? The global pool counts only
/// on its own threads.
pub(crate) fn in_a_pool() -> bool {
    entered().is_some() || worker().is_some() || served_pool().is_some()
}
