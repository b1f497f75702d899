//! Runs every workload on pool, tokio and async-executor (plus the
//! references) in one process, interleaved, with a fresh runtime per
//! repetition, and prints a markdown table per workload with each figure's
//! ratio to tokio.
//!
//! ```text
//! cargo run --release -p benches --bin compare -- [--workers N] [--only a,b] [--reps N]
//!     [--quick] [--json PATH] [--svg PATH] [--scale] [--pool-variants]
//! ```
//!
//! `--pool-variants` adds five rows to most workloads: `pool+trace` (the
//! timeline recorded, `Builder::trace`), `pool+stall` (a stall handler
//! set, `Builder::on_stall`), `pool+hist` (every poll timed,
//! `Builder::poll_time_histogram`), `pool+console` (tokio-console
//! served, `Builder::console`) and `pool+named` (every task spawned with a
//! name, `task::Builder::name`), for the cost of seeing inside.

use benches::exec::{
    AsyncExecutor, Exec, Local, Pool, PoolConsole, PoolHist, PoolNamed, PoolStall, PoolTraced,
    Tokio,
};
use benches::workloads as w;
use benches::{median, percentile, process_cpu_time};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: benches::alloc::Counting = benches::alloc::Counting;

/// Time a fresh runtime gets to settle (its workers to go idle) before a
/// measurement starts.
const SETTLE: Duration = Duration::from_millis(10);

struct Args {
    workers: usize,
    only: Option<Vec<String>>,
    reps: Option<usize>,
    quick: bool,
    json: Option<String>,
    svg: Option<String>,
    scale: bool,
    pool_variants: bool,
}

/// The usage and the workloads, for `--help` and for a bad argument.
fn usage_text() -> String {
    format!(
        "usage: compare [--workers N] [--only w1,w2] [--reps N] [--quick] \
         [--json PATH] [--svg PATH] [--scale] [--pool-variants]\nworkloads: {}",
        WORKLOADS.join(", ")
    )
}

fn usage(problem: &str) -> ! {
    eprintln!("compare: {problem}\n{}", usage_text());
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        workers: 2,
        only: None,
        reps: None,
        quick: false,
        json: None,
        svg: None,
        scale: false,
        pool_variants: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        match a.as_str() {
            "--workers" => {
                args.workers = value("--workers")
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| usage("--workers takes a positive integer"))
            }
            "--reps" => {
                args.reps = Some(
                    value("--reps")
                        .parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .unwrap_or_else(|| usage("--reps takes a positive integer")),
                )
            }
            "--only" => {
                let list: Vec<String> = value("--only").split(',').map(str::to_owned).collect();
                for name in &list {
                    if !WORKLOADS.contains(&name.as_str()) {
                        usage(&format!("unknown workload {name:?}"));
                    }
                }
                args.only = Some(list);
            }
            "--quick" => args.quick = true,
            "--json" => args.json = Some(value("--json")),
            "--svg" => args.svg = Some(value("--svg")),
            "--scale" => args.scale = true,
            "--pool-variants" => args.pool_variants = true,
            "--task-memory-child" => {
                let exec = value("--task-memory-child");
                task_memory_child(&exec);
                std::process::exit(0);
            }
            "--help" | "-h" => {
                println!("{}", usage_text());
                std::process::exit(0);
            }
            "--bench" => {} // passed by `cargo bench`
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    args
}

const WORKLOADS: [&str; 19] = [
    "spawn_many_local",
    "spawn_many_remote",
    "yield_many",
    "ping_pong",
    "chained_spawn",
    "fork_join",
    "task_tree",
    "quicksort",
    "bursty",
    "idle_cpu",
    "sparse_wake",
    "sparse_wake_50",
    "mixed",
    "long_poll_spawn",
    "long_poll_wake",
    "long_poll_yield",
    "task_memory",
    "process_spawn_wait",
    "idle_cpu_services",
];

/// One measurement: wall and CPU time in milliseconds, and for sparse_wake
/// the wake latencies' p50 and p99 in microseconds.
#[derive(Clone, Copy, Default)]
struct Sample {
    wall_ms: f64,
    cpu_ms: f64,
    p50_us: f64,
    p99_us: f64,
    bytes_per_task: f64,
}

type Results = BTreeMap<&'static str, BTreeMap<&'static str, Vec<Sample>>>;

fn timed<E: Exec>(workers: usize, name: &str, f: fn(&E) -> u64) -> Sample {
    let e = E::start(workers);
    std::thread::sleep(SETTLE);
    let (c0, t0) = (process_cpu_time(), Instant::now());
    let sum = f(&e);
    let wall = t0.elapsed();
    let cpu = process_cpu_time() - c0;
    drop(e);
    if let Some(expected) = w::expected(name) {
        assert_eq!(sum, expected, "{name} on {}: wrong checksum", E::NAME);
    }
    Sample {
        wall_ms: wall.as_secs_f64() * 1e3,
        cpu_ms: cpu.as_secs_f64() * 1e3,
        ..Sample::default()
    }
}

