//! Which of a pool's threads this is: the kind each thread the pool starts
//! records for itself before it runs anything else, so that a thread hook
//! (`Builder::on_thread_start`, `on_thread_stop`) or any code on the thread
//! can ask.

use std::cell::Cell;

/// A kind of thread a pool starts, as [`ThreadKind::current`] tells it.
///
/// The thread hooks (`Builder::on_thread_start` and `on_thread_stop`) run
/// on workers, on blocking threads and (feature `tokio-compat`) on the
/// blocking threads of the workers' tokio runtimes: every thread that runs
/// the user's code. The watcher and the console's server run none and run
/// no hook, but they answer [`ThreadKind::current`] too.
///
/// # Examples
///
/// ```
/// use pool::ThreadKind;
/// use std::sync::{Arc, Mutex};
/// let kinds = Arc::new(Mutex::new(Vec::new()));
/// let k = kinds.clone();
/// let pool = pool::Builder::new()
///     .worker_threads(2)
///     .on_thread_start(move || k.lock().unwrap().push(ThreadKind::current()))
///     .build()
///     .unwrap();
/// pool.block_on(pool.spawn_blocking(|| ())).unwrap();
/// drop(pool); // joins every thread
/// let mut kinds = kinds.lock().unwrap().clone();
/// kinds.sort_by_key(|k| format!("{k:?}"));
/// assert_eq!(
///     kinds,
///     [Some(ThreadKind::Blocking(0)), Some(ThreadKind::Worker(0)), Some(ThreadKind::Worker(1))]
/// );
/// assert_eq!(ThreadKind::current(), None); // not a pool's thread
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThreadKind {
    /// Worker `i` (`NAME-i`): runs tasks and fork-join jobs.
    Worker(usize),
    /// The watcher (`NAME-watcher`): stall detection and the deadlock
    /// handler's wake-ups.
    Watcher,
    /// Blocking thread `k` (`NAME-blocking-k`): runs `spawn_blocking`
    /// closures and file operations.
    Blocking(usize),
    /// A blocking thread of a worker's tokio runtime
    /// (`NAME-tokio-blocking`, feature `tokio-compat`).
    TokioBlocking,
    /// The tokio-console server (`NAME-console`, feature `console`).
    Console,
}

thread_local! {
    /// This thread's kind, set as the pool starts it (`None`: not a pool's).
    static KIND: Cell<Option<ThreadKind>> = const { Cell::new(None) };
}

impl ThreadKind {
    /// The kind of pool thread the caller runs on, or `None` on a thread
    /// no pool started (the main thread, say, even inside `block_on`).
    pub fn current() -> Option<ThreadKind> {
        KIND.with(Cell::get)
    }

    /// Record `self` as the calling thread's kind, first thing as it starts.
    pub(crate) fn enter(self) {
        KIND.with(|k| k.set(Some(self)));
    }
}
