//! Shutdown, in one place: the steps a pool takes when it is dropped (or
//! `shutdown_timeout` is called, or its start failed half-way), in order.
//!
//! 1. **Refuse new work and stop everyone**: set `shutting_down` (new
//!    spawns are cancelled at once), stop the watcher, tell the blocking
//!    threads to start no queued closure, stop the console's server (and
//!    join its thread), and set every worker's
//!    termination latch (waking the sleepers).
//! 2. **Wait for the workers** to leave their loops, bounded by the timeout
//!    if any, and join them; join the watcher. A worker leaving drops what is
//!    left in its LIFO slot and deque, and runs its leftover fork-join jobs.
//! 3. **Write the timeline**, if the pool is traced (its workers are gone,
//!    so every event is whole).
//! 4. **Wait for the running blocking closures**, within the same bound.
//! 5. **Drop every task that did not complete**: close the registry of live
//!    tasks and wake each one still registered (which queues it), drain the
//!    blocking queue, the injector and every deque, dropping the runnables;
//!    then shut the I/O driver down (sockets fail, timers complete).
//! 6. **Shut down the tokio runtimes no worker took** (feature
//!    `tokio-compat`, `tokio_compat/worker_runtime.rs`); each worker shut its own down as
//!    it exited, after dropping its own tasks.
//!
//! # Invariants
//!
//! * The steps run once per pool (`Threads::shut_down`).
//! * Each unfinished future is dropped exactly once, and its `JoinHandle`
//!   gives `cancelled`. That includes a task that a worker which has not
//!   left yet (a zero timeout, or a worker inside `block_on` in a task)
//!   runs after step 5 took its waker: step 5's wake found it already
//!   scheduled, so it is not in the queues step 5 drains, and its poll
//!   cancels it (`OwnedTasks::is_closed`) rather than leave it pending with
//!   no waker anywhere.
//! * No runnable pushed after step 1 outlives the shutdown: a push into the
//!   injector that lands after step 5 drained it is drained by its pusher
//!   (`ShutdownState::late_push`, one fence on each side;
//!   `shutdown_state.rs`).
//! * A pool dropped inside one of its own tasks does not wait for the worker
//!   running that task: it exits when the task returns.

use super::io_driver::IoDriver;
use super::registry::Registry;
use super::threads::Threads;
use super::worker::search::steal_one;
use crate::context::pool_cells;
use crate::task::future::cancel;
use std::sync::Arc;
use std::task::Waker;
use std::thread;
use std::time::{Duration, Instant};

/// Shut down the pool of `registry`, whose threads are `threads`, waiting
/// at most `timeout` for workers and blocking closures that are busy.
pub(crate) fn shutdown(registry: &Arc<Registry>, threads: &mut Threads, timeout: Option<Duration>) {
    if std::mem::replace(&mut threads.shut_down, true) {
        return;
    }
    let deadline = timeout.map(|t| Instant::now() + t);

    // 1. Refuse new work and stop everyone.
    registry.shutdown_state().begin();
    registry.sleep_manager().watcher().stop();
    registry.light_calls().close();
    registry.blocking().begin_shutdown();
    #[cfg(feature = "console")]
    if let Some(console) = threads.console.take() {
        console.stop();
    }
    for (index, w) in registry.workers().iter().enumerate() {
        if w.terminate.set() {
            registry.wake_worker(index);
        }
    }

    // 2. Wait for the workers and join them; join the watcher.
    let own = pool_cells::worker().filter(|w| Arc::ptr_eq(w.registry(), registry));
    let expected = threads.workers.len() - usize::from(own.is_some());
    let all_exited = registry.shutdown_state().wait_for_exits(expected, deadline);
    let me = thread::current().id();
    for t in threads.workers.drain(..) {
        if t.thread().id() != me && (all_exited || t.is_finished()) {
            // A worker that panicked (in a thread hook) already reported
            // its panic; there is nothing more to do with it here.
            let _ = t.join();
        }
    }
    if let Some(watcher) = threads.watcher.take() {
        // Step 1 stopped it; it returns from its next wait at once.
        if watcher.thread().id() != me {
            let _ = watcher.join();
        }
    }

    // A seeded pool's logical workers leave as worker threads do, on this
    // thread (`seeded/`).
    if let Some(seeded) = registry.seeded() {
        seeded.shut_down();
    }

    // 3. Write the timeline.
    if let Some(timeline) = registry.timeline() {
        timeline.write();
    }

    // 4. Wait for the running blocking closures.
    registry.blocking().wait_for_threads(deadline);

    // 5. Drop every task that did not complete.
    drop_unfinished_tasks(registry);

    // 6. The tokio runtimes no worker took (feature `tokio-compat`).
    #[cfg(feature = "tokio-compat")]
    if let Some(tokio) = registry.tokio().get() {
        tokio.stop();
    }
}

/// Step 5. Each live task is woken, which queues its runnable; every queue
/// is then drained and its runnables dropped, which drops their futures
/// exactly once.
fn drop_unfinished_tasks(registry: &Registry) {
    for waker in registry.tasks().close_and_drain() {
        waker.wake();
    }
    registry
        .blocking()
        .drain(registry.sleep_manager())
        .into_iter()
        .for_each(cancel);
    drain_queues(registry);
    registry.shutdown_state().drained();
    drain_queues(registry);
    // Sockets and timers that outlive the pool: their waits fail (or, for
    // timers, complete) from now on. Their wakers belong to tasks of other
    // pools or to outside threads (this pool's tasks are gone).
    let mut wakers = Vec::new();
    registry.driver().shut_down(&mut wakers);
    wakers.into_iter().for_each(Waker::wake);
}

/// Drop every runnable in the injector and in the deques and LIFO slots
/// of workers that did not exit in time (through their stealers):
/// shutdown's step 5, and a push that landed after it.
pub(super) fn drain_queues(registry: &Registry) {
    loop {
        let mut dropped_any = false;
        while let Some(runnable) = steal_one(|| registry.injector().steal()) {
            cancel(runnable);
            dropped_any = true;
        }
        for w in registry.workers().iter() {
            for slot in [&w.lifo, &w.deferred] {
                if let Some(runnable) = slot.take() {
                    cancel(runnable);
                    dropped_any = true;
                }
            }
            while let Some(runnable) = steal_one(|| w.stealer.steal()) {
                cancel(runnable);
                dropped_any = true;
            }
        }
        if !dropped_any {
            break;
        }
    }
}
