//! Feature `prometheus`: the collector's text parses as the exposition
//! format, carries the contract's names with the right types, and reads
//! the pool afresh on each scrape.

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tests::{wait_for, wait_until_asleep, watchdog};

/// One scrape: `# TYPE` by family, and every sample's value by its name
/// with labels. Panics on a line that is not the exposition format.
struct Scrape {
    types: BTreeMap<String, String>,
    samples: BTreeMap<String, f64>,
}

fn scrape(registry: &Registry) -> Scrape {
    let mut text = String::new();
    encode(&mut text, registry).unwrap();
    let mut types = BTreeMap::new();
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            types.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.starts_with('#') {
            assert!(
                line.starts_with("# HELP ") || line.starts_with("# UNIT ") || line == "# EOF",
                "not a comment of the format: {line:?}"
            );
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample is `series value`");
        let name_ok = series
            .split('{')
            .next()
            .unwrap()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
        assert!(name_ok, "bad metric name in {line:?}");
        if let Some(labels) = series.split_once('{').map(|(_, l)| l) {
            assert!(labels.ends_with('}'), "unclosed labels in {line:?}");
        }
        let value = match value {
            "+Inf" => f64::INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        samples.insert(series.to_string(), value);
    }
    assert!(text.ends_with("# EOF\n"), "{text}");
    Scrape { types, samples }
}

impl Scrape {
    fn value(&self, series: &str) -> f64 {
        *self
            .samples
            .get(series)
            .unwrap_or_else(|| panic!("no {series} in {:?}", self.samples.keys()))
    }
}

#[test]
fn the_text_carries_the_contracts_names_types_and_values() {
    watchdog("prometheus scrape", 30, || {
        let pool = tests::pool(2);
        let mut registry = Registry::default();
        registry.register_collector(Box::new(pool.handle().prometheus_collector()));
        for i in 0..10u64 {
            assert_eq!(pool.block_on(pool.spawn(async move { i })).unwrap(), i);
        }
        wait_until_asleep(&pool);
        let s = scrape(&registry);
        let m = pool.metrics();
        for (family, kind) in [
            ("pool_workers", "gauge"),
            ("pool_tasks_alive", "gauge"),
            ("pool_tasks_spawned", "counter"),
            ("pool_polls", "counter"),
            ("pool_steals", "counter"),
            ("pool_wakeups", "counter"),
            ("pool_forced_yields", "counter"),
            ("pool_io_events", "counter"),
            ("pool_fs_ring_ops", "counter"),
            ("pool_fs_blocking_ops", "counter"),
            ("pool_stalls", "counter"),
            ("pool_injector_depth", "gauge"),
            ("pool_queued_tasks", "gauge"),
            ("pool_schedule_delay_seconds", "gauge"),
            ("pool_blocking_threads", "gauge"),
            ("pool_blocking_queue_depth", "gauge"),
            ("pool_worker_busy_seconds", "counter"),
            ("pool_worker_polls", "counter"),
            ("pool_worker_local_queue_depth", "gauge"),
        ] {
            assert_eq!(
                s.types.get(family).map(String::as_str),
                Some(kind),
                "{family}"
            );
        }
        // Off by default: no histogram that would always be empty.
        assert!(!s.types.contains_key("pool_poll_time_seconds"));
        assert_eq!(s.value("pool_workers"), 2.0);
        assert_eq!(s.value("pool_tasks_spawned_total"), 10.0);
        assert_eq!(s.value("pool_tasks_alive"), 0.0);
        assert_eq!(s.value("pool_queued_tasks"), 0.0);
        assert_eq!(s.value("pool_polls_total"), m.polls as f64);
        assert_eq!(
            s.value("pool_fs_blocking_ops_total"),
            m.fs_blocking_ops as f64
        );
        let per_worker: f64 = (0..2)
            .map(|i| s.value(&format!("pool_worker_polls_total{{worker=\"{i}\"}}")))
            .sum();
        assert_eq!(per_worker, m.polls as f64);
        for i in 0..2 {
            let busy = s.value(&format!("pool_worker_busy_seconds_total{{worker=\"{i}\"}}"));
            assert!((0.0..60.0).contains(&busy), "worker {i} busy {busy}");
        }
    });
}

#[test]
fn each_scrape_reads_the_pool_afresh() {
    watchdog("prometheus rescrape", 30, || {
        let pool = tests::pool(1);
        let mut registry = Registry::default();
        registry.register_collector(Box::new(pool.handle().prometheus_collector()));
        let (started_tx, started) = std::sync::mpsc::channel();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let hog = pool.spawn(async move {
            started_tx.send(()).unwrap();
            held.recv().unwrap();
        });
        started.recv().unwrap();
        let queued: Vec<_> = (0..3).map(|_| pool.spawn(async {})).collect();
        let held_scrape = scrape(&registry);
        assert_eq!(held_scrape.value("pool_injector_depth"), 3.0);
        assert_eq!(held_scrape.value("pool_tasks_alive"), 4.0);
        release.send(()).unwrap();
        pool.block_on(hog).unwrap();
        for h in queued {
            pool.block_on(h).unwrap();
        }
        wait_for(
            "the queue drained in a scrape",
            Duration::from_secs(10),
            || {
                let s = scrape(&registry);
                s.value("pool_injector_depth") == 0.0 && s.value("pool_tasks_alive") == 0.0
            },
        );
    });
}

#[test]
fn the_poll_time_histogram_is_a_cumulative_histogram_in_seconds() {
    watchdog("prometheus histogram", 30, || {
        let pool = pool::Builder::new()
            .worker_threads(1)
            .poll_time_histogram(true)
            .build()
            .unwrap();
        let mut registry = Registry::default();
        registry.register_collector(Box::new(pool.handle().prometheus_collector()));
        pool.block_on(pool.spawn(async {
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(20) {}
        }))
        .unwrap();
        for _ in 0..9 {
            pool.block_on(pool.spawn(async {})).unwrap();
        }
        wait_until_asleep(&pool);
        let s = scrape(&registry);
        assert_eq!(
            s.types.get("pool_poll_time_seconds").map(String::as_str),
            Some("histogram")
        );
        assert_eq!(s.value("pool_poll_time_seconds_count"), 10.0);
        let sum = s.value("pool_poll_time_seconds_sum");
        assert!((0.02..1.0).contains(&sum), "sum {sum} s");
        let buckets: Vec<(f64, f64)> = s
            .samples
            .iter()
            .filter_map(|(series, &v)| {
                let le = series.strip_prefix("pool_poll_time_seconds_bucket{le=\"")?;
                let le = le.trim_end_matches("\"}");
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().ok()?
                };
                Some((le, v))
            })
            .collect();
        assert_eq!(buckets.len(), 22, "{buckets:?}");
        let mut sorted = buckets.clone();
        sorted.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        // Cumulative: never decreasing, ending at the count.
        assert!(sorted.windows(2).all(|w| w[0].1 <= w[1].1), "{sorted:?}");
        assert_eq!(sorted.last().unwrap(), &(f64::INFINITY, 10.0));
        // The 20 ms poll is above the 16 ms bound, the others below 1 ms.
        let below = |bound: f64| sorted.iter().rev().find(|(le, _)| *le <= bound).unwrap().1;
        assert_eq!(below(0.016), 9.0, "{sorted:?}");
    });
}
