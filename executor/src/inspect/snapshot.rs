//! A pool's metrics read off its registry: the snapshot behind
//! `Pool::metrics`, `Pool::worker_metrics` and `Pool::poll_time_histogram`
//! (and the Prometheus collector), summed over the per-worker counters
//! (`metrics.rs`), the sleep manager's counts, the blocking pool and the
//! driver.

use super::metrics::{FsEngine, Metrics, WorkerMetrics};
use super::poll_times::{self, Histogram};
use crate::scheduler::io_driver::IoDriver;
use crate::scheduler::registry::{Registry, WorkerInfo};
use crate::scheduler::task_limit::TaskLimit;
use crate::sleep::deadlock::DeadlockDetector;
use std::time::Duration;

/// A snapshot of `r`'s counters ([`Metrics`]).
pub(crate) fn metrics(r: &Registry) -> Metrics {
    let mut m = Metrics {
        workers: r.num_workers(),
        ..Metrics::default()
    };
    let mut ended = r.outside_stats().ended();
    for (index, w) in r.workers().iter().enumerate() {
        w.stats.add_to(&mut m);
        ended += w.stats.ended();
        m.busy += worker_busy(r, index);
    }
    r.outside_stats().add_to(&mut m);
    // Saturating: a task that ended on a block read before the block
    // that counted its spawn may be counted ended and not yet spawned.
    m.alive_tasks = m.spawned.saturating_sub(ended) as usize;
    let (sleeps, self_wakes) = r.sleep_manager().sleep_counts();
    m.sleeps += sleeps;
    m.wakeups += self_wakes;
    m.deadlocks = r
        .sleep_manager()
        .deadlock()
        .map_or(0, DeadlockDetector::events);
    (m.blocking_threads, m.blocking_queue_depth) = r.blocking().threads_and_queue();
    m.injector_depth = r.injector_len();
    m.queued_tasks = m.injector_depth + r.workers().iter().map(local_queue_depth).sum::<usize>();
    m.schedule_delay = r.schedule_delay().delay();
    m.io_events = r.driver().io_events();
    m.accept_errors = r.driver().accept_errors();
    m.rejected_spawns = r.task_limit().map_or(0, TaskLimit::rejected);
    m.rejected_blocking = r.blocking().rejected();
    m.fs_blocking_ops = r.light_calls().light_calls_run();
    let ring_ops = r.driver().ring_ops();
    m.fs_ring_ops = ring_ops.unwrap_or(0);
    m.fs_engine = match ring_ops {
        Some(_) => Some(FsEngine::IoUring),
        None if m.fs_blocking_ops > 0 => Some(FsEngine::Blocking),
        None => None,
    };
    m
}

/// Worker `index`'s busy time (`Metrics::busy`), with the tokio work of
/// a sleep in its runtime under way (`tokio-compat`).
fn worker_busy(r: &Registry, index: usize) -> Duration {
    let tokio_busy = || {
        #[cfg(feature = "tokio-compat")]
        if let Some(tokio) = r.tokio().get() {
            return tokio.busy(index);
        }
        Duration::ZERO
    };
    r.worker_stats(index).busy(r.busy_clock(), tokio_busy)
}

/// Each worker's counters, in index order.
pub(crate) fn worker_metrics(r: &Registry) -> Vec<WorkerMetrics> {
    r.workers()
        .iter()
        .enumerate()
        .map(|(index, w)| {
            let (polls, steals) = w.stats.polls_and_steals();
            let (sleeps, wakeups) = r.sleep_manager().worker_sleeps(index);
            WorkerMetrics {
                busy: worker_busy(r, index),
                polls,
                steals,
                sleeps,
                wakeups,
                local_queue_depth: local_queue_depth(w),
            }
        })
        .collect()
}

/// Tasks queued on worker `w`: its deque, its LIFO slot, its deferred task.
fn local_queue_depth(w: &WorkerInfo) -> usize {
    w.stealer.len() + usize::from(w.lifo.is_occupied()) + usize::from(w.deferred.is_occupied())
}

/// The poll-time histogram, summed over the workers (all counts 0 unless
/// `Builder::poll_time_histogram(true)`).
pub(crate) fn poll_time_histogram(r: &Registry) -> Histogram {
    poll_times(r).0
}

/// The poll-time histogram and the time of its polls in all.
pub(crate) fn poll_times(r: &Registry) -> (Histogram, Duration) {
    let mut sums = [0; poll_times::BUCKETS];
    let mut total_ns = 0;
    for w in r.workers().iter() {
        total_ns += w.stats.poll_times.add_to(&mut sums);
    }
    (poll_times::histogram(&sums), Duration::from_nanos(total_ns))
}
