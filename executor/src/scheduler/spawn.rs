//! Spawning: how a future becomes a task of the pool, and the schedule
//! functions through which every runnable enters it.
//!
//! # Invariants
//!
//! * A task is one `async_task` allocation: its `TaskHeader` (holding a
//!   share of the `Registry`, `task/share.rs`: mostly from its spawning
//!   worker's cache), a schedule function that captures nothing (a fn item:
//!   zero-sized, so it costs the task no bytes) and its `TaskFuture`.
//! * A task is registered in the live tasks (`OwnedTasks`) before it is
//!   first scheduled; a spawn after shutdown began, or into a closed
//!   registry, is cancelled at once.
//! * Every runnable enters through one of three doors, its task's schedule
//!   function: `schedule_task` for `spawn` (on this pool's worker:
//!   `WorkerThread::schedule_local`; elsewhere: `inject`),
//!   `schedule_pinned` for `spawn_local` (its worker's local queue, or its
//!   inbox: `send_home`), `schedule_blocking` for a
//!   `spawn_blocking` closure (the blocking pool's queue, never a worker).
//!   A spawn on a worker hands its first schedule to that worker directly
//!   (`spawn_raw`), as `schedule_task` would.
//! * A pool with `Builder::max_tasks` takes a task's place before the task
//!   is made (`spawn_task_on`, `spawn_local_task`: `TaskLimit`), and
//!   refuses the spawn, dropping the future unpolled, when there is none.
//!   `spawn_blocking` closures are bounded by the blocking queue instead
//!   (`schedule_blocking`); light calls' drainers by nothing
//!   (`schedule_drainer`).

use super::blocking::BlockingTask;
use super::light_calls::LightCall;
use super::registry::Registry;
use super::shutdown::drain_queues;
use super::worker::worker_thread::WorkerThread;
use crate::context::pool_cells;
use crate::task::future::cancel;
use crate::task::future::TaskFuture;
use crate::task::header::Runnable;
use crate::task::header::TaskHeader;
use crate::task::header::TaskKind;
use crate::task::id::TaskId;
use crate::task::join_handle::JoinHandle;
use crate::task::spawn_error::SpawnError;
use async_task::{ScheduleInfo, WithInfo};
use std::future::Future;
use std::panic::Location;
use std::sync::Arc;

/// Run a light call (one file operation) on the blocking threads,
/// batched with the others (`light_calls.rs`): a drainer it needs starts
/// as a `spawn_blocking` closure. A call the pool never runs (it shut
/// down) is dropped: its owner learns it from what the call owned.
pub(crate) fn run_batched(registry: &Arc<Registry>, call: LightCall) {
    registry.light_calls().submit(call, |me| {
        let drainer_registry = Arc::clone(registry);
        let (shard_hint, id) = outside_spawn(registry);
        let drainer = spawn_with(
            registry,
            BlockingTask::new(
                move || drainer_registry.light_calls().drain(me),
                Arc::clone(registry),
            ),
            schedule_drainer,
            shard_hint,
            (id, Location::caller(), TaskKind::Blocking, None),
            None,
        );
        drop(drainer); // detached
    });
}

/// Spawn `future` onto this pool; `at` is where the user called spawn.
///
/// # Panics
///
/// Past the pool's `max_tasks` (`refused`).
#[inline]
pub(crate) fn spawn_task<F>(
    registry: &Arc<Registry>,
    future: F,
    at: &'static Location<'static>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    spawn_task_on(registry, future, at, None, registry.local_worker())
        .unwrap_or_else(|e| refused(e, at))
}

/// The panic of a spawn that cannot return its `SpawnError` (`pool::spawn`
/// and the spawns made like it): the limit, its value, the user's spawn
/// site, and the way to shed instead.
#[cold]
#[inline(never)]
pub(crate) fn refused(e: SpawnError, at: &'static Location<'static>) -> ! {
    panic!("pool::spawn at {at}: {e}; pool::try_spawn returns this error instead of panicking")
}

/// `spawn`, named `name` if it has one (`task::Builder`), from `local`,
/// this thread's worker if it is one of this pool's (as
/// `context::current::with_current_worker` found it): the one lookup of the
/// current worker on a spawn's path. Refused past the pool's `max_tasks`.
#[inline]
pub(crate) fn spawn_task_on<F>(
    registry: &Arc<Registry>,
    future: F,
    at: &'static Location<'static>,
    name: Option<&str>,
    local: Option<&WorkerThread>,
) -> Result<JoinHandle<F::Output>, SpawnError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if let Some(limit) = registry.task_limit() {
        limit.try_acquire()?;
    }
    Ok(spawn_placed(registry, future, at, name, local))
}

