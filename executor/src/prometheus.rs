//! Feature `prometheus`: a pool's metrics as a collector of the
//! `prometheus-client` crate ([`Handle::prometheus_collector`]).
//!
//! # Invariants
//!
//! * Each scrape takes one snapshot ([`Handle::metrics`],
//!   [`Handle::worker_metrics`], the poll-time histogram) and encodes it:
//!   nothing is kept between scrapes, and a scrape costs the pool what a
//!   `metrics()` call does.
//! * Totals are counters (`_total`), values that go up and down are
//!   gauges; per-worker series carry a `worker` label (the worker's index);
//!   times are in seconds. The histogram is there only when the pool times
//!   its polls (`Builder::poll_time_histogram`), so a scrape never shows a
//!   histogram that is always empty.

use crate::handle::Handle;
use crate::inspect::poll_times::Histogram;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use std::fmt;
use std::time::Duration;

/// What [`Handle::prometheus_collector`] returns.
struct PoolCollector {
    handle: Handle,
}

impl fmt::Debug for PoolCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolCollector").finish_non_exhaustive()
    }
}

impl Handle {
    /// The pool's metrics for a `prometheus-client` registry (cargo feature
    /// `prometheus`): register it once, and every scrape reads the pool
    /// afresh.
    ///
    /// The series, as `prometheus_client::encoding::text::encode` writes
    /// them:
    ///
    /// | series | type | from |
    /// |---|---|---|
    /// | `pool_workers` | gauge | [`Metrics::workers`](crate::Metrics::workers) |
    /// | `pool_tasks_alive` | gauge | `alive_tasks` |
    /// | `pool_tasks_spawned_total` | counter | `spawned` |
    /// | `pool_polls_total` | counter | `polls` |
    /// | `pool_steals_total` | counter | `steals` |
    /// | `pool_wakeups_total` | counter | `wakeups` |
    /// | `pool_forced_yields_total` | counter | `forced_yields` |
    /// | `pool_io_events_total` | counter | `io_events` |
    /// | `pool_fs_ring_ops_total` | counter | `fs_ring_ops` |
    /// | `pool_fs_blocking_ops_total` | counter | `fs_blocking_ops` |
    /// | `pool_stalls_total` | counter | `stalls` |
    /// | `pool_rejected_spawns_total` | counter | `rejected_spawns` |
    /// | `pool_rejected_blocking_total` | counter | `rejected_blocking` |
    /// | `pool_accept_errors_total` | counter | `accept_errors` |
    /// | `pool_injector_depth` | gauge | `injector_depth` |
    /// | `pool_queued_tasks` | gauge | `queued_tasks` |
    /// | `pool_schedule_delay_seconds` | gauge | `schedule_delay` |
    /// | `pool_blocking_threads` | gauge | `blocking_threads` |
    /// | `pool_blocking_queue_depth` | gauge | `blocking_queue_depth` |
    /// | `pool_worker_busy_seconds_total{worker="i"}` | counter | [`WorkerMetrics::busy`](crate::WorkerMetrics::busy) |
    /// | `pool_worker_polls_total{worker="i"}` | counter | `polls` |
    /// | `pool_worker_local_queue_depth{worker="i"}` | gauge | `local_queue_depth` |
    /// | `pool_poll_time_seconds` | histogram | the [poll-time histogram](crate::Pool::poll_time_histogram), only with [`Builder::poll_time_histogram(true)`](crate::Builder::poll_time_histogram) |
    ///
    /// Utilization over a scrape interval is
    /// `rate(pool_worker_busy_seconds_total[1m])` per worker (1.0 is a
    /// worker busy all the time).
    ///
    /// # Examples
    ///
    /// Serve the text on `/metrics` with any HTTP server (here, the text
    /// itself):
    ///
    /// ```
    /// use prometheus_client::encoding::text::encode;
    /// use prometheus_client::registry::Registry;
    ///
    /// let pool = pool::Builder::new().worker_threads(2).build().unwrap();
    /// let mut registry = Registry::default();
    /// registry.register_collector(Box::new(pool.handle().prometheus_collector()));
    ///
    /// pool.block_on(pool.spawn(async {})).unwrap();
    /// let mut text = String::new();
    /// encode(&mut text, &registry).unwrap(); // on each scrape
    /// assert!(text.contains("pool_tasks_spawned_total 1\n"));
    /// assert!(text.contains("pool_worker_polls_total{worker=\"1\"}"));
    /// ```
    pub fn prometheus_collector(&self) -> impl Collector {
        PoolCollector {
            handle: self.clone(),
        }
    }
}