fn idle<E: Exec>(workers: usize) -> Sample {
    let e = E::start(workers);
    // Let it finish starting and fall idle, then watch it do nothing.
    std::thread::sleep(Duration::from_millis(50));
    let c0 = process_cpu_time();
    std::thread::sleep(Duration::from_millis(500));
    let cpu = process_cpu_time() - c0;
    drop(e);
    Sample {
        wall_ms: 500.0,
        cpu_ms: cpu.as_secs_f64() * 1e3,
        ..Sample::default()
    }
}

/// Children spawned and waited for, one after another, in one sample.
const PROCESSES: usize = 100;

/// Wall and CPU time of `f` (after the runtime settled), and the p50 and
/// p99 of the latencies (us) it returns.
fn latency_sample(f: impl FnOnce() -> Vec<f64>) -> Sample {
    std::thread::sleep(SETTLE);
    let (c0, t0) = (process_cpu_time(), Instant::now());
    let mut lat = f();
    let wall = t0.elapsed();
    let cpu = process_cpu_time() - c0;
    Sample {
        wall_ms: wall.as_secs_f64() * 1e3,
        cpu_ms: cpu.as_secs_f64() * 1e3,
        p50_us: percentile(&mut lat, 50.0),
        p99_us: percentile(&mut lat, 99.0),
        ..Sample::default()
    }
}

/// `true` spawned and waited for `PROCESSES` times by one task: the
/// latency of each spawn + exit + reap through the runtime's driver.
macro_rules! spawn_wait_loop {
    ($status:expr) => {
        async {
            let mut lat = Vec::with_capacity(PROCESSES);
            for _ in 0..PROCESSES {
                let t = Instant::now();
                let status = $status.await.expect("spawn true");
                assert!(status.success());
                lat.push(t.elapsed().as_secs_f64() * 1e6);
            }
            lat
        }
    };
}

fn process_pool(workers: usize) -> Sample {
    let p = pool::Builder::new()
        .worker_threads(workers)
        .build()
        .unwrap();
    latency_sample(|| {
        let task = p.spawn(spawn_wait_loop!(
            pool::process::Command::new("true").status()
        ));
        p.block_on(task).unwrap()
    })
}

fn process_tokio(workers: usize) -> Sample {
    // tokio's processes need its I/O and signal drivers: enable_all.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    latency_sample(|| {
        let task = rt.spawn(spawn_wait_loop!(
            tokio::process::Command::new("true").status()
        ));
        rt.block_on(task).unwrap()
    })
}

fn process_async_executor(workers: usize) -> Sample {
    let e = AsyncExecutor::start(workers);
    latency_sample(|| {
        e.run(spawn_wait_loop!(
            async_process::Command::new("true").status()
        ))
    })
}

/// CPU over 500 ms of a runtime whose one task waits for a signal and for
/// a child (`sleep 5`) at once: what listening costs while nothing happens.
fn idle_services(f: impl FnOnce() -> Box<dyn std::any::Any>) -> Sample {
    let runtime = f();
    std::thread::sleep(Duration::from_millis(50));
    let c0 = process_cpu_time();
    std::thread::sleep(Duration::from_millis(500));
    let cpu = process_cpu_time() - c0;
    drop(runtime);
    Sample {
        wall_ms: 500.0,
        cpu_ms: cpu.as_secs_f64() * 1e3,
        ..Sample::default()
    }
}

fn idle_services_pool(workers: usize) -> Sample {
    use pool::signal::unix::{signal, SignalKind};
    idle_services(|| {
        let p = pool::Builder::new()
            .worker_threads(workers)
            .build()
            .unwrap();
        drop(p.spawn(async {
            let mut usr2 = signal(SignalKind::user_defined2()).unwrap();
            let mut child = pool::process::Command::new("sleep")
                .arg("5")
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            futures_lite::future::or(async { usr2.recv().await.map(drop) }, async {
                child.wait().await.ok().map(drop)
            })
            .await
        }));
        Box::new(p)
    })
}

fn idle_services_tokio(workers: usize) -> Sample {
    use tokio::signal::unix::{signal, SignalKind};
    idle_services(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .unwrap();
        drop(rt.spawn(async {
            let mut usr2 = signal(SignalKind::user_defined2()).unwrap();
            let mut child = tokio::process::Command::new("sleep")
                .arg("5")
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            futures_lite::future::or(async { usr2.recv().await.map(drop) }, async {
                child.wait().await.ok().map(drop)
            })
            .await
        }));
        Box::new(rt)
    })
}

