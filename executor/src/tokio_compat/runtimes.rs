//! `TokioRuntimes`: a pool's tokio runtimes (feature `tokio-compat`), one
//! per worker, built when the pool starts and each taken by its worker
//! (`worker_runtime.rs`); the handles and metrics every worker reads of the
//! others (`Peer`); outside threads entering them in turn (`Registry::enter_tokio`); and
//! shutdown's last step, for the runtimes no worker took.

use crate::context::thread_kind::ThreadKind;
use crate::scheduler::config::BlockingConfig;
use crate::scheduler::thread_name::set_kernel_name;
use parking_lot::Mutex;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};

/// The pool's tokio runtimes: one per worker, taken by it when it starts.
#[derive(Debug)]
pub(crate) struct TokioRuntimes {
    runtimes: Box<[Mutex<Option<Runtime>>]>,
    /// Every runtime's handle and metrics, in worker order, shared with
    /// the workers (`WorkerRuntime::balance`).
    peers: Arc<[Peer]>,
    /// The next runtime an outside thread enters.
    next: AtomicUsize,
}

impl TokioRuntimes {
    /// Build one runtime per worker (none started: a runtime runs only
    /// inside its worker's `block_on` calls). Their blocking threads follow
    /// the pool's settings: its keep-alive, and its `max_blocking_threads`
    /// split between them (so tokio's blocking threads of the whole pool
    /// are at most as many as the pool's own).
    ///
    /// Each blocking thread calls `serve` when it starts, to serve the pool
    /// as its own blocking threads do, and `leave` when it stops.
    pub(crate) fn start(
        blocking: &BlockingConfig,
        workers: usize,
        thread_name: &str,
        serve: impl Fn() + Clone + Send + Sync + 'static,
        leave: fn(),
    ) -> io::Result<TokioRuntimes> {
        let max_blocking = (blocking.max_threads / workers).max(1);
        let mut runtimes = Vec::with_capacity(workers);
        for _ in 0..workers {
            let serve = serve.clone();
            let prefix = thread_name.to_owned();
            let (hooks, stop_hooks) = (blocking.hooks.clone(), blocking.hooks.clone());
            let on_start = move || {
                // Its short name in the kernel (tokio named it in full).
                set_kernel_name(&ThreadKind::TokioBlocking.short_name(&prefix));
                ThreadKind::TokioBlocking.enter();
                serve();
                hooks.run_start();
            };
            let on_stop = move || {
                stop_hooks.run_stop();
                leave();
            };
            let mut builder = tokio::runtime::Builder::new_current_thread();
            builder
                .enable_all()
                .max_blocking_threads(max_blocking)
                .thread_keep_alive(blocking.keep_alive)
                .thread_name(ThreadKind::TokioBlocking.full_name(thread_name))
                .on_thread_start(on_start)
                .on_thread_stop(on_stop);
            if let Some(bytes) = blocking.stack_size {
                builder.thread_stack_size(bytes);
            }
            runtimes.push(builder.build()?);
        }
        Ok(TokioRuntimes {
            peers: runtimes
                .iter()
                .map(|r| Peer {
                    handle: r.handle().clone(),
                    metrics: r.metrics(),
                })
                .collect(),
            runtimes: runtimes.into_iter().map(|r| Mutex::new(Some(r))).collect(),
            next: AtomicUsize::new(0),
        })
    }

    /// Worker `index`'s runtime, to drive for its life (once).
    pub(crate) fn take_runtime(&self, index: usize) -> Option<Runtime> {
        self.runtimes.get(index).and_then(|r| r.lock().take())
    }

    /// The time runtime `index`'s scheduler spent running its tasks so far
    /// (`WorkerRuntime::tokio_busy`, read by a metrics snapshot).
    pub(crate) fn busy(&self, index: usize) -> Duration {
        self.peers[index].metrics.worker_total_busy_duration(0)
    }

    /// Every runtime's handle and metrics, for a worker's runtime.
    pub(crate) fn peers(&self) -> Arc<[Peer]> {
        Arc::clone(&self.peers)
    }

    /// Enter the next worker's runtime context on this (outside) thread
    /// until the guard drops.
    pub(crate) fn enter_next(&self) -> tokio::runtime::EnterGuard<'_> {
        // Relaxed: only spreads threads over runtimes.
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.peers.len();
        self.peers[i].handle.enter()
    }

    /// Shut down the runtimes no worker took (shutdown's last step).
    pub(crate) fn stop(&self) {
        for slot in self.runtimes.iter() {
            if let Some(runtime) = slot.lock().take() {
                runtime.shutdown_background();
            }
        }
    }
}

/// A runtime's tokio tasks alive, its runner (if started) not counted.
#[inline]
pub(super) fn alive_tasks(metrics: &tokio::runtime::RuntimeMetrics) -> usize {
    metrics.num_alive_tasks().saturating_sub(1)
}

/// One of the pool's runtimes, as any thread sees it.
#[derive(Debug)]
pub(crate) struct Peer {
    pub(super) handle: Handle,
    pub(super) metrics: tokio::runtime::RuntimeMetrics,
}
