//! Criterion benches: one group per workload, the executors side by side.
//! The workloads are those of the `compare` binary (`benches/src/workloads.rs`).
//!
//! ```text
//! cargo bench -p benches                 # all groups
//! cargo bench -p benches -- ping_pong    # one group
//! ```
//!
//! Each measurement starts a fresh runtime (rayon's reference included),
//! lets it settle for `SETTLE`, times only the workload, and then checks its
//! result against the checksum computed without any executor
//! (`workloads::expected`, as `compare` does): a runtime that loses or
//! repeats work fails the bench instead of looking fast. `idle_cpu` reports
//! the CPU time an idle runtime burns over 500 ms (as criterion's "time");
//! `sparse_wake` times the whole exchange and checks that every message
//! arrived. `task_memory` is a byte count, not a time: it is only in
//! `compare`.

use benches::exec::{AsyncExecutor, Exec, Local, Pool, Tokio};
use benches::workloads as w;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::{Duration, Instant};

const WORKERS: usize = 2;

/// How long a fresh runtime settles (its threads started and asleep) before
/// the workload is timed.
const SETTLE: Duration = Duration::from_millis(5);

/// `iters` runs of workload `name`, each on a runtime of its own that
/// `start` makes: the time of the workloads alone, each result checked.
fn timed_with<R>(
    iters: u64,
    name: &str,
    on: &str,
    start: impl Fn() -> R,
    f: impl Fn(&R) -> u64,
) -> Duration {
    // Inputs (quicksort's data) are generated before any timing.
    let expected = w::expected(name);
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let runtime = start();
        std::thread::sleep(SETTLE);
        let t = Instant::now();
        let sum = std::hint::black_box(f(&runtime));
        total += t.elapsed();
        drop(runtime);
        if let Some(expected) = expected {
            assert_eq!(sum, expected, "{name} on {on}: wrong checksum");
        }
    }
    total
}

fn timed<E: Exec>(iters: u64, name: &str, f: fn(&E) -> u64) -> Duration {
    timed_with(iters, name, E::NAME, || E::start(WORKERS), f)
}

macro_rules! group {
    ($c:expr, $name:literal, $f:ident, [$($e:ty),*]) => {{
        let mut g = $c.benchmark_group($name);
        g.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
        $(
            g.bench_function(BenchmarkId::from_parameter(<$e>::NAME), |b| {
                b.iter_custom(|iters| timed::<$e>(iters, $name, w::$f::<$e>))
            });
        )*
        g.finish();
    }};
}

fn time_based(c: &mut Criterion) {
    group!(
        c,
        "spawn_many_local",
        spawn_many_local,
        [Pool, Tokio, AsyncExecutor, Local]
    );
    group!(
        c,
        "spawn_many_remote",
        spawn_many_remote,
        [Pool, Tokio, AsyncExecutor]
    );
    group!(
        c,
        "yield_many",
        yield_many,
        [Pool, Tokio, AsyncExecutor, Local]
    );
    group!(
        c,
        "ping_pong",
        ping_pong,
        [Pool, Tokio, AsyncExecutor, Local]
    );
    group!(
        c,
        "chained_spawn",
        chained_spawn,
        [Pool, Tokio, AsyncExecutor, Local]
    );
    group!(
        c,
        "fork_join",
        fork_join,
        [Pool, Tokio, AsyncExecutor, Local]
    );
    group!(
        c,
        "task_tree",
        task_tree,
        [Pool, Tokio, AsyncExecutor, Local]
    );
    group!(c, "bursty", bursty, [Pool, Tokio, AsyncExecutor]);
}

fn rayon_references(c: &mut Criterion) {
    for (name, f) in [
        (
            "fork_join",
            w::rayon_fork_join as fn(&rayon::ThreadPool) -> u64,
        ),
        ("task_tree", w::rayon_task_tree),
    ] {
        let mut g = c.benchmark_group(name);
        g.sample_size(10).measurement_time(Duration::from_secs(3));
        // A fresh pool per run, as every other runtime here gets.
        let start = || {
            rayon::ThreadPoolBuilder::new()
                .num_threads(WORKERS)
                .build()
                .expect("start rayon")
        };
        g.bench_function(BenchmarkId::from_parameter("rayon"), |b| {
            b.iter_custom(|iters| timed_with(iters, name, "rayon", start, f))
        });
        g.finish();
    }
}

fn idle<E: Exec>(iters: u64) -> Duration {
    let mut cpu = Duration::ZERO;
    for _ in 0..iters {
        let e = E::start(WORKERS);
        std::thread::sleep(Duration::from_millis(50));
        let c0 = benches::process_cpu_time();
        std::thread::sleep(Duration::from_millis(500));
        cpu += benches::process_cpu_time() - c0;
        drop(e);
    }
    cpu
}

fn sparse<E: Exec>(iters: u64, receivers: usize) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let e = E::start(WORKERS);
        std::thread::sleep(SETTLE);
        let t = Instant::now();
        let latencies = std::hint::black_box(w::sparse_wake(&e, receivers));
        total += t.elapsed();
        drop(e);
        assert_eq!(
            latencies.len() as u64,
            w::SPARSE_MESSAGES,
            "sparse_wake on {}: lost messages",
            E::NAME
        );
    }
    total
}

fn idle_and_sparse(c: &mut Criterion) {
    let mut g = c.benchmark_group("idle_cpu");
    g.sample_size(10).measurement_time(Duration::from_secs(6));
    g.bench_function(BenchmarkId::from_parameter(Pool::NAME), |b| {
        b.iter_custom(idle::<Pool>)
    });
    g.bench_function(BenchmarkId::from_parameter(Tokio::NAME), |b| {
        b.iter_custom(idle::<Tokio>)
    });
    g.bench_function(BenchmarkId::from_parameter(AsyncExecutor::NAME), |b| {
        b.iter_custom(idle::<AsyncExecutor>)
    });
    g.finish();
    for (name, n) in [("sparse_wake", 1usize), ("sparse_wake_50", 50)] {
        let mut g = c.benchmark_group(name);
        g.sample_size(10).measurement_time(Duration::from_secs(3));
        g.bench_function(BenchmarkId::from_parameter(Pool::NAME), |b| {
            b.iter_custom(|i| sparse::<Pool>(i, n))
        });
        g.bench_function(BenchmarkId::from_parameter(Tokio::NAME), |b| {
            b.iter_custom(|i| sparse::<Tokio>(i, n))
        });
        g.bench_function(BenchmarkId::from_parameter(AsyncExecutor::NAME), |b| {
            b.iter_custom(|i| sparse::<AsyncExecutor>(i, n))
        });
        g.finish();
    }
}

criterion_group!(benches, time_based, rayon_references, idle_and_sparse);
criterion_main!(benches);