fn sparse<E: Exec>(workers: usize, receivers: usize) -> Sample {
    let e = E::start(workers);
    std::thread::sleep(SETTLE);
    let (c0, t0) = (process_cpu_time(), Instant::now());
    let mut lat = w::sparse_wake(&e, receivers);
    let wall = t0.elapsed();
    let cpu = process_cpu_time() - c0;
    drop(e);
    assert_eq!(
        lat.len() as u64,
        w::SPARSE_MESSAGES,
        "sparse_wake lost messages"
    );
    Sample {
        wall_ms: wall.as_secs_f64() * 1e3,
        cpu_ms: cpu.as_secs_f64() * 1e3,
        p50_us: percentile(&mut lat, 50.0),
        p99_us: percentile(&mut lat, 99.0),
        ..Sample::default()
    }
}

/// mixed: fork-join CPU units run back to back from an outside thread (by
/// `unit`, on `workers` threads) while sparse_wake's messages arrive at a
/// task on `e`. `wall_ms` is the time per CPU unit, p50/p99 the wake
/// latencies.
fn mixed<E: Exec + Sync>(e: &E, unit: impl Fn() -> u64 + Sync) -> Sample {
    use std::sync::atomic::{AtomicBool, Ordering};
    std::thread::sleep(SETTLE);
    let stop = AtomicBool::new(false);
    let expected = w::fib_seq(w::MIXED_FIB_N);
    let (c0, t0) = (process_cpu_time(), Instant::now());
    let (mut lat, units) = std::thread::scope(|s| {
        let cpu = s.spawn(|| {
            let mut units = 0u64;
            while !stop.load(Ordering::Relaxed) {
                assert_eq!(unit(), expected, "mixed: wrong fib");
                units += 1;
            }
            units
        });
        let lat = w::sparse_wake(e, 1);
        stop.store(true, Ordering::Relaxed);
        (lat, cpu.join().expect("the CPU thread"))
    });
    let wall = t0.elapsed();
    let cpu = process_cpu_time() - c0;
    assert_eq!(lat.len() as u64, w::SPARSE_MESSAGES, "mixed lost messages");
    Sample {
        wall_ms: wall.as_secs_f64() * 1e3 / units.max(1) as f64,
        cpu_ms: cpu.as_secs_f64() * 1e3,
        p50_us: percentile(&mut lat, 50.0),
        p99_us: percentile(&mut lat, 99.0),
        ..Sample::default()
    }
}

/// mixed on one pool: its tasks and its `join`s share the workers.
fn mixed_pool(workers: usize) -> Sample {
    let e = Pool::start(workers);
    mixed(&e, || e.inner().join(w::mixed_unit_pool, || ()).0)
}

/// mixed on two pools: tokio for the tasks, rayon for the CPU work.
fn mixed_tokio_rayon(workers: usize) -> Sample {
    let e = Tokio::start(workers);
    let r = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .build()
        .expect("start rayon");
    mixed(&e, || r.install(w::mixed_unit_rayon))
}

/// `LONG_POLL_SAMPLES` long_poll delays on one fresh runtime, each after it
/// fell idle: their p50 and p99 (the largest, with so few).
fn long_poll<E: Exec>(workers: usize, case: w::LongPoll) -> Sample {
    let e = E::start(workers);
    let (c0, t0) = (process_cpu_time(), Instant::now());
    let mut delays: Vec<f64> = (0..w::LONG_POLL_SAMPLES)
        .map(|_| {
            std::thread::sleep(SETTLE);
            w::long_poll(&e, case)
        })
        .collect();
    let wall = t0.elapsed();
    let cpu = process_cpu_time() - c0;
    drop(e);
    Sample {
        wall_ms: wall.as_secs_f64() * 1e3,
        cpu_ms: cpu.as_secs_f64() * 1e3,
        p50_us: percentile(&mut delays, 50.0),
        p99_us: percentile(&mut delays, 99.0),
        ..Sample::default()
    }
}

fn rayon_timed(workers: usize, name: &str, f: fn(&rayon::ThreadPool) -> u64) -> Sample {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .build()
        .expect("start rayon");
    timed_on(name, "rayon", || f(&pool))
}

/// A fork-join workload on `pool::join` / `pool::scope`.
fn pool_timed(workers: usize, name: &str, f: fn(&pool::Pool) -> u64) -> Sample {
    let pool = pool::Builder::new()
        .worker_threads(workers)
        .build()
        .expect("start pool");
    timed_on(name, "pool::join", || f(&pool))
}

/// A workload on the calling thread alone.
fn plain_timed(name: &str, f: fn() -> u64) -> Sample {
    timed_on(name, "one thread", f)
}

/// Time `f` (wall and process CPU) after the runtime settled, and check
/// its checksum.
fn timed_on(name: &str, on: &str, f: impl FnOnce() -> u64) -> Sample {
    std::hint::black_box(w::expected(name)); // inputs generated before timing
    std::thread::sleep(SETTLE);
    let (c0, t0) = (process_cpu_time(), Instant::now());
    let sum = f();
    let wall = t0.elapsed();
    let cpu = process_cpu_time() - c0;
    assert_eq!(
        Some(sum),
        w::expected(name),
        "{name} on {on}: wrong checksum"
    );
    Sample {
        wall_ms: wall.as_secs_f64() * 1e3,
        cpu_ms: cpu.as_secs_f64() * 1e3,
        ..Sample::default()
    }
}

