//! `Builder`: configure and start a [`Pool`].
//!
//! # Invariants
//!
//! * Every value is checked in `build`, before any thread starts; a value out
//!   of range is an `io::Error` of kind `InvalidInput` that names the setter
//!   and the allowed range.
//! * `build` either returns a pool whose every worker started, or an error
//!   after stopping and joining the workers it had started.

use crate::blocking::BlockingConfig;
use crate::counters::THREADS_MAX;
use crate::deadlock::Handler;
use crate::io::Driver;
use crate::pool::Pool;
use crate::registry::{Hook, Registry, RegistryConfig};
use crate::trace::stall::StallConfig;
use crate::trace::Stall;
use crate::{watcher, worker};
use crossbeam_deque::Worker;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// The name workers get when [`Builder::thread_name`] is not called.
const DEFAULT_THREAD_NAME: &str = "pool-worker";

/// The default cap on blocking threads.
const DEFAULT_MAX_BLOCKING_THREADS: usize = 512;

/// How long a blocking thread waits for work before it exits, by default.
const DEFAULT_BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// The shortest stall threshold: the watcher's slowest look is 1 ms apart.
const MIN_STALL_THRESHOLD: Duration = Duration::from_millis(1);

/// Configures a [`Pool`].
///
/// # Examples
///
/// ```
/// let pool = pool::Builder::new()
///     .worker_threads(2)
///     .thread_name("app")
///     .build()
///     .unwrap();
/// let name = pool.block_on(pool.spawn(async {
///     std::thread::current().name().unwrap().to_string()
/// }));
/// assert!(name.unwrap().starts_with("app-"));
/// ```
#[must_use = "a Builder does nothing until build() is called"]
pub struct Builder {
    worker_threads: Option<usize>,
    thread_name: String,
    stack_size: Option<usize>,
    on_thread_start: Option<Hook>,
    on_thread_stop: Option<Hook>,
    deadlock_handler: Option<Handler>,
    max_blocking_threads: usize,
    blocking_keep_alive: Duration,
    stall: Option<StallConfig>,
    trace: Option<PathBuf>,
}

impl Builder {
    /// A builder with every setting at its default.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().build().unwrap();
    /// assert!(pool.worker_threads() >= 1);
    /// ```
    pub fn new() -> Builder {
        Builder {
            worker_threads: None,
            thread_name: DEFAULT_THREAD_NAME.to_string(),
            stack_size: None,
            on_thread_start: None,
            on_thread_stop: None,
            deadlock_handler: None,
            max_blocking_threads: DEFAULT_MAX_BLOCKING_THREADS,
            blocking_keep_alive: DEFAULT_BLOCKING_KEEP_ALIVE,
            stall: None,
            trace: None,
        }
    }

    /// The number of worker threads.
    ///
    /// Default: [`std::thread::available_parallelism`] (1 if unknown).
    /// `0`, or more than 65 535 (what the sleep counters can count), makes
    /// [`build`](Builder::build) return an `InvalidInput` error.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = pool::Builder::new().worker_threads(0).build().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// let pool = pool::Builder::new().worker_threads(3).build().unwrap();
    /// assert_eq!(pool.worker_threads(), 3);
    /// ```
    pub fn worker_threads(mut self, n: usize) -> Builder {
        self.worker_threads = Some(n);
        self
    }

    /// The prefix of worker thread names: workers are `NAME-0`, `NAME-1`, ...
    ///
    /// Default: `pool-worker`.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().worker_threads(1).thread_name("db").build().unwrap();
    /// let name = pool.block_on(pool.spawn(async { std::thread::current().name().unwrap().to_owned() }));
    /// assert_eq!(name.unwrap(), "db-0");
    /// ```
    pub fn thread_name(mut self, name: impl Into<String>) -> Builder {
        self.thread_name = name.into();
        self
    }