/// Spawn a task the pool's own machinery needs to keep a promise already
/// made (fork-join entering the pool from outside, a scope's job spawned
/// off its workers): it takes a place past `max_tasks` rather than fail
/// half-way (`TaskLimit::take_anyway`).
pub(crate) fn spawn_owed_task<F>(
    registry: &Arc<Registry>,
    future: F,
    at: &'static Location<'static>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if let Some(limit) = registry.task_limit() {
        limit.take_anyway();
    }
    spawn_placed(registry, future, at, None, registry.local_worker())
}

/// `spawn_task_on` once the task has its place (if the pool counts them).
#[inline]
fn spawn_placed<F>(
    registry: &Arc<Registry>,
    future: F,
    at: &'static Location<'static>,
    name: Option<&str>,
    local: Option<&WorkerThread>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    debug_assert!(local.is_none_or(|w| std::ptr::eq(&**w.registry(), &**registry)));
    registry.count(local, |s| &s.spawned, 1);
    let (shard_hint, id) = match local {
        Some(w) => (w.index(), w.next_task_id()),
        None => outside_spawn(registry),
    };
    spawn_with(
        registry,
        future,
        schedule_task,
        shard_hint,
        (id, at, TaskKind::Async, name),
        local,
    )
}

/// Spawn `future`, which need not be `Send`, pinned to `worker`, the
/// worker of this thread (`pool::spawn_local`), named `name` if it has
/// one. Refused past the pool's `max_tasks`.
pub(crate) fn spawn_local_task<F>(
    registry: &Arc<Registry>,
    worker: &WorkerThread,
    future: F,
    at: &'static Location<'static>,
    name: Option<&str>,
) -> Result<JoinHandle<F::Output>, SpawnError>
where
    F: Future + 'static,
    F::Output: 'static,
{
    debug_assert!(std::ptr::eq(
        Arc::as_ptr(worker.registry()),
        Arc::as_ptr(registry)
    ));
    if let Some(limit) = registry.task_limit() {
        limit.try_acquire()?;
    }
    registry.count(Some(worker), |s| &s.spawned, 1);
    let home = worker.index();
    // Its own shard: the worker finds its local tasks there when it
    // leaves (`LocalTasks::cancel_all`, `worker/local.rs`).
    debug_assert_eq!(registry.tasks().shard_of(home), home);
    let meta = (worker.next_task_id(), at, TaskKind::Local, name);
    // SAFETY: `spawn_raw`'s contract for a future that is not `Send`:
    // `schedule_pinned` hands every runnable of this task to `home`'s
    // worker, which is this thread, and only that worker runs or drops
    // them (its local queue and inbox, `LocalTasks::cancel_all` when it
    // leaves); a runnable it can no longer take is leaked, never dropped
    // elsewhere.
    Ok(unsafe {
        spawn_raw(
            registry,
            future,
            move |runnable: Runnable, _: ScheduleInfo| schedule_pinned(runnable, home),
            home,
            meta,
            Some(worker),
        )
    })
}

/// Run `f` on this pool's blocking threads, named `name` if it has one.
pub(crate) fn spawn_blocking_task<F, R>(
    registry: &Arc<Registry>,
    f: F,
    at: &'static Location<'static>,
    name: Option<&str>,
) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let (shard_hint, id) = outside_spawn(registry);
    spawn_with(
        registry,
        BlockingTask::new(f, Arc::clone(registry)),
        schedule_blocking,
        shard_hint,
        (id, at, TaskKind::Blocking, name),
        None,
    )
}

/// For a spawn from a thread that is not one of this pool's workers: the
/// registry shard it registers in, and a task id. Outside threads keep
/// to the shards past the workers' own (there are four per worker, the
/// first `n` the workers'), so a worker that finishes a task spawned
/// outside batches its removal (`Schedule::release`) instead of
/// taking, for every task, the lock that the spawning thread takes for
/// every spawn (measured: `OwnedTasks::remove` was pool's largest symbol
/// in spawn_many_remote).
fn outside_spawn(registry: &Registry) -> (usize, TaskId) {
    let (hint, id) = crate::context::plain_cells::outside_spawn();
    // A seeded pool numbers them from its own block, in spawn order.
    let id = registry.seeded().map_or(id, |s| s.outside_id());
    let workers = registry.num_workers();
    (
        workers + hint % (registry.tasks().shard_count() - workers),
        id,
    )
}