/// In a child process with the counting allocator on: heap bytes per pending
/// task, printed on stdout.
fn task_memory_child(exec: &str) {
    benches::alloc::start_counting();
    fn measure<E: Exec>() -> f64 {
        let e = E::start(2);
        std::thread::sleep(SETTLE);
        let mut handles = Vec::with_capacity(w::MEMORY_TASKS);
        let before = benches::alloc::live_bytes();
        for _ in 0..w::MEMORY_TASKS {
            handles.push(e.spawn_outside(std::future::pending::<()>()));
        }
        // Let every task be polled once (and park).
        std::thread::sleep(Duration::from_millis(100));
        let after = benches::alloc::live_bytes();
        let per_task = (after - before) as f64 / w::MEMORY_TASKS as f64;
        drop(handles);
        drop(e);
        per_task
    }
    let bytes = match exec {
        "pool" => measure::<Pool>(),
        "tokio" => measure::<Tokio>(),
        "async-executor" => measure::<AsyncExecutor>(),
        other => usage(&format!("unknown executor {other:?}")),
    };
    println!("{bytes}");
}

fn task_memory(exec: &str) -> Sample {
    let out = std::process::Command::new(std::env::current_exe().expect("own path"))
        .args(["--task-memory-child", exec])
        .output()
        .expect("run the task_memory child");
    assert!(out.status.success(), "task_memory child failed: {out:?}");
    let bytes: f64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("task_memory child prints a number");
    Sample {
        bytes_per_task: bytes,
        ..Sample::default()
    }
}

