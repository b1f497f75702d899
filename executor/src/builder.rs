//! `Builder`: configure and start a [`Pool`].
//!
//! # Invariants
//!
//! * Every value is checked in `build`, before any thread starts (the
//!   scheduler's `Config::check`, and the stall threshold here); a value out
//!   of range is an `io::Error` of kind `InvalidInput` that names the setter
//!   and the allowed range.
//! * `build` either returns a pool whose every thread started, or an error
//!   after stopping and joining the threads it had started (`Pool::start`).

use crate::inspect::stall::Stall;
use crate::inspect::stall::{StallConfig, StallWatch};
use crate::pool::Pool;
use crate::scheduler::config::invalid_input;
use crate::scheduler::config::Config;
use crate::scheduler::watcher::Look;
use crate::seeded::pool_seed::SeedStrategy;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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
    /// Every setting the scheduler takes.
    config: Config,
    /// `on_stall`: the stall detector's, turned into the watcher's `Look`
    /// by `build`.
    stall: Option<StallConfig>,
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
            config: Config::new(),
            stall: None,
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
        self.config.worker_threads = Some(n);
        self
    }

    /// The prefix of the pool's thread names: workers are `NAME-0`,
    /// `NAME-1`, .... The other threads are not workers, and are named
    /// after NAME without a trailing `-worker` (BASE): the watcher
    /// `BASE-watcher`; blocking threads `BASE-blocking-K`; with
    /// `tokio-compat`, tokio's blocking threads `BASE-tokio-blocking`
    /// (tokio's own tasks run on the workers); with `console`, the
    /// console's server `BASE-console`. So the default pool's are
    /// `pool-worker-0`, `pool-watcher`, `pool-blocking-3`. Those
    /// are the names `std::thread::current()`
    /// and panic messages show. The kernel keeps 15 bytes of a name (what
    /// `ps -L` and `top` show): where a full name is longer, the kernel's
    /// name keeps the kind and the index whole and cuts the prefix
    /// (`pool-blk12`, `pool-tblk`), so every kind is told apart.
    /// An empty name, or one with a NUL byte, is an `InvalidInput` error at
    /// `build`.
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
        self.config.blocking.thread_name = name.into();
        self
    }

    /// The stack size of every thread the pool starts, in bytes: its
    /// workers, its blocking threads and (with `tokio-compat`) tokio's
    /// blocking threads.
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
        self.config.stack_size = Some(bytes);
        self
    }

    /// A function each thread of the pool that runs the user's code runs
    /// when it starts, before any task or closure: every worker, every
    /// blocking thread (`spawn_blocking`, file operations) and, with
    /// `tokio-compat`, every blocking thread of the workers' tokio runtimes.
    /// It can ask [`ThreadKind::current`](crate::ThreadKind::current) which
    /// one it is (a worker's index, say). A panic in it is reported by the
    /// panic hook and the thread goes on.
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
        self.config.blocking.hooks.start = Some(Arc::new(f));
        self
    }

    /// A function each thread that ran [`on_thread_start`](Builder::on_thread_start)
    /// runs when it stops, after its last task or closure (a blocking thread
    /// stops when it has been idle for `blocking_keep_alive`, or at
    /// shutdown). Dropping the pool returns after the stop hooks of its
    /// workers and blocking threads have run; tokio's blocking threads are
    /// not waited for (a closure still running there would hold the drop
    /// up), and run theirs as they end.
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
        self.config.blocking.hooks.stop = Some(Arc::new(f));
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
        self.config.deadlock_handler = Some(Arc::new(f));
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
        self.config.blocking.max_threads = n;
        self
    }

    /// The most [`spawn_blocking`](crate::spawn_blocking) closures that may
    /// wait for a busy blocking thread. A closure that would wait behind `n`
    /// others (every one of the
    /// [`max_blocking_threads`](Builder::max_blocking_threads) busy) is
    /// refused before it is queued: its [`JoinHandle`](crate::JoinHandle)
    /// resolves at once to a [`JoinError`](crate::JoinError) whose
    /// [`is_rejected`](crate::JoinError::is_rejected) is true, and
    /// [`Metrics::rejected_blocking`](crate::Metrics::rejected_blocking)
    /// counts it. Every closure accepted runs. `0` accepts only a closure a
    /// thread can start at once. `pool::fs`'s own file operations are
    /// never refused.
    ///
    /// Default: unbounded.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new()
    ///     .max_blocking_threads(1)
    ///     .max_blocking_queue(1)
    ///     .build()
    ///     .unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel::<()>();
    /// let running = pool.spawn_blocking(move || rx.recv().unwrap());
    /// # while pool.metrics().blocking_queue_depth > 0 { std::thread::yield_now(); }
    /// let queued = pool.spawn_blocking(|| "queued: it runs");
    /// let refused = pool.spawn_blocking(|| "refused: it never runs");
    /// assert!(pool.block_on(refused).unwrap_err().is_rejected());
    /// tx.send(()).unwrap();
    /// pool.block_on(running).unwrap();
    /// assert_eq!(pool.block_on(queued).unwrap(), "queued: it runs");
    /// ```
    pub fn max_blocking_queue(mut self, n: usize) -> Builder {
        self.config.blocking.max_queue = Some(n);
        self
    }

    /// The most live tasks ([`spawn`](crate::spawn),
    /// [`spawn_local`](crate::spawn_local)) the pool accepts at once. Past
    /// it, [`try_spawn`](crate::try_spawn) and
    /// [`task::Builder::try_spawn`](crate::task::Builder::try_spawn) return a
    /// [`SpawnError`](crate::SpawnError), and [`spawn`](crate::spawn) panics
    /// with the limit named; either way the future is dropped unpolled and
    /// [`Metrics::rejected_spawns`](crate::Metrics::rejected_spawns) counts
    /// it. A task's place is freed when it ends, however it ends. A
    /// `block_on`'s future is not a task and does not count, nor do
    /// `spawn_blocking` closures (see
    /// [`max_blocking_queue`](Builder::max_blocking_queue)).
    ///
    /// Default: unlimited. `0` makes [`build`](Builder::build) return an
    /// `InvalidInput` error.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().max_tasks(10_000).build().unwrap();
    /// let n = pool.block_on(async { pool::try_spawn(async { 1 }).unwrap().await.unwrap() });
    /// assert_eq!(n, 1);
    /// let err = pool::Builder::new().max_tasks(0).build().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// ```
    pub fn max_tasks(mut self, n: usize) -> Builder {
        self.config.max_tasks = Some(n);
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
        self.config.blocking.keep_alive = idle;
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
    /// (<https://ui.perfetto.dev>) or chrome://tracing; `examples`'
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
        self.config.trace = Some(path.into());
        self
    }

    /// Count how long every poll takes, in the log-scale buckets of
    /// [`Pool::poll_time_histogram`](crate::Pool::poll_time_histogram)
    /// (off by default: then every count stays 0).
    ///
    /// On, a worker reads the CPU's tick counter before and after each poll
    /// (on x86_64; `Instant` elsewhere), about 26 ns a poll on the machine
    /// of `docs/BENCHMARKS.md`, and `build` measures the counter's rate
    /// once (a 200 us spin); off, it costs one test of a flag a worker
    /// keeps.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().poll_time_histogram(true).build().unwrap();
    /// pool.block_on(pool.spawn(async {})).unwrap();
    /// // Counted when the poll returns, just after the task completed.
    /// while pool.poll_time_histogram().total() == 0 {
    ///     std::thread::yield_now();
    /// }
    /// assert_eq!(pool.poll_time_histogram().total(), 1);
    /// ```
    pub fn poll_time_histogram(mut self, on: bool) -> Builder {
        self.config.poll_time_histogram = on;
        self
    }

    /// Start the pool with its clock paused (off by default), as
    /// [`pool::time::pause`](crate::time::pause) would at once: for tests
    /// of retries, timeouts and caches. `pool::time` then reads a clock
    /// that stands still and jumps to the earliest timer's deadline
    /// whenever the pool is quiet (every worker asleep, no task queued or
    /// running, no `block_on` future polled or woken, no `spawn_blocking`
    /// closure running, no I/O readiness waiting), on any number of
    /// workers: an hour of sleeps takes no real time, and none ends early.
    /// `#[pool::test(start_paused = true)]` builds its pool this way. With
    /// feature `tokio-compat`, tokio's own clock (`tokio::time`) is not
    /// paused: see [`pool::time`](crate::time).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use pool::time::Instant;
    ///
    /// let pool = pool::Builder::new().start_paused(true).build().unwrap();
    /// pool.block_on(async {
    ///     let start = Instant::now();
    ///     pool::time::sleep(Duration::from_secs(3600)).await;
    ///     assert_eq!(start.elapsed(), Duration::from_secs(3600));
    /// });
    /// ```
    pub fn start_paused(mut self, paused: bool) -> Builder {
        self.config.start_paused = paused;
        self
    }

    /// A *seeded* pool, whose runs replay: its workers (`worker_threads`,
    /// 4 unless set, whatever the machine) are logical workers, stepped
    /// one at a time on the thread that calls [`Pool::block_on`], and a
    /// generator seeded with `seed` makes every choice a real pool leaves
    /// to timing: which worker acts next (so whether it pops, steals and
    /// from whom), when a `block_on` future or a `spawn_blocking` closure
    /// runs, the order of timers with one deadline, where they wake their
    /// tasks. The same seed, configuration and binary run the same
    /// schedule, with the same results and
    /// [`Pool::schedule_hash`](crate::Pool::schedule_hash), every time;
    /// another seed explores another interleaving.
    ///
    /// * Its clock is paused (as with [`start_paused`](Builder::start_paused))
    ///   and jumps to the next timer when no worker finds work: an hour of
    ///   timers takes no wall time. `pool::time::resume` panics.
    /// * `POOL_SEED=N` in the environment replaces the seed of every seeded
    ///   pool, and a seeded run that panics prints its seed and that line.
    /// * It has no real I/O: a socket, pipe, file, signal, child process or
    ///   `io::Async` is refused with [`io::ErrorKind::Unsupported`](std::io::ErrorKind::Unsupported).
    /// * If every task waits and no timer is pending, `block_on` panics
    ///   (a deadlock, which a real pool would hang on).
    /// * Only its own [`Pool::block_on`] (and `Pool::join`, `Pool::scope`)
    ///   steps it: a plain [`pool::block_on`](crate::block_on), or a task of
    ///   another pool, awaiting one of its `JoinHandle`s waits for ever,
    ///   since nobody runs the seeded pool meanwhile.
    ///
    /// What it does not replay: races inside pool's own atomics (its loom
    /// models cover those), preemption inside one poll, and code that reads
    /// the OS clock or starts threads of its own.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    ///
    /// fn run(seed: u64) -> (Vec<u64>, u64) {
    ///     let pool = pool::Builder::new().seed(seed).build().unwrap();
    ///     let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    ///     let handles: Vec<_> = (0..4)
    ///         .map(|i| {
    ///             let order = Arc::clone(&order);
    ///             pool.spawn(async move {
    ///                 pool::yield_now().await;
    ///                 order.lock().unwrap().push(i);
    ///             })
    ///         })
    ///         .collect();
    ///     pool.block_on(async {
    ///         for h in handles {
    ///             h.await.unwrap();
    ///         }
    ///     });
    ///     let order = order.lock().unwrap().clone();
    ///     (order, pool.schedule_hash())
    /// }
    ///
    /// assert_eq!(run(7), run(7));
    /// ```
    pub fn seed(mut self, seed: u64) -> Builder {
        self.config.seed = Some(seed);
        self
    }

    /// How a seeded pool ([`seed`](Builder::seed)) picks each step's actor:
    /// [`SeedStrategy::Random`](crate::SeedStrategy::Random) (the default)
    /// or [`SeedStrategy::Pct`](crate::SeedStrategy::Pct). Ignored by a
    /// pool that is not seeded.
    ///
    /// # Errors
    ///
    /// `build` returns `InvalidInput` for a `Pct` with `depth` or `steps`
    /// of 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use pool::SeedStrategy;
    ///
    /// let pool = pool::Builder::new()
    ///     .seed(3)
    ///     .seed_strategy(SeedStrategy::Pct { depth: 2, steps: 200 })
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(pool.block_on(pool.spawn(async { 1 + 1 })).unwrap(), 2);
    /// ```
    pub fn seed_strategy(mut self, strategy: SeedStrategy) -> Builder {
        self.config.seed_strategy = strategy;
        self
    }

    /// Give a seeded pool ([`seed`](Builder::seed)) a simulated network
    /// ([`pool::sim`](crate::sim)): its `pool::net` TCP and UDP sockets
    /// become in-memory endpoints on simulated hosts, every byte crosses a
    /// link with `net`'s latency and loss, drawn from the seed, and
    /// [`sim::partition`](crate::sim::partition) and
    /// [`Host::crash`](crate::sim::Host::crash) cut and kill hosts, so a
    /// run of a service and its clients replays with its faults.
    ///
    /// An unseeded pool with a network is an `InvalidInput` error at
    /// [`build`](Builder::build), as are `net`'s values out of range.
    ///
    /// Default: no network (a seeded pool refuses every socket, as
    /// `Unsupported`).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = pool::Builder::new().network(pool::sim::Network::new()).build().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// let pool = pool::Builder::new().seed(1).network(pool::sim::Network::new()).build().unwrap();
    /// assert_eq!(pool.seed(), Some(1));
    /// ```
    pub fn network(mut self, net: crate::sim::settings::Network) -> Builder {
        self.config.network = Some(net);
        self
    }

    /// Let [`pool::fs`](crate::fs) run opens, reads, writes and syncs on
    /// the pool's io_uring where the kernel gives one (on by default);
    /// `false` keeps every file operation on the blocking threads, as
    /// `POOL_FS=blocking` in the environment does for every pool.
    /// [`Metrics::fs_engine`](crate::Metrics::fs_engine) says which engine
    /// runs.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().io_uring(false).build().unwrap();
    /// pool.block_on(pool::fs::metadata("Cargo.toml")).unwrap();
    /// assert_eq!(pool.metrics().fs_engine, Some(pool::fs::FsEngine::Blocking));
    /// ```
    pub fn io_uring(mut self, enabled: bool) -> Builder {
        self.config.io_uring = enabled;
        self
    }

    /// Serve [tokio-console](https://github.com/tokio-rs/console) on
    /// `addr` (feature `console`): `tokio-console http://ADDR` then lists
    /// the pool's tasks (id, spawn location, state, polls, busy, scheduled
    /// and idle time, wakes, waker clones and drops, self-wakes;
    /// `spawn_blocking` closures as `blocking`), each task's poll-time and
    /// scheduled-time histograms, and pauses and resumes. No `tracing`
    /// subscriber, no `--cfg tokio_unstable`.
    ///
    /// The pool serves it from a thread of its own (`<name>-console`), so a
    /// pool whose every worker is stuck in a poll can still be seen. Tasks
    /// are recorded from the pool's start: each spawn, poll, wake and drop
    /// costs a table lookup and two clock readings more (measured in
    /// `docs/BENCHMARKS.md`, "What the operator's view costs"), a pool
    /// built without it nothing. A finished task is kept about 10 s (at
    /// most 4 096 of them), so memory follows the live tasks, not how many
    /// ran. tokio's own tasks (feature `tokio-compat`) are not listed.
    /// The global pool serves it when `POOL_CONSOLE=ADDR` is set.
    ///
    /// `"127.0.0.1:0"` picks a free port: [`Pool::console_addr`](crate::Pool::console_addr)
    /// says which. Serve it on loopback unless every client that can
    /// reach the address may see the task list.
    ///
    /// # Errors
    ///
    /// [`build`](Builder::build) fails with `InvalidInput` if `addr` is not
    /// a socket address (`"127.0.0.1:6669"`), and with the bind error
    /// (`AddrInUse`, say), naming the address, if it cannot listen there.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new().console("127.0.0.1:0").build().unwrap();
    /// println!("tokio-console http://{}", pool.console_addr().unwrap());
    /// let err = pool::Builder::new().console("localhost").build().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// ```
    #[cfg(feature = "console")]
    pub fn console(mut self, addr: impl Into<String>) -> Builder {
        self.config.console = Some(addr.into());
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
        let Builder { config, stall } = self;
        let mut look: Option<Box<dyn Look>> = None;
        if let Some(stall) = stall {
            if stall.threshold < MIN_STALL_THRESHOLD {
                return Err(invalid_input(format!(
                    "on_stall threshold must be at least {MIN_STALL_THRESHOLD:?} (the watcher \
                     looks at the workers about every millisecond), got {:?}",
                    stall.threshold
                )));
            }
            look = Some(Box::new(StallWatch::new(stall)));
        }
        Pool::start(config, look)
    }
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Builder");
        self.config.debug_settings(&mut d);
        d.field("on_stall", &self.stall.as_ref().map(|s| s.threshold))
            .finish()
    }
}