/// Make a task of `future` whose runnable goes to `schedule`, register
/// it as live, and schedule it once. `schedule` is a fn item: zero-sized,
/// so it costs the task no bytes. `local` is this thread's worker, if it
/// is one of this pool's.
#[inline]
fn spawn_with<F, S>(
    registry: &Arc<Registry>,
    future: F,
    schedule: S,
    shard_hint: usize,
    meta: SpawnMeta<'_>,
    local: Option<&WorkerThread>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    S: Fn(Runnable, ScheduleInfo) + Send + Sync + 'static,
{
    // SAFETY: the future and its output are `Send`: `spawn_raw` asks
    // nothing more.
    unsafe { spawn_raw(registry, future, schedule, shard_hint, meta, local) }
}

/// `spawn_with` for a future that may not be `Send`.
///
/// # Safety
///
/// If `F` is not `Send`, `schedule` must hand every runnable of the task
/// to the thread calling this, and that thread alone may run or drop
/// them. (A `!Send` output is kept safe by `JoinHandle`, which is `Send`
/// only for a `Send` output.)
#[inline]
unsafe fn spawn_raw<F, S>(
    registry: &Arc<Registry>,
    future: F,
    schedule: S,
    shard_hint: usize,
    (id, at, kind, name): SpawnMeta<'_>,
    local: Option<&WorkerThread>,
) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
    S: Fn(Runnable, ScheduleInfo) + Send + Sync + 'static,
{
    // SAFETY: `task_share` took one share of this pool for the header,
    // and points into its `Arc`.
    let header = unsafe {
        TaskHeader::new(
            registry.task_share(local),
            id,
            kind,
            registry.clock().now(),
            name.is_some(),
        )
    };
    let builder = async_task::Builder::new().metadata(header);
    // SAFETY: `spawn_unchecked`'s obligations, one by one:
    // - the future is `Send` (and `&TaskHeader` is `Send` because
    //   `TaskHeader: Sync`), so the `Runnable` may move between threads;
    //   or it is not, and then, by our caller's contract, every runnable
    //   is run and dropped on this thread (a cancel below included: it
    //   runs here);
    // - it is not `'static` only because it borrows the task's own
    //   metadata, which async-task allows; it borrows nothing else;
    // - the schedule function is `Send + Sync + 'static`, so wakers may
    //   be used and dropped anywhere.
    let (runnable, task) = unsafe {
        builder.spawn_unchecked(
            move |header: &TaskHeader| TaskFuture::new(future, header),
            WithInfo(schedule),
        )
    };
    let handle = JoinHandle::new(task);
    // SAFETY: a waker of this very task, whose runnable no other thread
    // has seen yet (it is scheduled below).
    let waker = unsafe { runnable.metadata().register_waker(runnable.waker(), at) };
    if registry.is_shutting_down() {
        // Dropping the runnable drops the future: the handle reports
        // `cancelled`.
        drop(waker);
        cancel(runnable);
        return handle;
    }
    // A seeded pool's simulated network puts it on its spawner's host
    // (`sim/`): the task polling here, or the blocking closure running.
    if let Some(seeded) = registry.seeded() {
        let parent = local.map_or_else(crate::context::plain_cells::blocking_task, |w| {
            w.stats().running_task()
        });
        seeded.task_spawned(parent, id);
    }
    // With its entry, before the first schedule: a panic's error and
    // the dump find the name (`task/names.rs`).
    let name: Option<Arc<str>> = name.map(Arc::from);
    #[cfg(feature = "console")]
    let console_name = name.clone().filter(|_| registry.console().is_some());
    match registry
        .tasks()
        .insert(shard_hint, waker, kind == TaskKind::Local, name)
    {
        Some(slot) => {
            runnable.metadata().set_slot(slot);
            // Before the first schedule: every poll finds the task.
            #[cfg(feature = "console")]
            if let Some(console) = registry.console() {
                console
                    .table()
                    .spawned(id, at, kind, console_name, runnable.waker());
            }
            if kind == TaskKind::Local {
                // Counted until its future drops (`Schedule::release`).
                if let Some(w) = local {
                    w.local_task_started();
                }
            }
        }
        None => {
            cancel(runnable);
            return handle;
        }
    }
    match local {
        // `schedule_task`, with the worker in hand.
        Some(w) if kind == TaskKind::Async => schedule_task_on(runnable, Some(w), false),
        _ => runnable.schedule(),
    }
    handle
}

/// What a spawn knows of its task besides the future: its id, where the
/// user called spawn, its kind, and its name if it has one.
type SpawnMeta<'a> = (
    TaskId,
    &'static Location<'static>,
    TaskKind,
    Option<&'a str>,
);