/// An executor's name and a closure that takes one sample on it.
type Contender = (&'static str, Box<dyn Fn() -> Sample>);

/// The executors of a workload.
fn contenders(name: &'static str, workers: usize) -> Vec<Contender> {
    macro_rules! timed3 {
        ($f:ident) => {{
            let v: Vec<Contender> = vec![
                (
                    Pool::NAME,
                    Box::new(move || timed::<Pool>(workers, name, w::$f::<Pool>)),
                ),
                (
                    Tokio::NAME,
                    Box::new(move || timed::<Tokio>(workers, name, w::$f::<Tokio>)),
                ),
                (
                    AsyncExecutor::NAME,
                    Box::new(move || timed::<AsyncExecutor>(workers, name, w::$f::<AsyncExecutor>)),
                ),
            ];
            v
        }};
    }
    let mut v = match name {
        "spawn_many_local" => timed3!(spawn_many_local),
        "spawn_many_remote" => timed3!(spawn_many_remote),
        "yield_many" => timed3!(yield_many),
        "ping_pong" => timed3!(ping_pong),
        "chained_spawn" => timed3!(chained_spawn),
        "fork_join" => timed3!(fork_join),
        "task_tree" => timed3!(task_tree),
        "quicksort" => timed3!(quicksort),
        "bursty" => timed3!(bursty),
        "idle_cpu" => vec![
            (
                Pool::NAME,
                Box::new(move || idle::<Pool>(workers)) as Box<dyn Fn() -> Sample>,
            ),
            (Tokio::NAME, Box::new(move || idle::<Tokio>(workers))),
            (
                AsyncExecutor::NAME,
                Box::new(move || idle::<AsyncExecutor>(workers)),
            ),
        ],
        "sparse_wake" | "sparse_wake_50" => {
            let n = if name == "sparse_wake" { 1 } else { 50 };
            vec![
                (
                    Pool::NAME,
                    Box::new(move || sparse::<Pool>(workers, n)) as Box<dyn Fn() -> Sample>,
                ),
                (Tokio::NAME, Box::new(move || sparse::<Tokio>(workers, n))),
                (
                    AsyncExecutor::NAME,
                    Box::new(move || sparse::<AsyncExecutor>(workers, n)),
                ),
            ]
        }
        "mixed" => vec![
            (
                Pool::NAME,
                Box::new(move || mixed_pool(workers)) as Box<dyn Fn() -> Sample>,
            ),
            // The baseline row: tokio for the tasks beside rayon for the CPU
            // work, `workers` threads each.
            (Tokio::NAME, Box::new(move || mixed_tokio_rayon(workers))),
        ],
        "long_poll_spawn" | "long_poll_wake" | "long_poll_yield" => {
            let case = match name {
                "long_poll_spawn" => w::LongPoll::Spawn,
                "long_poll_wake" => w::LongPoll::Wake,
                _ => w::LongPoll::Yield,
            };
            vec![
                (
                    Pool::NAME,
                    Box::new(move || long_poll::<Pool>(workers, case)) as Box<dyn Fn() -> Sample>,
                ),
                (
                    Tokio::NAME,
                    Box::new(move || long_poll::<Tokio>(workers, case)),
                ),
                (
                    AsyncExecutor::NAME,
                    Box::new(move || long_poll::<AsyncExecutor>(workers, case)),
                ),
            ]
        }
        "task_memory" => vec![
            (
                Pool::NAME,
                Box::new(|| task_memory("pool")) as Box<dyn Fn() -> Sample>,
            ),
            (Tokio::NAME, Box::new(|| task_memory("tokio"))),
            (
                AsyncExecutor::NAME,
                Box::new(|| task_memory("async-executor")),
            ),
        ],
        "process_spawn_wait" => vec![
            (
                Pool::NAME,
                Box::new(move || process_pool(workers)) as Box<dyn Fn() -> Sample>,
            ),
            (Tokio::NAME, Box::new(move || process_tokio(workers))),
            (
                "async-executor + async-process",
                Box::new(move || process_async_executor(workers)),
            ),
        ],
        "idle_cpu_services" => vec![
            (
                Pool::NAME,
                Box::new(move || idle_services_pool(workers)) as Box<dyn Fn() -> Sample>,
            ),
            (Tokio::NAME, Box::new(move || idle_services_tokio(workers))),
            // The floor: the same pool with nothing registered.
            (
                "pool (nothing registered)",
                Box::new(move || idle::<Pool>(workers)),
            ),
        ],
        _ => unreachable!("checked in parse_args"),
    };
    // The references: the single-threaded floor, and rayon.
    macro_rules! local {
        ($f:ident) => {
            v.push((
                Local::NAME,
                Box::new(move || timed::<Local>(1, name, w::$f::<Local>)),
            ))
        };
    }
    match name {
        "spawn_many_local" => local!(spawn_many_local),
        "yield_many" => local!(yield_many),
        "ping_pong" => local!(ping_pong),
        "chained_spawn" => local!(chained_spawn),
        "fork_join" => {
            local!(fork_join);
            v.push((
                "rayon",
                Box::new(move || rayon_timed(workers, name, w::rayon_fork_join)),
            ));
            v.push((
                "pool::join",
                Box::new(move || pool_timed(workers, name, w::pool_join_fork_join)),
            ));
        }
        "task_tree" => {
            local!(task_tree);
            v.push((
                "rayon",
                Box::new(move || rayon_timed(workers, name, w::rayon_task_tree)),
            ));
            v.push((
                "pool::scope",
                Box::new(move || pool_timed(workers, name, w::pool_scope_task_tree)),
            ));
        }
        "quicksort" => {
            v.push((
                "sort_unstable (1 thread)",
                Box::new(move || plain_timed(name, w::quicksort_sequential)),
            ));
            v.push((
                "rayon",
                Box::new(move || rayon_timed(workers, name, w::rayon_quicksort)),
            ));
            v.push((
                "pool::join",
                Box::new(move || pool_timed(workers, name, w::pool_join_quicksort)),
            ));
        }
        _ => {}
    }
    v
}

/// `--pool-variants`: pool traced (`Builder::trace`), with a stall
/// handler (`Builder::on_stall`), timing its polls
/// (`Builder::poll_time_histogram`), serving the console and naming every
/// task (`task::Builder::name`), beside the plain pool, for the cost goals
/// of seeing inside.
fn pool_variants(name: &'static str, workers: usize) -> Vec<Contender> {
    // `each!(|E| sample)`: the sample taken on each variant, as `E`.
    macro_rules! each {
        (|$e:ident| $sample:expr) => {
            vec![
                (
                    PoolTraced::NAME,
                    Box::new(move || {
                        type $e = PoolTraced;
                        $sample
                    }) as Box<dyn Fn() -> Sample>,
                ),
                (
                    PoolStall::NAME,
                    Box::new(move || {
                        type $e = PoolStall;
                        $sample
                    }),
                ),
                (
                    PoolHist::NAME,
                    Box::new(move || {
                        type $e = PoolHist;
                        $sample
                    }),
                ),
                (
                    PoolConsole::NAME,
                    Box::new(move || {
                        type $e = PoolConsole;
                        $sample
                    }),
                ),
                (
                    PoolNamed::NAME,
                    Box::new(move || {
                        type $e = PoolNamed;
                        $sample
                    }),
                ),
            ]
        };
    }
    macro_rules! timed_each {
        ($f:ident) => {
            each!(|E| timed::<E>(workers, name, w::$f::<E>))
        };
    }
    match name {
        "spawn_many_local" => timed_each!(spawn_many_local),
        "spawn_many_remote" => timed_each!(spawn_many_remote),
        "yield_many" => timed_each!(yield_many),
        "ping_pong" => timed_each!(ping_pong),
        "chained_spawn" => timed_each!(chained_spawn),
        "fork_join" => timed_each!(fork_join),
        "task_tree" => timed_each!(task_tree),
        "bursty" => timed_each!(bursty),
        "idle_cpu" => each!(|E| idle::<E>(workers)),
        "sparse_wake" => each!(|E| sparse::<E>(workers, 1)),
        "sparse_wake_50" => each!(|E| sparse::<E>(workers, 50)),
        "long_poll_spawn" => each!(|E| long_poll::<E>(workers, w::LongPoll::Spawn)),
        "long_poll_wake" => each!(|E| long_poll::<E>(workers, w::LongPoll::Wake)),
        "long_poll_yield" => each!(|E| long_poll::<E>(workers, w::LongPoll::Yield)),
        _ => Vec::new(),
    }
}

/// Repetitions of a workload in a full run (`--quick`: 2).
fn default_reps(name: &str) -> usize {
    match name {
        "task_tree" | "quicksort" => 7,
        "bursty" | "sparse_wake" | "sparse_wake_50" | "mixed" => 5,
        "long_poll_spawn" | "long_poll_wake" | "long_poll_yield" => 4,
        "idle_cpu" | "task_memory" | "idle_cpu_services" => 3,
        "process_spawn_wait" => 5,
        _ => 21,
    }
}

fn run(args: &Args) -> Results {
    let mut results = Results::new();
    for name in WORKLOADS {
        if args
            .only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|n| n == name))
        {
            continue;
        }
        let reps = args
            .reps
            .unwrap_or(if args.quick { 2 } else { default_reps(name) });
        let mut contenders = contenders(name, args.workers);
        if args.pool_variants {
            contenders.extend(pool_variants(name, args.workers));
        }
        let mut samples: BTreeMap<&'static str, Vec<Sample>> = BTreeMap::new();
        eprint!("{name}: ");
        for rep in 0..reps {
            // Interleave: A, B, C, then C, B, A, ...
            let order: Vec<usize> = if rep % 2 == 0 {
                (0..contenders.len()).collect()
            } else {
                (0..contenders.len()).rev().collect()
            };
            for i in order {
                let (exec, f) = &contenders[i];
                samples.entry(exec).or_default().push(f());
            }
            eprint!(".");
        }
        eprintln!();
        results.insert(name, samples);
    }
    results
}