    /// The stack size of worker threads, in bytes.
    ///
    /// Default: the standard library's (2 MiB unless `RUST_MIN_STACK` says
    /// otherwise). `0` makes [`build`](Builder::build) return an
    /// `InvalidInput` error.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().stack_size(8 << 20).build().unwrap();
    /// assert_eq!(pool.block_on(pool.spawn(async { 1 })).unwrap(), 1);
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// A function each worker thread runs when it starts, before any task.
    ///
    /// Default: none.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let started = Arc::new(AtomicUsize::new(0));
    /// let s = started.clone();
    /// let pool = pool::Builder::new()
    ///     .worker_threads(2)
    ///     .on_thread_start(move || { s.fetch_add(1, Ordering::SeqCst); })
    ///     .build()
    ///     .unwrap();
    /// drop(pool); // joins the workers
    /// assert_eq!(started.load(Ordering::SeqCst), 2);
    /// ```
    pub fn on_thread_start(mut self, f: impl Fn() + Send + Sync + 'static) -> Builder {
        self.on_thread_start = Some(Arc::new(f));
        self
    }

    /// A function each worker thread runs when it stops, after its last task.
    ///
    /// Default: none.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let stopped = Arc::new(AtomicUsize::new(0));
    /// let s = stopped.clone();
    /// let pool = pool::Builder::new()
    ///     .worker_threads(2)
    ///     .on_thread_stop(move || { s.fetch_add(1, Ordering::SeqCst); })
    ///     .build()
    ///     .unwrap();
    /// drop(pool);
    /// assert_eq!(stopped.load(Ordering::SeqCst), 2);
    /// ```
    pub fn on_thread_stop(mut self, f: impl Fn() + Send + Sync + 'static) -> Builder {
        self.on_thread_stop = Some(Arc::new(f));
        self
    }

    /// A function called when no worker of the pool is active and at least
    /// one is blocked in user code (between [`mark_blocked`](crate::mark_blocked)
    /// and [`mark_unblocked`](crate::mark_unblocked)): nothing in the pool can
    /// make progress on its own. It is called once per such event, on the
    /// worker whose change caused it, and counted in
    /// [`Metrics::deadlocks`](crate::Metrics::deadlocks).
    ///
    /// The handler runs while the pool's deadlock state is locked (as in
    /// Rayon), so it must not call `mark_blocked` or `mark_unblocked` (that
    /// panics with a message saying so). It may spawn tasks or send
    /// messages, which is how it usually unblocks a worker.
    ///
    /// Default: none, and then the pool does not track blocked workers.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{mpsc, Arc, Mutex};
    /// let (tx, rx) = mpsc::channel::<()>();
    /// let tx = Mutex::new(tx);
    /// let pool = pool::Builder::new()
    ///     .worker_threads(1)
    ///     .deadlock_handler(move || {
    ///         let _ = tx.lock().unwrap().send(());
    ///     })
    ///     .build()
    ///     .unwrap();
    /// pool.block_on(pool.spawn(async move {
    ///     pool::mark_blocked();
    ///     rx.recv().unwrap(); // only the handler sends
    ///     pool::mark_unblocked();
    /// }))
    /// .unwrap();
    /// assert_eq!(pool.metrics().deadlocks, 1);
    /// ```
    pub fn deadlock_handler(mut self, f: impl Fn() + Send + Sync + 'static) -> Builder {
        self.deadlock_handler = Some(Arc::new(f));
        self
    }

    /// The most blocking threads ([`spawn_blocking`](crate::spawn_blocking))
    /// alive at once; closures beyond it wait their turn, first in first out.
    ///
    /// Default: 512. `0` makes [`build`](Builder::build) return an
    /// `InvalidInput` error.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().max_blocking_threads(4).build().unwrap();
    /// assert_eq!(pool.block_on(pool.spawn_blocking(|| 2)).unwrap(), 2);
    /// assert!(pool.metrics().blocking_threads <= 4);
    /// ```
    pub fn max_blocking_threads(mut self, n: usize) -> Builder {
        self.max_blocking_threads = n;
        self
    }

