//! The executors under comparison, behind one trait so that every workload is
//! written once.
//!
//! Each value of an `Exec` is a fresh runtime with `workers` threads; it is
//! dropped (and its threads joined where the runtime allows) after use.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A runtime that runs `Send` futures on worker threads.
pub trait Exec: Sized + 'static {
    /// Its name in tables and charts.
    const NAME: &'static str;
    /// The handle of a spawned task; awaiting it gives the output.
    type Handle<T: Send + 'static>: Future<Output = T> + Send + 'static;

    /// A fresh runtime with `workers` worker threads.
    fn start(workers: usize) -> Self;

    /// Spawn `f` onto this runtime from inside one of its tasks.
    fn spawn<T: Send + 'static>(f: impl Future<Output = T> + Send + 'static) -> Self::Handle<T>;

    /// Spawn `f` onto this runtime from a thread outside it.
    fn spawn_outside<T: Send + 'static>(
        &self,
        f: impl Future<Output = T> + Send + 'static,
    ) -> Self::Handle<T>;

    /// Block this (outside) thread on `f`, with this runtime current.
    fn wait<T>(&self, f: impl Future<Output = T>) -> T;

    /// Run `f` as a task on the runtime and wait for it from this thread.
    fn run<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> T {
        let h = self.spawn_outside(f);
        self.wait(h)
    }
}

/// `pool`.
pub struct Pool(pool::Pool);

impl Pool {
    /// The pool itself (for fork-join beside its tasks).
    pub fn inner(&self) -> &pool::Pool {
        &self.0
    }
}

/// Unwraps a `pool::JoinHandle`'s result.
pub struct PoolHandle<T>(pool::JoinHandle<T>);

impl<T> Future for PoolHandle<T> {
    type Output = T;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|r| r.expect("a benchmark task failed"))
    }
}

/// `Exec` for a `pool` configured by `$configure` (a `Builder` -> `Builder`
/// function): the plain pool, and the variants whose cost `compare
/// --pool-variants` measures.
macro_rules! pool_exec {
    ($ty:ident, $name:literal, $configure:expr) => {
        pool_exec!($ty, $name, $configure, pool::spawn);
    };
    ($ty:ident, $name:literal, $configure:expr, $spawn:expr) => {
        impl Exec for $ty {
            const NAME: &'static str = $name;
            type Handle<T: Send + 'static> = PoolHandle<T>;

            fn start(workers: usize) -> Self {
                let configure: fn(pool::Builder) -> pool::Builder = $configure;
                $ty(configure(
                    pool::Builder::new()
                        .worker_threads(workers)
                        .thread_name("bench-pool"),
                )
                .build()
                .expect("start pool"))
            }

            fn spawn<T: Send + 'static>(
                f: impl Future<Output = T> + Send + 'static,
            ) -> PoolHandle<T> {
                PoolHandle($spawn(f))
            }

            fn spawn_outside<T: Send + 'static>(
                &self,
                f: impl Future<Output = T> + Send + 'static,
            ) -> PoolHandle<T> {
                PoolHandle(self.0.spawn(f))
            }

            fn wait<T>(&self, f: impl Future<Output = T>) -> T {
                self.0.block_on(f)
            }
        }
    };
}

pool_exec!(Pool, "pool", |b| b);

/// `pool` recording its timeline (`Builder::trace`) into a file in the
/// temporary directory, written when the runtime is dropped (after the
/// measurement).
pub struct PoolTraced(pool::Pool);

/// Where `PoolTraced` writes (and rewrites) its trace.
pub fn bench_trace_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("pool-bench-trace-{}.json", std::process::id()))
}

pool_exec!(PoolTraced, "pool+trace", |b| b.trace(bench_trace_path()));

/// `pool` with a stall handler (`Builder::on_stall`, 100 ms, which no
/// benchmark poll reaches: the cost of watching, not of reporting).
pub struct PoolStall(pool::Pool);

pool_exec!(PoolStall, "pool+stall", |b| b
    .on_stall(std::time::Duration::from_millis(100), |_| {}));

/// `pool` timing every poll (`Builder::poll_time_histogram`).
pub struct PoolHist(pool::Pool);

pool_exec!(PoolHist, "pool+hist", |b| b.poll_time_histogram(true));

/// `pool` serving tokio-console (`Builder::console`, on a free loopback
/// port): every spawn, poll, wake and drop recorded in its task table.
pub struct PoolConsole(pool::Pool);

pool_exec!(PoolConsole, "pool+console", |b| b.console("127.0.0.1:0"));

/// `pool` whose tasks are all spawned with a name (`task::Builder`): the
/// cost of a name (its copy, and its entry in the pool's names from the
/// spawn to the task's end).
pub struct PoolNamed(pool::Pool);

/// A spawn of `f` with a name, as `PoolNamed` spawns.
fn spawn_named<T: Send + 'static>(
    f: impl Future<Output = T> + Send + 'static,
) -> pool::JoinHandle<T> {
    pool::task::Builder::new()
        .name("bench-task")
        .spawn(f)
        .expect("a named spawn")
}