fn med(samples: &[Sample], f: impl Fn(&Sample) -> f64) -> f64 {
    median(&mut samples.iter().map(f).collect::<Vec<_>>())
}

fn range(samples: &[Sample], f: impl Fn(&Sample) -> f64) -> (f64, f64) {
    let v: Vec<f64> = samples.iter().map(f).collect();
    (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

fn ratio(x: f64, base: f64) -> String {
    if base > 0.0 {
        format!("{:.2}x", x / base)
    } else {
        "-".to_string()
    }
}

fn fmt_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{:.0} us", ms * 1e3)
    }
}

fn tables(results: &Results) -> String {
    let mut out = String::new();
    for (name, by_exec) in results {
        let tokio = by_exec.get("tokio");
        let _ = writeln!(out, "\n### {name}\n");
        match *name {
            "long_poll_spawn" | "long_poll_wake" | "long_poll_yield" => {
                let _ = writeln!(
                    out,
                    "| executor | start delay p50 | start delay max | (behind a {} ms poll) |",
                    w::LONG_POLL.as_millis()
                );
                let _ = writeln!(out, "|---|---:|---:|---|");
                for (exec, s) in by_exec {
                    let p50 = med(s, |x| x.p50_us);
                    let max = range(s, |x| x.p99_us).1;
                    let _ = writeln!(out, "| {exec} | {p50:.0} us | {max:.0} us | |");
                }
            }
            "mixed" => {
                let base = tokio.map(|s| (med(s, |x| x.wall_ms), med(s, |x| x.p99_us)));
                let _ = writeln!(
                    out,
                    "| executor | time per CPU unit (fib({}) by join) | wake p50 | wake p99 | unit / tokio | p99 / tokio |",
                    w::MIXED_FIB_N
                );
                let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
                for (exec, s) in by_exec {
                    let exec = if *exec == "tokio" {
                        "tokio + rayon (two pools)"
                    } else {
                        exec
                    };
                    let (unit, p50, p99) = (
                        med(s, |x| x.wall_ms),
                        med(s, |x| x.p50_us),
                        med(s, |x| x.p99_us),
                    );
                    let (bu, bp) = base.unwrap_or((0.0, 0.0));
                    let _ = writeln!(
                        out,
                        "| {exec} | {} | {p50:.1} us | {p99:.1} us | {} | {} |",
                        fmt_ms(unit),
                        ratio(unit, bu),
                        ratio(p99, bp)
                    );
                }
            }
            "sparse_wake" | "sparse_wake_50" | "process_spawn_wait" => {
                let base = tokio.map(|s| (med(s, |x| x.p50_us), med(s, |x| x.cpu_ms)));
                let what = if *name == "process_spawn_wait" {
                    "spawn+wait"
                } else {
                    "wake"
                };
                let _ = writeln!(
                    out,
                    "| executor | {what} p50 | {what} p99 | CPU | p50 / tokio | CPU / tokio |"
                );
                let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
                for (exec, s) in by_exec {
                    let (p50, p99, cpu) = (
                        med(s, |x| x.p50_us),
                        med(s, |x| x.p99_us),
                        med(s, |x| x.cpu_ms),
                    );
                    let (bp, bc) = base.unwrap_or((0.0, 0.0));
                    let _ = writeln!(
                        out,
                        "| {exec} | {p50:.1} us | {p99:.1} us | {} | {} | {} |",
                        fmt_ms(cpu),
                        ratio(p50, bp),
                        ratio(cpu, bc)
                    );
                }
            }
            "task_memory" => {
                let base = tokio.map(|s| med(s, |x| x.bytes_per_task));
                let _ = writeln!(out, "| executor | heap bytes per pending task | / tokio |");
                let _ = writeln!(out, "|---|---:|---:|");
                for (exec, s) in by_exec {
                    let b = med(s, |x| x.bytes_per_task);
                    let _ = writeln!(
                        out,
                        "| {exec} | {b:.0} | {} |",
                        ratio(b, base.unwrap_or(0.0))
                    );
                }
            }
            "idle_cpu" | "idle_cpu_services" => {
                let base = tokio.map(|s| med(s, |x| x.cpu_ms));
                let _ = writeln!(
                    out,
                    "| executor | CPU over 500 ms idle (median) | max | / tokio |"
                );
                let _ = writeln!(out, "|---|---:|---:|---:|");
                for (exec, s) in by_exec {
                    let c = med(s, |x| x.cpu_ms);
                    let (_, hi) = range(s, |x| x.cpu_ms);
                    let _ = writeln!(
                        out,
                        "| {exec} | {} | {} | {} |",
                        fmt_ms(c),
                        fmt_ms(hi),
                        ratio(c, base.unwrap_or(0.0))
                    );
                }
            }
            _ => {
                let base = tokio.map(|s| (med(s, |x| x.wall_ms), med(s, |x| x.cpu_ms)));
                let _ = writeln!(out, "| executor | wall (median) | spread (min-max) | CPU (median) | wall / tokio | CPU / tokio |");
                let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
                for (exec, s) in by_exec {
                    let (wall, cpu) = (med(s, |x| x.wall_ms), med(s, |x| x.cpu_ms));
                    let (lo, hi) = range(s, |x| x.wall_ms);
                    let (bw, bc) = base.unwrap_or((0.0, 0.0));
                    let _ = writeln!(
                        out,
                        "| {exec} | {} | {} - {} | {} | {} | {} |",
                        fmt_ms(wall),
                        fmt_ms(lo),
                        fmt_ms(hi),
                        fmt_ms(cpu),
                        ratio(wall, bw),
                        ratio(cpu, bc)
                    );
                }
            }
        }
    }
    out
}

