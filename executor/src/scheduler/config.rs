//! `Config`: what a pool is started with, and the check of every value.
//! The public `Builder` fills one in; so does the global pool, from its
//! environment variables (`global.rs`).
//!
//! # Invariants
//!
//! * `check` looks at every value before any thread starts; a value out of
//!   range is an `io::Error` of kind `InvalidInput` that names the
//!   `Builder` setter and the allowed range.

use crate::seeded::pool_seed::{
    SeedStrategy, DEFAULT_SEEDED_WORKERS, MAX_SEEDED_WORKERS, SEED_VAR,
};
use crate::sim::settings::Network;
use crate::sleep::counters::THREADS_MAX;
use crate::sleep::deadlock::Handler as DeadlockHandler;
use crate::unwind::call_quietly;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// What a thread-start or thread-stop hook is.
pub(crate) type Hook = Arc<dyn Fn() + Send + Sync + 'static>;

/// `Builder::on_thread_start` and `on_thread_stop`: run on every thread
/// of the pool that runs the user's code (workers, blocking threads,
/// tokio's blocking threads), which can ask `ThreadKind::current()`
/// which one it is.
#[derive(Clone, Default)]
pub(crate) struct ThreadHooks {
    pub(crate) start: Option<Hook>,
    pub(crate) stop: Option<Hook>,
}

impl ThreadHooks {
    /// Run the start hook, if any. Its panic is the user's bug, already
    /// reported by the panic hook: the thread goes on (a worker that died
    /// here would leave the sleep protocol counting on it).
    pub(crate) fn run_start(&self) {
        if let Some(hook) = &self.start {
            call_quietly(|| hook());
        }
    }

    /// Run the stop hook, if any (its panic as the start hook's).
    pub(crate) fn run_stop(&self) {
        if let Some(hook) = &self.stop {
            call_quietly(|| hook());
        }
    }
}

impl fmt::Debug for ThreadHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadHooks")
            .field("start", &self.start.is_some())
            .field("stop", &self.stop.is_some())
            .finish()
    }
}

/// The name workers get when `Builder::thread_name` is not called.
const DEFAULT_THREAD_NAME: &str = "pool-worker";

/// The default cap on blocking threads.
const DEFAULT_MAX_BLOCKING_THREADS: usize = 512;

/// How long a blocking thread waits for work before it exits, by default.
const DEFAULT_BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// The settings of a blocking pool (from the `Builder`), the ones every
/// thread of the pool shares among them (the name prefix, the hooks).
#[derive(Clone, Debug)]
pub(crate) struct BlockingConfig {
    pub(crate) max_threads: usize,
    pub(crate) keep_alive: Duration,
    pub(crate) thread_name: String,
    pub(crate) stack_size: Option<usize>,
    pub(crate) hooks: ThreadHooks,
    /// A seeded pool's: no thread, the closures run at seeded steps
    /// (`seeded/`).
    pub(crate) simulated: bool,
    /// `Builder::max_blocking_queue`: closures that may wait for a busy
    /// thread; `None`, any number.
    pub(crate) max_queue: Option<usize>,
}

/// A pool's settings (the `Builder`'s, one field per setter but
/// `on_stall`, whose detector the watcher runs: `start` takes it apart).
pub(crate) struct Config {
    /// `None`: one worker per available CPU.
    pub(crate) worker_threads: Option<usize>,
    pub(crate) stack_size: Option<usize>,
    /// The user's handler (the registry wraps it, see `Registry::new`).
    pub(crate) deadlock_handler: Option<DeadlockHandler>,
    /// The blocking pool's settings, the thread name prefix among them.
    pub(crate) blocking: BlockingConfig,
    /// `Builder::trace`: where to write the timeline.
    pub(crate) trace: Option<PathBuf>,
    /// `Builder::poll_time_histogram`.
    pub(crate) poll_time_histogram: bool,
    /// `Builder::start_paused`.
    pub(crate) start_paused: bool,
    /// `Builder::io_uring`: file operations may use the driver's io_uring.
    pub(crate) io_uring: bool,
    /// `Builder::seed`: a seeded pool of logical workers (`seeded/`),
    /// `POOL_SEED` read over it by `check`.
    pub(crate) seed: Option<u64>,
    /// `Builder::seed_strategy`.
    pub(crate) seed_strategy: SeedStrategy,
    /// `Builder::network`: a seeded pool's simulated network.
    pub(crate) network: Option<Network>,
    /// `Builder::max_tasks`: live tasks at most; `None`, any number.
    pub(crate) max_tasks: Option<usize>,
    /// `Builder::console`: the address to serve tokio-console on, as given.
    #[cfg(feature = "console")]
    pub(crate) console: Option<String>,
    /// The console's listener, bound by `check` (`start` takes it), and
    /// its address (a port of 0 resolved).
    #[cfg(feature = "console")]
    pub(crate) console_listener: Option<std::net::TcpListener>,
    #[cfg(feature = "console")]
    pub(crate) console_addr: Option<std::net::SocketAddr>,
}