impl Collector for PoolCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let m = self.handle.metrics();
        let e = &mut encoder;
        gauge(e, "pool_workers", "Worker threads of the pool", m.workers)?;
        gauge(
            e,
            "pool_tasks_alive",
            "Tasks spawned and not yet completed, cancelled or dropped",
            m.alive_tasks,
        )?;
        counter(
            e,
            "pool_tasks_spawned",
            "Tasks spawned onto the pool",
            m.spawned,
        )?;
        counter(e, "pool_polls", "Task polls by workers", m.polls)?;
        counter(
            e,
            "pool_steals",
            "Tasks a worker took from another worker's deque",
            m.steals,
        )?;
        counter(
            e,
            "pool_wakeups",
            "Times a sleeping worker was signalled to wake",
            m.wakeups,
        )?;
        counter(
            e,
            "pool_forced_yields",
            "Polls that ended with the cooperative budget spent",
            m.forced_yields,
        )?;
        counter(
            e,
            "pool_io_events",
            "Readiness events the I/O driver delivered",
            m.io_events,
        )?;
        counter(
            e,
            "pool_fs_ring_ops",
            "File operations completed on the pool's io_urings",
            m.fs_ring_ops,
        )?;
        counter(
            e,
            "pool_fs_blocking_ops",
            "File operations run on the blocking threads",
            m.fs_blocking_ops,
        )?;
        counter(
            e,
            "pool_stalls",
            "Polls the stall detector reported",
            m.stalls,
        )?;
        counter(
            e,
            "pool_rejected_spawns",
            "Spawns refused at the pool's max_tasks",
            m.rejected_spawns,
        )?;
        counter(
            e,
            "pool_rejected_blocking",
            "spawn_blocking closures refused by the full blocking queue",
            m.rejected_blocking,
        )?;
        counter(
            e,
            "pool_accept_errors",
            "Accepts that failed for want of file descriptors (EMFILE, ENFILE)",
            m.accept_errors,
        )?;
        gauge(
            e,
            "pool_injector_depth",
            "Tasks waiting in the pool's shared queue",
            m.injector_depth,
        )?;
        gauge(
            e,
            "pool_queued_tasks",
            "Tasks ready to run and not yet polled",
            m.queued_tasks,
        )?;
        let delay = ConstGauge::new(m.schedule_delay.as_secs_f64());
        delay.encode(e.encode_descriptor(
            "pool_schedule_delay",
            "How long a task woken now would wait for a worker (smoothed)",
            Some(&Unit::Seconds),
            delay.metric_type(),
        )?)?;
        gauge(
            e,
            "pool_blocking_threads",
            "Blocking threads alive",
            m.blocking_threads,
        )?;
        gauge(
            e,
            "pool_blocking_queue_depth",
            "spawn_blocking closures waiting for a thread",
            m.blocking_queue_depth,
        )?;

        let workers = self.handle.worker_metrics();
        per_worker(
            e,
            ("pool_worker_busy", Some(&Unit::Seconds)),
            "Time the worker spent running tasks and jobs",
            MetricType::Counter,
            workers
                .iter()
                .map(|w| ConstCounter::new(w.busy.as_secs_f64())),
        )?;
        per_worker(
            e,
            ("pool_worker_polls", None),
            "Task polls by the worker",
            MetricType::Counter,
            workers.iter().map(|w| ConstCounter::new(w.polls)),
        )?;
        per_worker(
            e,
            ("pool_worker_local_queue_depth", None),
            "Tasks queued on the worker",
            MetricType::Gauge,
            workers
                .iter()
                .map(|w| ConstGauge::new(as_i64(w.local_queue_depth))),
        )?;

        if self.handle.registry.poll_clock().is_some() {
            let (histogram, total) = crate::inspect::snapshot::poll_times(&self.handle.registry);
            poll_times(e, &histogram, total)?;
        }
        Ok(())
    }
}

fn counter(e: &mut DescriptorEncoder<'_>, name: &str, help: &str, value: u64) -> fmt::Result {
    let metric = ConstCounter::new(value);
    metric.encode(e.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn gauge(e: &mut DescriptorEncoder<'_>, name: &str, help: &str, value: usize) -> fmt::Result {
    let metric = ConstGauge::new(as_i64(value));
    metric.encode(e.encode_descriptor(name, help, None, metric.metric_type())?)
}

/// One series per worker, labelled with its index.
fn per_worker<M: EncodeMetric>(
    e: &mut DescriptorEncoder<'_>,
    (name, unit): (&str, Option<&Unit>),
    help: &str,
    kind: MetricType,
    values: impl Iterator<Item = M>,
) -> fmt::Result {
    let mut family = e.encode_descriptor(name, help, unit, kind)?;
    for (index, value) in values.enumerate() {
        let labels = [("worker", index.to_string())];
        value.encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

fn poll_times(
    e: &mut DescriptorEncoder<'_>,
    histogram: &Histogram,
    total: Duration,
) -> fmt::Result {
    let buckets: Vec<(f64, u64)> = histogram
        .buckets
        .iter()
        .map(|b| {
            // The text encoder writes `f64::INFINITY` as "+Inf" (since
            // prometheus-client 0.25.2; 0.24 took `f64::MAX`).
            let le = if b.le == Duration::MAX {
                f64::INFINITY
            } else {
                b.le.as_secs_f64()
            };
            (le, b.count)
        })
        .collect();
    let mut metric = e.encode_descriptor(
        "pool_poll_time",
        "How long task polls took",
        Some(&Unit::Seconds),
        MetricType::Histogram,
    )?;
    metric.encode_histogram::<NoLabelSet>(total.as_secs_f64(), histogram.total(), &buckets, None)
}

fn as_i64(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