/// The schedule function of every task (`spawn`). It captures nothing, and
/// so must not rely on the task's own `Arc<Registry>` once it has handed the
/// runnable on: a worker may run it to completion and free it at once
/// (async-task keeps a zero-sized schedule function's task alive only for
/// the caller's reference, which a by-value wake moves into the runnable).
/// So the registry it works with after the hand-off is kept alive by its own
/// reference: the worker's, or a clone.
fn schedule_task(runnable: Runnable, info: ScheduleInfo) {
    let registry = runnable.metadata().owner();
    let worker = pool_cells::worker().filter(|w| std::ptr::eq(&**w.registry(), registry));
    schedule_task_on(runnable, worker, info.woken_while_running);
}

/// `schedule_task`'s work, given `worker`: this thread's worker if it is
/// one of the task's pool; `yielded` when the task woke itself running.
#[inline]
fn schedule_task_on(runnable: Runnable, worker: Option<&WorkerThread>, yielded: bool) {
    let header = runnable.metadata();
    header.mark_scheduled();
    // The load signal's sampler (`schedule_delay.rs`): the id is read only
    // when it is armed.
    let sampled = || header.id().as_u64();
    match worker {
        Some(worker) => {
            worker.registry().schedule_delay().scheduled(sampled);
            worker.schedule_local(runnable, yielded)
        }
        None => {
            let registry = header.owner_arc();
            registry.schedule_delay().scheduled(sampled);
            inject(&registry, runnable)
        }
    }
}

/// The schedule function of a `spawn_local` task pinned to worker `home`:
/// on that worker's thread, into its local queue; from anywhere else, into
/// its inbox, waking it if it sleeps (`send_home`). Like
/// `schedule_task`, it keeps its own reference to the registry after the
/// hand-off.
fn schedule_pinned(runnable: Runnable, home: usize) {
    runnable.metadata().mark_scheduled();
    let registry = runnable.metadata().owner();
    registry
        .schedule_delay()
        .scheduled(|| runnable.metadata().id().as_u64());
    match pool_cells::worker()
        .filter(|w| w.index() == home && std::ptr::eq(&**w.registry(), registry))
    {
        Some(worker) => worker.push_local(runnable),
        None => send_home(&runnable.metadata().owner_arc(), home, runnable),
    }
}

/// The schedule function of blocking tasks (`spawn_blocking`): into the
/// blocking pool's queue, never onto a worker, or refused if the queue is
/// full (`Builder::max_blocking_queue`). Keeps its own reference to the
/// registry for the reason given at `schedule_task`.
fn schedule_blocking(runnable: Runnable, _: ScheduleInfo) {
    runnable.metadata().mark_scheduled();
    let registry = runnable.metadata().owner_arc();
    registry.blocking().schedule(&registry, runnable, true);
}

/// The schedule function of a light calls' drainer (`run_batched`): as
/// `schedule_blocking`, never refused: the calls it carries were accepted.
fn schedule_drainer(runnable: Runnable, _: ScheduleInfo) {
    runnable.metadata().mark_scheduled();
    let registry = runnable.metadata().owner_arc();
    registry.blocking().schedule(&registry, runnable, false);
}

/// Push a runnable from a thread that is not a worker of this pool.
pub(super) fn inject(registry: &Registry, runnable: Runnable) {
    registry.injector().push(runnable);
    registry.outside_stats().bump_shared(|s| &s.injected, 1);
    if registry.is_shutting_down() {
        // Nobody is left to wake. If shutdown already drained the
        // injector, drain it here (see `ShutdownState::late_push`).
        if registry.shutdown_state().late_push() {
            drain_queues(registry);
        }
        return;
    }
    let woken = registry.sleep_manager().new_injected_jobs(1);
    if woken > 0 {
        registry
            .outside_stats()
            .bump_shared(|s| &s.wakeups, woken as u64);
    }
}

/// A `spawn_local` task of worker `home` was woken on another thread:
/// into that worker's inbox, and wake the worker if it sleeps (the
/// protocol is in `sleep/inbox.rs`; nobody else may run the task).
fn send_home(registry: &Registry, home: usize, runnable: Runnable) {
    match registry
        .sleep_manager()
        .post_home(home, &registry.workers()[home].inbox, runnable)
    {
        Ok(woken) => {
            if woken {
                registry.count(registry.local_worker(), |s| &s.wakeups, 1);
            }
        }
        // The worker has left. It closed its inbox only once every
        // local task of its own had dropped its future, on its thread
        // (`LocalTasks::cancel_all`, `worker/local.rs`), and a task whose future
        // is gone is never scheduled again: so this does not happen. Were
        // it to, the runnable must still not be dropped on this thread
        // (its future is not `Send`): leak it.
        Err(runnable) => std::mem::forget(runnable),
    }
}
