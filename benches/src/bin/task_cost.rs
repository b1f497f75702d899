//! One executor running one of `compare`'s task workloads again and again
//! on a single runtime, for a profile of a task's path in the steady state
//! (`scripts/task-cost` runs it under perf for each executor and splits
//! the CPU per task into the parts of that path).
//!
//! ```text
//! cargo run --release -p benches --bin task_cost -- EXEC WORKLOAD [--workers N] [--reps N] [--fresh]
//! ```
//!
//! EXEC is pool, tokio or async-executor; WORKLOAD is spawn_many_local,
//! spawn_many_remote, chained_spawn, yield_many, ping_pong, task_tree or
//! task_tree_bare (its tasks without their spin; `task_ir` counts its
//! instructions under callgrind). Unlike
//! `compare`, the runtime is started once, so its threads' start and stop
//! are not in the profile; `--fresh` starts one per repetition and lets it
//! settle before the clock starts, as `compare` does, for what a new
//! runtime costs the first tasks. Prints the median wall time and the
//! median process CPU time of a repetition (the runtime's start and the
//! settling not included).

use benches::exec::{AsyncExecutor, Exec, Pool, Tokio};
use benches::workloads as w;
use benches::{median, process_cpu_time};
use std::time::{Duration, Instant};

/// How long a new runtime (`--fresh`) settles before a repetition: `compare`'s
/// pause, so its threads have started and gone to sleep.
const SETTLE: Duration = Duration::from_millis(10);

const EXECS: [&str; 3] = ["pool", "tokio", "async-executor"];
const WORKLOADS: [&str; 7] = [
    "spawn_many_local",
    "spawn_many_remote",
    "chained_spawn",
    "yield_many",
    "ping_pong",
    "task_tree",
    "task_tree_bare",
];

fn usage(problem: &str) -> ! {
    eprintln!(
        "task_cost: {problem}\nusage: task_cost EXEC WORKLOAD [--workers N] [--reps N] [--fresh]\n\
         EXEC: {}\nWORKLOAD: {}",
        EXECS.join(", "),
        WORKLOADS.join(", ")
    );
    std::process::exit(2)
}

/// `reps` runs of `workload` on one runtime of `E` with `workers` workers
/// (on a new one each when `fresh`), each checked against its checksum;
/// the median wall and CPU time in ms.
fn run<E: Exec>(workload: &str, workers: usize, reps: u64, fresh: bool) -> (f64, f64) {
    let f: fn(&E) -> u64 = match workload {
        "spawn_many_local" => w::spawn_many_local::<E>,
        "spawn_many_remote" => w::spawn_many_remote::<E>,
        "chained_spawn" => w::chained_spawn::<E>,
        "yield_many" => w::yield_many::<E>,
        "ping_pong" => w::ping_pong::<E>,
        "task_tree" => w::task_tree::<E>,
        "task_tree_bare" => w::task_tree_bare::<E>,
        other => usage(&format!("unknown workload {other:?}")),
    };
    // Once, outside the timed and profiled repetitions (task_tree's is
    // the whole tree's work again, on one thread).
    let expected = w::expected(workload);
    let mut e = E::start(workers);
    let (mut walls, mut cpus): (Vec<f64>, Vec<f64>) = (0..reps)
        .map(|rep| {
            if fresh {
                if rep > 0 {
                    e = E::start(workers);
                }
                std::thread::sleep(SETTLE);
            }
            let (c0, t0) = (process_cpu_time(), Instant::now());
            let sum = f(&e);
            let wall = t0.elapsed().as_secs_f64() * 1e3;
            let cpu = (process_cpu_time() - c0).as_secs_f64() * 1e3;
            if let Some(expected) = expected {
                assert_eq!(sum, expected, "{workload} on {}: wrong checksum", E::NAME);
            }
            (wall, cpu)
        })
        .unzip();
    (median(&mut walls), median(&mut cpus))
}

fn main() {
    let mut it = std::env::args().skip(1);
    let exec = it.next().unwrap_or_else(|| usage("no executor named"));
    let workload = it.next().unwrap_or_else(|| usage("no workload named"));
    let (mut workers, mut reps, mut fresh) = (2u64, 100u64, false);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--workers" => workers = benches::args::positive(&mut it, "--workers", usage),
            "--reps" => reps = benches::args::positive(&mut it, "--reps", usage),
            "--fresh" => fresh = true,
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    let workers = workers as usize;
    let (wall, cpu) = match exec.as_str() {
        "pool" => run::<Pool>(&workload, workers, reps, fresh),
        "tokio" => run::<Tokio>(&workload, workers, reps, fresh),
        "async-executor" => run::<AsyncExecutor>(&workload, workers, reps, fresh),
        other => usage(&format!("unknown executor {other:?}")),
    };
    let runtime = if fresh {
        "a new runtime each"
    } else {
        "one runtime"
    };
    println!("{exec} {workload}: {reps} repetitions on {workers} workers ({runtime}), median {wall:.3} ms wall, {cpu:.3} ms CPU");
}