/// The headline figure of a workload for one executor (lower is better).
fn headline(name: &str, s: &[Sample]) -> f64 {
    match name {
        "sparse_wake" | "sparse_wake_50" | "process_spawn_wait" => med(s, |x| x.p50_us),
        "long_poll_spawn" | "long_poll_wake" | "long_poll_yield" => med(s, |x| x.p50_us),
        "task_memory" => med(s, |x| x.bytes_per_task),
        "idle_cpu" | "idle_cpu_services" => med(s, |x| x.cpu_ms),
        _ => med(s, |x| x.wall_ms),
    }
}

fn write_json(path: &str, args: &Args, results: &Results) {
    use serde_json::{json, Map, Value};
    let mut workloads = Map::new();
    for (name, by_exec) in results {
        let mut execs = Map::new();
        for (exec, s) in by_exec {
            execs.insert(
                exec.to_string(),
                json!({
                    "wall_ms": s.iter().map(|x| x.wall_ms).collect::<Vec<_>>(),
                    "cpu_ms": s.iter().map(|x| x.cpu_ms).collect::<Vec<_>>(),
                    "p50_us": s.iter().map(|x| x.p50_us).collect::<Vec<_>>(),
                    "p99_us": s.iter().map(|x| x.p99_us).collect::<Vec<_>>(),
                    "bytes_per_task": s.iter().map(|x| x.bytes_per_task).collect::<Vec<_>>(),
                    "median_wall_ms": med(s, |x| x.wall_ms),
                    "median_cpu_ms": med(s, |x| x.cpu_ms),
                    "headline": headline(name, s),
                }),
            );
        }
        workloads.insert(name.to_string(), Value::Object(execs));
    }
    let doc = json!({
        "workers": args.workers,
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "workloads": workloads,
    });
    std::fs::write(path, serde_json::to_string_pretty(&doc).expect("json"))
        .expect("write --json file");
    eprintln!("wrote {path}");
}