impl Config {
    /// Each setting under its `Builder` setter's name (`Builder`'s `Debug`).
    pub(crate) fn debug_settings(&self, d: &mut fmt::DebugStruct<'_, '_>) {
        d.field("worker_threads", &self.worker_threads)
            .field("thread_name", &self.thread_name())
            .field("stack_size", &self.stack_size)
            .field("on_thread_start", &self.blocking.hooks.start.is_some())
            .field("on_thread_stop", &self.blocking.hooks.stop.is_some())
            .field("deadlock_handler", &self.deadlock_handler.is_some())
            .field("max_blocking_threads", &self.blocking.max_threads)
            .field("max_blocking_queue", &self.blocking.max_queue)
            .field("max_tasks", &self.max_tasks)
            .field("blocking_keep_alive", &self.blocking.keep_alive)
            .field("trace", &self.trace)
            .field("poll_time_histogram", &self.poll_time_histogram)
            .field("start_paused", &self.start_paused)
            .field("seed", &self.seed)
            .field("seed_strategy", &self.seed_strategy)
            .field("io_uring", &self.io_uring);
        #[cfg(feature = "console")]
        d.field("console", &self.console);
    }

    /// Every setting at its default.
    pub(crate) fn new() -> Config {
        Config {
            worker_threads: None,
            stack_size: None,
            deadlock_handler: None,
            blocking: BlockingConfig {
                max_threads: DEFAULT_MAX_BLOCKING_THREADS,
                keep_alive: DEFAULT_BLOCKING_KEEP_ALIVE,
                thread_name: DEFAULT_THREAD_NAME.to_string(),
                stack_size: None,
                hooks: ThreadHooks::default(),
                simulated: false,
                max_queue: None,
            },
            max_tasks: None,
            trace: None,
            poll_time_histogram: false,
            start_paused: false,
            io_uring: true,
            seed: None,
            seed_strategy: SeedStrategy::Random,
            network: None,
            #[cfg(feature = "console")]
            console: None,
            #[cfg(feature = "console")]
            console_listener: None,
            #[cfg(feature = "console")]
            console_addr: None,
        }
    }

    /// The prefix of every thread name of the pool.
    pub(crate) fn thread_name(&self) -> &str {
        &self.blocking.thread_name
    }

    /// Check every value, then bind the console's address (so that a taken
    /// port is an error now) and, last, create the trace file (so that a
    /// path that cannot be written is an error now, not a lost trace at the
    /// end, and a `build` refused for another value leaves the file as it
    /// was); returns the number of workers.
    pub(crate) fn check(&mut self) -> io::Result<usize> {
        if self.seed.is_some() {
            return self.check_seeded();
        }
        if self.network.is_some() {
            return Err(invalid_input(
                "Builder::network simulates a network inside a seeded pool: add \
                 Builder::seed(n) (or #[pool::test(seed = n, network)]), or remove the network"
                    .to_string(),
            ));
        }
        let workers = match self.worker_threads {
            Some(n) => n,
            None => thread::available_parallelism().map_or(1, |n| n.get()),
        };
        self.check_threads(workers)
    }