    /// How long a blocking thread with nothing to do waits before it exits.
    ///
    /// Default: 10 seconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let pool = pool::Builder::new()
    ///     .blocking_keep_alive(Duration::from_millis(100))
    ///     .build()
    ///     .unwrap();
    /// pool.block_on(pool.spawn_blocking(|| ())).unwrap();
    /// ```
    pub fn blocking_keep_alive(mut self, idle: Duration) -> Builder {
        self.blocking_keep_alive = idle;
        self
    }

    /// Call `f` for every poll that has run longer than `threshold`, while it
    /// still runs: a task hogging a worker (a blocking call, a long
    /// computation) with its id, where it was spawned and how long it has
    /// run so far ([`Stall`](crate::Stall)). Once per poll.
    ///
    /// `f` runs on the pool's watcher thread, never on a worker; it should
    /// return soon (it delays the next look), and a panic in it is caught.
    /// The workers read no clock for this: the watcher, which looks at them
    /// every 20 us to 1 ms while any is awake (and sleeps while all do),
    /// sees the same poll at two looks. So a report comes at most about
    /// 1 ms after the threshold, and `running_for` is short by at most as
    /// much. [`Metrics::stalls`](crate::Metrics::stalls) counts the reports.
    ///
    /// Off by default. `threshold` must be at least 1 ms.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// let (tx, rx) = mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let pool = pool::Builder::new()
    ///     .on_stall(Duration::from_millis(20), move |stall| {
    ///         let _ = tx.lock().unwrap().send(stall.task);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let hog = pool.spawn(async { std::thread::sleep(Duration::from_millis(100)) });
    /// let id = hog.id();
    /// pool.block_on(hog).unwrap();
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), id);
    /// ```
    pub fn on_stall(
        mut self,
        threshold: Duration,
        f: impl Fn(&Stall) + Send + Sync + 'static,
    ) -> Builder {
        self.stall = Some(StallConfig {
            threshold,
            handler: Arc::new(f),
        });
        self
    }

    /// Record every worker's timeline and write it to `path` as Chrome
    /// trace-event JSON when the pool is dropped: one lane per worker, with
    /// its polls (and their task ids), fork-join jobs, steals (from whom),
    /// takes from the injector, getting sleepy, sleeping (and who woke
    /// it), and `block_on` on that worker. Open the file in Perfetto
    /// (<https://ui.perfetto.dev>) or chrome://tracing; `benches`'
    /// `trace_svg` draws it as an SVG.
    ///
    /// The workers record without locks into a ring of their own (the last
    /// million events each; the file says how many were lost), reading the
    /// CPU's timestamp counter: about 25 ns a poll. The global pool is
    /// traced when `POOL_TRACE=path` is set, and writes at process exit.
    ///
    /// `build` creates (truncates) the file, so a path that cannot be
    /// written is an error there, not a lost trace at the end.
    ///
    /// # Examples
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("pool-doc-trace-{}.json", std::process::id()));
    /// let pool = pool::Builder::new().worker_threads(2).trace(&path).build().unwrap();
    /// pool.block_on(pool.spawn(async { 1 + 1 })).unwrap();
    /// drop(pool); // writes the trace
    /// let json = std::fs::read_to_string(&path).unwrap();
    /// assert!(json.contains("\"name\":\"poll\""));
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Builder {
        self.trace = Some(path.into());
        self
    }

    /// Start the pool.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a setting out of range (the message says which and
    /// the allowed range), or the error of a worker thread that failed to
    /// start (the workers already started are stopped and joined first).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().worker_threads(2).build()?;
    /// assert_eq!(pool.worker_threads(), 2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn build(self) -> io::Result<Pool> {
        let workers = match self.worker_threads {
            Some(n) => n,
            None => thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if workers == 0 || workers > THREADS_MAX {
            return Err(invalid_input(format!(
                "worker_threads must be between 1 and {THREADS_MAX}, got {workers}"
            )));
        }
        if self.max_blocking_threads == 0 {
            return Err(invalid_input(
                "max_blocking_threads must be at least 1 (spawn_blocking needs a thread), got 0"
                    .to_string(),
            ));
        }
        if let Some(stall) = &self.stall {
            if stall.threshold < MIN_STALL_THRESHOLD {
                return Err(invalid_input(format!(
                    "on_stall threshold must be at least {MIN_STALL_THRESHOLD:?} (the watcher \
                     looks at the workers about every millisecond), got {:?}",
                    stall.threshold
                )));
            }
        }
        if let Some(path) = &self.trace {
            if path.as_os_str().is_empty() {
                return Err(invalid_input(
                    "trace path must name a file to write the timeline to, got an empty path"
                        .to_string(),
                ));
            }
            if let Err(e) = std::fs::File::create(path) {
                return Err(io::Error::new(
                    e.kind(),
                    format!("trace: cannot create {}: {e}", path.display()),
                ));
            }
        }
        if self.stack_size == Some(0) {
            return Err(invalid_input(
                "stack_size must be at least 1 byte (the OS rounds it up to its minimum), got 0"
                    .to_string(),
            ));
        }

        let deques: Vec<(Worker<_>, Worker<_>)> = (0..workers)
            .map(|_| (Worker::new_fifo(), Worker::new_lifo()))
            .collect();
        let registry = Arc::new(Registry::new(
            deques
                .iter()
                .map(|(tasks, jobs)| (tasks.stealer(), jobs.stealer()))
                .collect(),
            RegistryConfig {
                on_thread_start: self.on_thread_start,
                on_thread_stop: self.on_thread_stop,
                deadlock_handler: self.deadlock_handler,
                blocking: BlockingConfig {
                    max_threads: self.max_blocking_threads,
                    keep_alive: self.blocking_keep_alive,
                    thread_name: self.thread_name.clone(),
                    stack_size: self.stack_size,
                },
                io: Arc::new(Driver::new()?),
                stall: self.stall,
                trace: self.trace,
            },
        ));
        let mut threads = Vec::with_capacity(workers);
        for (index, (deque, jobs)) in deques.into_iter().enumerate() {
            let mut builder = thread::Builder::new().name(format!("{}-{index}", self.thread_name));
            if let Some(bytes) = self.stack_size {
                builder = builder.stack_size(bytes);
            }
            let r = Arc::clone(&registry);
            match builder.spawn(move || worker::main_loop(r, index, deque, jobs)) {
                Ok(t) => threads.push(t),
                Err(e) => {
                    registry.terminate();
                    for t in threads {
                        let _ = t.join();
                    }
                    registry.drop_unfinished_tasks();
                    return Err(e);
                }
            }
        }
        let r = Arc::clone(&registry);
        let watcher = thread::Builder::new()
            .name(format!("{}-watcher", self.thread_name))
            .spawn(move || watcher::run(r));
        match watcher {
            Ok(watcher) => Ok(Pool::from_parts(registry, threads, watcher)),
            Err(e) => {
                registry.terminate();
                for t in threads {
                    let _ = t.join();
                }
                registry.drop_unfinished_tasks();
                Err(e)
            }
        }
    }
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("worker_threads", &self.worker_threads)
            .field("thread_name", &self.thread_name)
            .field("stack_size", &self.stack_size)
            .field("on_thread_start", &self.on_thread_start.is_some())
            .field("on_thread_stop", &self.on_thread_stop.is_some())
            .field("deadlock_handler", &self.deadlock_handler.is_some())
            .field("max_blocking_threads", &self.max_blocking_threads)
            .field("blocking_keep_alive", &self.blocking_keep_alive)
            .field("on_stall", &self.stall.as_ref().map(|s| s.threshold))
            .field("trace", &self.trace)
            .finish()
    }
}

fn invalid_input(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}