fn write_svg(path: &str, results: &Results) {
    use plotters::prelude::*;
    let execs = [Pool::NAME, AsyncExecutor::NAME];
    let names: Vec<&str> = results.keys().copied().collect();
    let ratios: Vec<Vec<f64>> = names
        .iter()
        .map(|n| {
            let by = &results[n];
            let base = by.get("tokio").map(|s| headline(n, s)).unwrap_or(f64::NAN);
            execs
                .iter()
                .map(|e| by.get(e).map_or(f64::NAN, |s| headline(n, s) / base))
                .collect()
        })
        .collect();
    let top = ratios
        .iter()
        .flatten()
        .copied()
        .filter(|r| r.is_finite())
        .fold(1.5f64, f64::max)
        .min(6.0);
    let root = SVGBackend::new(path, (1100, 520)).into_drawing_area();
    root.fill(&WHITE).expect("svg");
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "time (or bytes, or CPU) relative to tokio: lower is better",
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(120)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..names.len() as f64, 0f64..top)
        .expect("svg");
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("ratio to tokio")
        .draw()
        .expect("svg");
    // Workload names under their bars, written on the root area.
    let label_style = ("sans-serif", 13)
        .into_font()
        .transform(FontTransform::Rotate90)
        .color(&BLACK);
    for (i, name) in names.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.45, 0.0));
        root.draw(&Text::new(
            name.to_string(),
            (px - 6, py + 6),
            label_style.clone(),
        ))
        .expect("svg");
    }
    let colors = [RGBColor(31, 119, 180), RGBColor(255, 127, 14)];
    for (k, exec) in execs.iter().enumerate() {
        chart
            .draw_series(
                ratios
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r[k].is_finite())
                    .map(|(i, r)| {
                        let x0 = i as f64 + 0.1 + 0.4 * k as f64;
                        Rectangle::new([(x0, 0.0), (x0 + 0.38, r[k].min(top))], colors[k].filled())
                    }),
            )
            .expect("svg")
            .label(*exec)
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 10, y + 5)], colors[k].filled())
            });
    }
    chart
        .draw_series(LineSeries::new(
            vec![(0.0, 1.0), (names.len() as f64, 1.0)],
            BLACK.stroke_width(1),
        ))
        .expect("svg")
        .label("tokio = 1");
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .expect("svg");
    root.present().expect("svg");
    eprintln!("wrote {path}");
}

fn scale() {
    println!("### scale: time per task (ns), pool and tokio\n");
    println!("| workload | tasks | workers | pool ns/task | tokio ns/task | pool / tokio |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, f_pool, f_tokio) in [
        (
            "spawn_many_local",
            w::spawn_many_local_of::<Pool> as fn(&Pool, u64) -> u64,
            w::spawn_many_local_of::<Tokio> as fn(&Tokio, u64) -> u64,
        ),
        (
            "task_tree",
            w::task_tree_of::<Pool>,
            w::task_tree_of::<Tokio>,
        ),
    ] {
        for tasks in [1_000u64, 10_000, 100_000, 1_000_000] {
            for workers in [1usize, 2, 4, 8] {
                let reps = if tasks >= 1_000_000 { 1 } else { 3 };
                let mut p = Vec::new();
                let mut t = Vec::new();
                for _ in 0..reps {
                    let e = Pool::start(workers);
                    std::thread::sleep(SETTLE);
                    let t0 = Instant::now();
                    std::hint::black_box(f_pool(&e, tasks));
                    p.push(t0.elapsed().as_secs_f64() * 1e9 / tasks as f64);
                    drop(e);
                    let e = Tokio::start(workers);
                    std::thread::sleep(SETTLE);
                    let t0 = Instant::now();
                    std::hint::black_box(f_tokio(&e, tasks));
                    t.push(t0.elapsed().as_secs_f64() * 1e9 / tasks as f64);
                    drop(e);
                }
                let (mp, mt) = (median(&mut p), median(&mut t));
                println!(
                    "| {name} | {tasks} | {workers} | {mp:.0} | {mt:.0} | {:.2}x |",
                    mp / mt
                );
            }
        }
    }
}

fn main() {
    let args = parse_args();
    if args.scale {
        scale();
        return;
    }
    let start = Instant::now();
    eprintln!(
        "compare: {} workers, {} CPUs; calibrated {} spins per us",
        args.workers,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        w::spins_per_micro()
    );
    let results = run(&args);
    println!("{}", tables(&results));
    if let Some(path) = &args.json {
        write_json(path, &args, &results);
    }
    if let Some(path) = &args.svg {
        write_svg(path, &results);
    }
    eprintln!("compare: done in {:.1} s", start.elapsed().as_secs_f64());
}