    /// `check` of a seeded pool: `POOL_SEED` over the seed, its logical
    /// workers (a fixed default, so that a seed replays on any machine),
    /// its clock paused.
    fn check_seeded(&mut self) -> io::Result<usize> {
        if let Some(seed) = seed_from_env()? {
            self.seed = Some(seed);
        }
        let workers = self.worker_threads.unwrap_or(DEFAULT_SEEDED_WORKERS);
        if workers == 0 || workers > MAX_SEEDED_WORKERS {
            return Err(invalid_input(format!(
                "worker_threads of a seeded pool (Builder::seed) must be between 1 and {}, got {workers}",
                MAX_SEEDED_WORKERS
            )));
        }
        if let Some(network) = &self.network {
            network.check()?;
        }
        if let SeedStrategy::Pct { depth, steps } = self.seed_strategy {
            if depth == 0 || steps == 0 {
                return Err(invalid_input(format!(
                    "seed_strategy: SeedStrategy::Pct needs depth and steps of at least 1 \
                     (depth 2 or 3, steps about the run's length), got depth {depth}, steps {steps}"
                )));
            }
        }
        // No console either: it is real I/O, on a thread of its own.
        #[cfg(feature = "console")]
        {
            self.console = None;
        }
        self.start_paused = true;
        self.blocking.simulated = true;
        self.check_threads(workers)
    }

    /// The checks of every pool, for `workers` workers.
    fn check_threads(&mut self, workers: usize) -> io::Result<usize> {
        if workers == 0 || workers > THREADS_MAX {
            return Err(invalid_input(format!(
                "worker_threads must be between 1 and {THREADS_MAX}, got {workers}"
            )));
        }
        let name = &self.blocking.thread_name;
        if name.is_empty() || name.contains('\0') {
            return Err(invalid_input(format!(
                "thread_name must be a non-empty name without NUL bytes, got {name:?}"
            )));
        }
        if self.blocking.max_threads == 0 {
            return Err(invalid_input(
                "max_blocking_threads must be at least 1 (spawn_blocking needs a thread), got 0"
                    .to_string(),
            ));
        }
        if let Some(path) = &self.trace {
            if path.as_os_str().is_empty() {
                return Err(invalid_input(
                    "trace path must name a file to write the timeline to, got an empty path"
                        .to_string(),
                ));
            }
        }
        if self.max_tasks == Some(0) {
            return Err(invalid_input(
                "max_tasks must be at least 1 (the live tasks a pool accepts; leave it unset for \
                 no limit), got 0"
                    .to_string(),
            ));
        }
        if self.stack_size == Some(0) {
            return Err(invalid_input(
                "stack_size must be at least 1 byte (the OS rounds it up to its minimum), got 0"
                    .to_string(),
            ));
        }
        self.blocking.stack_size = self.stack_size;
        // Last: a value out of range above is reported before the port is
        // taken.
        #[cfg(feature = "console")]
        if let Some(addr) = &self.console {
            let listener = bind_console(addr)?;
            self.console_addr = Some(listener.local_addr()?);
            self.console_listener = Some(listener);
        }
        // After every check: a `build` refused for a value never truncates
        // the file at the trace path.
        if let Some(path) = &self.trace {
            if let Err(e) = std::fs::File::create(path) {
                return Err(io::Error::new(
                    e.kind(),
                    format!("trace: cannot create {}: {e}", path.display()),
                ));
            }
        }
        Ok(workers)
    }
}

/// An `InvalidInput` error with `message`.
/// `POOL_SEED`, if set and not empty.
fn seed_from_env() -> io::Result<Option<u64>> {
    let bad = |got: String| {
        invalid_input(format!(
            "{SEED_VAR} must be a seed between 0 and {}, as a seeded run's panic prints it, got {got}",
            u64::MAX
        ))
    };
    match std::env::var(SEED_VAR) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(e) => Err(bad(format!("a value that is not UTF-8 ({e})"))),
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| bad(format!("{v:?}"))),
    }
}

pub(crate) fn invalid_input(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// Parse and bind the console's address (`Builder::console`,
/// `POOL_CONSOLE`): `InvalidInput` if it is not a socket address, the bind
/// error (its kind kept) naming the address if it cannot listen there.
#[cfg(feature = "console")]
fn bind_console(addr: &str) -> io::Result<std::net::TcpListener> {
    let parsed: std::net::SocketAddr = addr.trim().parse().map_err(|_| {
        invalid_input(format!(
            "console address must be a socket address such as \"127.0.0.1:6669\" \
             (\"127.0.0.1:0\" picks a free port), got {addr:?}"
        ))
    })?;
    std::net::TcpListener::bind(parsed)
        .map_err(|e| io::Error::new(e.kind(), format!("console: cannot listen on {parsed}: {e}")))
}