pool_exec!(PoolNamed, "pool+named", |b| b, spawn_named);

/// tokio's multi-thread runtime.
pub struct Tokio(tokio::runtime::Runtime);

/// Unwraps a `tokio::task::JoinHandle`'s result.
pub struct TokioHandle<T>(tokio::task::JoinHandle<T>);

impl<T> Future for TokioHandle<T> {
    type Output = T;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|r| r.expect("a benchmark task failed"))
    }
}

impl Exec for Tokio {
    const NAME: &'static str = "tokio";
    type Handle<T: Send + 'static> = TokioHandle<T>;

    fn start(workers: usize) -> Self {
        Tokio(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .build()
                .expect("start tokio"),
        )
    }

    fn spawn<T: Send + 'static>(f: impl Future<Output = T> + Send + 'static) -> TokioHandle<T> {
        TokioHandle(tokio::spawn(f))
    }

    fn spawn_outside<T: Send + 'static>(
        &self,
        f: impl Future<Output = T> + Send + 'static,
    ) -> TokioHandle<T> {
        TokioHandle(self.0.spawn(f))
    }

    fn wait<T>(&self, f: impl Future<Output = T>) -> T {
        self.0.block_on(f)
    }
}

thread_local! {
    /// The async-executor whose thread this is (its `run` threads, and an
    /// outside thread inside `wait`).
    static AE_CURRENT: RefCell<Option<Arc<async_executor::Executor<'static>>>> =
        const { RefCell::new(None) };
}

/// async-executor, driven by `workers` plain threads each running
/// `block_on(ex.run(..))`: the standard smol pattern.
pub struct AsyncExecutor {
    ex: Arc<async_executor::Executor<'static>>,
    stop: Option<async_channel::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Exec for AsyncExecutor {
    const NAME: &'static str = "async-executor";
    type Handle<T: Send + 'static> = async_executor::Task<T>;

    fn start(workers: usize) -> Self {
        let ex = Arc::new(async_executor::Executor::new());
        let (stop, stopped) = async_channel::bounded::<()>(1);
        let threads = (0..workers)
            .map(|i| {
                let (ex, stopped) = (ex.clone(), stopped.clone());
                std::thread::Builder::new()
                    .name(format!("bench-ae-{i}"))
                    .spawn(move || {
                        AE_CURRENT.with(|c| *c.borrow_mut() = Some(ex.clone()));
                        futures_lite::future::block_on(ex.run(async {
                            let _ = stopped.recv().await;
                        }));
                        AE_CURRENT.with(|c| c.borrow_mut().take());
                    })
                    .expect("start an async-executor thread")
            })
            .collect();
        AsyncExecutor {
            ex,
            stop: Some(stop),
            threads,
        }
    }

    fn spawn<T: Send + 'static>(
        f: impl Future<Output = T> + Send + 'static,
    ) -> async_executor::Task<T> {
        AE_CURRENT.with(|c| {
            c.borrow()
                .as_ref()
                .expect("spawn outside an async-executor thread")
                .spawn(f)
        })
    }

    fn spawn_outside<T: Send + 'static>(
        &self,
        f: impl Future<Output = T> + Send + 'static,
    ) -> async_executor::Task<T> {
        self.ex.spawn(f)
    }

    fn wait<T>(&self, f: impl Future<Output = T>) -> T {
        AE_CURRENT.with(|c| *c.borrow_mut() = Some(self.ex.clone()));
        let out = futures_lite::future::block_on(f);
        AE_CURRENT.with(|c| c.borrow_mut().take());
        out
    }
}

impl Drop for AsyncExecutor {
    fn drop(&mut self) {
        // Closing the channel ends every `run`.
        drop(self.stop.take());
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

thread_local! {
    static LOCAL: async_executor::LocalExecutor<'static> = const { async_executor::LocalExecutor::new() };
}

/// The single-threaded floor: async-executor's `LocalExecutor` on the calling
/// thread, no cross-thread work at all. `workers` is ignored.
pub struct Local;

impl Exec for Local {
    const NAME: &'static str = "local (1 thread)";
    type Handle<T: Send + 'static> = async_executor::Task<T>;

    fn start(_workers: usize) -> Self {
        Local
    }

    fn spawn<T: Send + 'static>(
        f: impl Future<Output = T> + Send + 'static,
    ) -> async_executor::Task<T> {
        LOCAL.with(|ex| ex.spawn(f))
    }

    fn spawn_outside<T: Send + 'static>(
        &self,
        f: impl Future<Output = T> + Send + 'static,
    ) -> async_executor::Task<T> {
        Self::spawn(f)
    }

    fn wait<T>(&self, f: impl Future<Output = T>) -> T {
        LOCAL.with(|ex| futures_lite::future::block_on(ex.run(f)))
    }
}
