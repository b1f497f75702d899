//! Where spawn_many_local's spread comes from: `compare`'s workload (a task
//! spawns 10 000 tiny tasks in one poll, then awaits them) on a fresh
//! 2-worker pool per repetition, settled 10 ms first, each run printed
//! with what the pool's metrics say happened meanwhile.
//!
//! ```text
//! cargo run --release -p benches --bin spawn_spread [-- --reps N]
//! ```
//!
//! Per run, sorted by wall time: the wall time, the spawn loop's share,
//! the minor page faults, the steals, the wakeups and sleeps, and each
//! worker's polls (docs/BENCHMARKS.md, "spawn_many_local's spread").

use std::time::{Duration, Instant};

const TASKS: u64 = 10_000;

struct Run {
    wall_ms: f64,
    spawn_ms: f64,
    faults: i64,
    steals: u64,
    wakeups: u64,
    sleeps: u64,
    polls: Vec<u64>,
}

fn minor_faults() -> i64 {
    // SAFETY: `getrusage` writes the struct it is given, which is valid
    // (zeroed) for its whole size.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage.ru_minflt
    }
}

fn one_run() -> Run {
    let pool = pool::Builder::new().worker_threads(2).build().unwrap();
    std::thread::sleep(Duration::from_millis(10));
    let (m0, w0, f0) = (pool.metrics(), pool.worker_metrics(), minor_faults());
    let start = Instant::now();
    let (sum, spawn_ms) = pool.block_on(async {
        pool::spawn(async {
            let t = Instant::now();
            let handles: Vec<_> = (0..TASKS).map(|i| pool::spawn(async move { i })).collect();
            let spawn_ms = t.elapsed().as_secs_f64() * 1e3;
            let mut sum = 0;
            for h in handles {
                sum += h.await.unwrap();
            }
            (sum, spawn_ms)
        })
        .await
        .unwrap()
    });
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    assert_eq!(sum, TASKS * (TASKS - 1) / 2, "wrong checksum");
    let (m, w) = (pool.metrics(), pool.worker_metrics());
    Run {
        wall_ms,
        spawn_ms,
        faults: minor_faults() - f0,
        steals: m.steals - m0.steals,
        wakeups: m.wakeups - m0.wakeups,
        sleeps: m.sleeps - m0.sleeps,
        polls: w
            .iter()
            .zip(&w0)
            .map(|(w, w0)| w.polls - w0.polls)
            .collect(),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut reps = 40;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|v| v.parse().ok())) {
            ("--reps", Some(n)) if n > 0 => reps = n,
            _ => {
                eprintln!("usage: spawn_spread [--reps N] (N a positive integer)");
                std::process::exit(2);
            }
        }
    }
    let mut runs: Vec<Run> = (0..reps).map(|_| one_run()).collect();
    runs.sort_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms));
    println!(
        "| wall (ms) | spawn loop (ms) | faults | steals | wakeups | sleeps | polls per worker |"
    );
    println!("|--:|--:|--:|--:|--:|--:|---|");
    for r in &runs {
        let polls: Vec<String> = r.polls.iter().map(u64::to_string).collect();
        println!(
            "| {:.3} | {:.3} | {} | {} | {} | {} | {} |",
            r.wall_ms,
            r.spawn_ms,
            r.faults,
            r.steals,
            r.wakeups,
            r.sleeps,
            polls.join(" / ")
        );
    }
}
