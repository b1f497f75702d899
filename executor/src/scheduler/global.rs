//! The global pool: the current pool where no other is (`context/current.rs`),
//! started on first use and never shut down.
//!
//! It has one worker per available CPU unless `POOL_WORKER_THREADS` says
//! otherwise, names its threads `pool-global-*`, records its timeline
//! when `POOL_TRACE=path` is set, writing it at process exit, and serves
//! tokio-console when `POOL_CONSOLE=addr` is set (feature `console`).

use super::config::Config;
use super::registry::Registry;
use super::start::start;
use super::threads::Threads;
use std::sync::{Arc, OnceLock};

/// The environment variable that sets the global pool's worker count.
const WORKER_THREADS_ENV: &str = "POOL_WORKER_THREADS";

/// The environment variable that traces the global pool (`Builder::trace`).
const TRACE_ENV: &str = "POOL_TRACE";

/// The global pool's registry and threads (never joined: the pool lives as
/// long as the process).
static GLOBAL: OnceLock<(Arc<Registry>, Threads)> = OnceLock::new();

/// The global pool, started on first use.
///
/// # Panics
///
/// If `POOL_WORKER_THREADS` is set to something other than a positive
/// integer, or the pool fails to start (`POOL_CONSOLE` set to an address it
/// cannot serve on, say); the message says which.
pub(crate) fn global() -> &'static Arc<Registry> {
    &GLOBAL
        .get_or_init(|| {
            let mut config = Config::new();
            config.blocking.thread_name = "pool-global".to_string();
            config.worker_threads = worker_threads_from_env();
            let trace = std::env::var_os(TRACE_ENV).filter(|p| !p.is_empty());
            config.trace = trace.clone().map(Into::into);
            #[cfg(feature = "console")]
            {
                config.console = crate::inspect::console::record::addr_from_env();
            }
            let pool = start(config, None).unwrap_or_else(|e| {
                #[cfg(feature = "console")]
                let from = crate::inspect::console::record::blame_env(&e);
                #[cfg(not(feature = "console"))]
                let from = "";
                panic!("pool: the global pool failed to start: {e}{from}")
            });
            if trace.is_some() {
                // The global pool is never dropped: write its trace at exit.
                // SAFETY: `write_global_trace` is an `extern "C" fn()` that
                // does not unwind (it catches panics).
                if unsafe { libc::atexit(write_global_trace) } != 0 {
                    eprintln!("pool: {TRACE_ENV} is set but the trace cannot be written at exit");
                }
            }
            pool
        })
        .0
}

/// The global pool, if it has started.
pub(crate) fn try_global() -> Option<&'static Arc<Registry>> {
    GLOBAL.get().map(|(registry, _)| registry)
}

/// At process exit: write the global pool's timeline (its workers may still
/// be running: see `inspect/timeline.rs` for why that is sound).
///
/// A worker records a poll after the poll returns, and the poll that
/// completed `main`'s last task woke `main` before that: so the writer first
/// waits, at most `EXIT_TRACE_WAIT`, for every worker (but the exiting
/// thread, if it is one) to be out of its poll. CI found the last poll
/// missing without the wait.
extern "C" fn write_global_trace() {
    let _ = std::panic::catch_unwind(|| {
        let Some(registry) = try_global() else { return };
        let Some(timeline) = registry.timeline() else {
            return;
        };
        let on_worker = crate::context::pool_cells::worker()
            .is_some_and(|w| std::ptr::eq(&**w.registry(), &**registry));
        let here = usize::from(on_worker);
        let others = registry.workers().len().saturating_sub(here);
        let deadline = std::time::Instant::now() + EXIT_TRACE_WAIT;
        while !registry.sleep_manager().inactive_at_least(others)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        timeline.write();
    });
}

/// How long the trace at exit waits for the workers' polls in flight (a task
/// that never yields would keep its worker busy for ever).
const EXIT_TRACE_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// `POOL_WORKER_THREADS`, if set; a value that is not a positive integer is a
/// panic that names the variable and the value.
fn worker_threads_from_env() -> Option<usize> {
    let value = std::env::var_os(WORKER_THREADS_ENV)?;
    match value.to_str().and_then(|s| s.trim().parse::<usize>().ok()) {
        Some(n) if n > 0 => Some(n),
        _ => panic!(
            "{WORKER_THREADS_ENV} must be a positive integer (the global pool's worker count), \
             got {value:?}"
        ),
    }
}
