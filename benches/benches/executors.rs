//! Criterion benches: one group per workload, the executors side by side.
//! The workloads are those of the `compare` binary (`benches/src/workloads.rs`).
//!
//! ```text
//! cargo bench -p benches                 # all groups
//! cargo bench -p benches -- ping_pong    # one group
//! ```
//!
//! Each measurement starts a fresh runtime, lets it settle, and times only
//! the workload. `idle_cpu` reports the CPU time an idle runtime burns over
//! 500 ms (as criterion's "time"); `sparse_wake` times the whole exchange.
//! `task_memory` is a byte count, not a time: it is only in `compare`.

use benches::exec::{AsyncExecutor, Exec, Local, Pool, Tokio};
use benches::workloads as w;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::{Duration, Instant};

const WORKERS: usize = 2;

fn timed<E: Exec>(iters: u64, f: fn(&E) -> u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let e = E::start(WORKERS);
        std::thread::sleep(Duration::from_millis(5));
        let t = Instant::now();
        std::hint::black_box(f(&e));
        total += t.elapsed();
    }
    total
}

macro_rules! group {
    ($c:expr, $name:literal, $f:ident, [$($e:ty),*]) => {{
        let mut g = $c.benchmark_group($name);
        g.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
        $(
            g.bench_function(BenchmarkId::from_parameter(<$e>::NAME), |b| {
                b.iter_custom(|iters| timed::<$e>(iters, w::$f::<$e>))
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
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(WORKERS)
            .build()
            .unwrap();
        g.bench_function(BenchmarkId::from_parameter("rayon"), |b| {
            b.iter(|| std::hint::black_box(f(&pool)))
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
        std::thread::sleep(Duration::from_millis(5));
        let t = Instant::now();
        std::hint::black_box(w::sparse_wake(&e, receivers));
        total += t.elapsed();
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
