//! Feature `tokio-compat`: one tokio runtime per pool, whose context every
//! thread of the pool enters for its whole life, so that tokio-only code
//! (tokio::time, tokio::net, tokio::spawn, and reqwest, tonic's channel,
//! tower's timeouts built on them) runs inside pool tasks with no per-poll
//! cost.
//!
//! # What runs where
//!
//! * The runtime is tokio's current-thread flavour, run by one thread of
//!   the pool's, `{name}-tokio`, for the life of the pool: it drives
//!   tokio's I/O and timer driver (an epoll instance of tokio's own) and
//!   runs the tasks `tokio::spawn` sends it. tokio's `spawn_blocking` (and
//!   so `tokio::fs`) runs on `{name}-tokio-blocking` threads, made on
//!   demand by tokio and ended after 10 s idle.
//! * Workers and blocking threads of the pool enter the runtime's context
//!   once, when they start (before `on_thread_start`), and leave it when
//!   they end (after `on_thread_stop`); `Pool::block_on` enters it for the
//!   length of its call. No poll pays anything.
//! * The other way round, the pool is current on the tokio threads: a
//!   `pool::spawn` in a `tokio::spawn`ed task lands on this pool, never on
//!   a silently started global one.
//! * A tokio socket or timer polled by a pool task becomes ready on the
//!   `-tokio` thread, which wakes the task: one cross-thread wake onto the
//!   pool's workers per readiness (pool's own sockets and timers are on the
//!   pool's driver, which the workers drive themselves: no crossing).
//!
//! # Shutdown
//!
//! After the pool's own tasks are dropped (`shutdown.rs`, step 6) the
//! runtime thread is told to stop: it leaves its `block_on`, and the
//! runtime shuts down in the background (its tasks are dropped there; a
//! running `spawn_blocking` closure is not waited for).

use super::registry::Registry;
use super::thread_name::{set_kernel_name, ThreadKind};
use crate::context;
use futures::channel::oneshot;
use parking_lot::Mutex;
use std::io;
use std::sync::{Arc, Weak};
use std::thread::{self, JoinHandle};

/// A pool's tokio runtime: its handle, and how to stop its thread.
#[derive(Debug)]
pub(crate) struct TokioCompat {
    handle: tokio::runtime::Handle,
    stop: Mutex<Option<(oneshot::Sender<()>, JoinHandle<()>)>>,
}

impl TokioCompat {
    /// Build the runtime and start its thread.
    pub(super) fn start(registry: &Arc<Registry>, thread_name: &str) -> io::Result<TokioCompat> {
        let weak: Weak<Registry> = Arc::downgrade(registry);
        let prefix = thread_name.to_owned();
        let on_start = {
            let weak = weak.clone();
            let prefix = prefix.clone();
            move || {
                // Its short name in the kernel (tokio named it in full).
                set_kernel_name(&ThreadKind::TokioBlocking.short_name(&prefix));
                if let Some(registry) = weak.upgrade() {
                    // Kept until the thread ends (see `on_thread_stop`).
                    std::mem::forget(context::enter_blocking_thread(&registry));
                }
            }
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name(ThreadKind::TokioBlocking.full_name(&prefix))
            .on_thread_start(on_start)
            .on_thread_stop(context::leave_thread_pool)
            .build()?;
        let handle = runtime.handle().clone();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let r = Arc::clone(registry);
        let thread = ThreadKind::Tokio.spawn(thread_name, thread::Builder::new(), move || {
            let current = context::enter_blocking_thread(&r);
            // Drop our strong reference before the pool's shutdown
            // waits for this thread; the thread-local holds another.
            drop(r);
            let _ = runtime.block_on(stop_rx);
            runtime.shutdown_background();
            drop(current);
        })?;
        Ok(TokioCompat {
            handle,
            stop: Mutex::new(Some((stop_tx, thread))),
        })
    }

    /// Enter the runtime's context on this thread until the guard drops.
    pub(super) fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.handle.enter()
    }

    /// Stop the runtime thread and join it (unless this is that thread).
    pub(super) fn stop(&self) {
        let Some((stop, thread)) = self.stop.lock().take() else {
            return;
        };
        let _ = stop.send(());
        if thread.thread().id() != thread::current().id() {
            let _ = thread.join();
        }
    }
}
