//! What a paused clock saves, and what a jump costs.
//!
//! ```text
//! cargo run --release -p benches --bin paused [-- --reps N]
//! ```
//!
//! 1. **A timer test suite, real against paused.** Five tests of the kind
//!    a service's suite has (a retry with backoff, a timeout that fires, an
//!    interval, a fan-out of 1 000 sleeps, a rate-limited burst), each on a
//!    fresh pool of 2 workers: once with real sleeps, once on a paused pool
//!    (`Builder::start_paused(true)`) with the very same code. Printed: each
//!    test's median wall time both ways, and the suite's. Every paused run
//!    checks that the pool's clock advanced by exactly the test's nominal
//!    time (no sleep early, none skipped).
//! 2. **A jump.** One task sleeping 1 s 10 000 times in a row (each sleep
//!    one jump of the clock), and 1 000 tasks sleeping 1..=1 000 s at once
//!    (1 000 jumps, the tasks on every worker): pool paused with 1 and 2
//!    workers, tokio's paused current-thread runtime (tokio's clock can
//!    only be paused there). Printed: medians, and the time per jump.

use benches::median;
use std::future::Future;
use std::time::{Duration, Instant};

fn usage(problem: &str) -> ! {
    eprintln!("paused: {problem}\nusage: paused [--reps N]");
    std::process::exit(2)
}

const MS: Duration = Duration::from_millis(1);

/// Retry with exponential backoff: 10 + 20 + 40 + 80 ms.
async fn backoff() -> Duration {
    let mut wait = 10 * MS;
    for _ in 0..4 {
        pool::time::sleep(wait).await;
        wait *= 2;
    }
    150 * MS
}

/// A timeout that fires.
async fn timeout() -> Duration {
    let r = pool::time::timeout(100 * MS, std::future::pending::<()>()).await;
    assert!(r.is_err());
    100 * MS
}

/// Eleven ticks, 10 ms apart.
async fn interval() -> Duration {
    let mut ticks = pool::time::interval(10 * MS);
    for _ in 0..11 {
        ticks.tick().await;
    }
    100 * MS
}

/// 1 000 tasks sleeping 1..=100 ms.
async fn fan_out() -> Duration {
    let tasks: Vec<_> = (0..1000u32)
        .map(|i| pool::spawn(pool::time::sleep((1 + i % 100) * MS)))
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    100 * MS
}

/// 20 requests let through 10 ms apart, each taking 5 ms.
async fn rate_limited() -> Duration {
    let mut gate = pool::time::interval(10 * MS);
    let mut served = Vec::new();
    for _ in 0..20 {
        gate.tick().await;
        served.push(pool::spawn(pool::time::sleep(5 * MS)));
    }
    for s in served {
        s.await.unwrap();
    }
    195 * MS
}

/// One test on a fresh pool: its wall time, after checking the pool's
/// clock moved by at least (real) or exactly (paused) the nominal time.
fn run<F: Future<Output = Duration>>(paused: bool, test: fn() -> F) -> f64 {
    let p = pool::Builder::new()
        .worker_threads(2)
        .start_paused(paused)
        .build()
        .unwrap();
    let wall = Instant::now();
    let (nominal, took) = p.block_on(async {
        let start = pool::time::Instant::now();
        let nominal = test().await;
        (nominal, start.elapsed())
    });
    let wall = wall.elapsed();
    if paused {
        assert_eq!(took, nominal, "the paused clock moved by the test's time");
    } else {
        assert!(took >= nominal);
    }
    wall.as_secs_f64()
}

fn suite(reps: usize) {
    println!("1. a timer test suite on 2 workers, real sleeps against a paused clock (medians of {reps}):\n");
    println!("| test | real sleeps | paused | real / paused |\n|---|--:|--:|--:|");
    let (mut real_total, mut paused_total) = (0.0, 0.0);
    macro_rules! test {
        ($name:ident) => {{
            let (mut real, mut paused) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                real.push(run(false, $name));
                paused.push(run(true, $name));
            }
            let (r, p) = (median(&mut real), median(&mut paused));
            real_total += r;
            paused_total += p;
            println!(
                "| {} | {:.1} ms | {:.3} ms | {:.0}x |",
                stringify!($name),
                r * 1e3,
                p * 1e3,
                r / p
            );
        }};
    }
    test!(backoff);
    test!(timeout);
    test!(interval);
    test!(fan_out);
    test!(rate_limited);
    println!(
        "| the suite | {:.1} ms | {:.3} ms | {:.0}x |\n",
        real_total * 1e3,
        paused_total * 1e3,
        real_total / paused_total
    );
}

/// 10 000 sleeps of 1 s in a row, then 1 000 at once of 1..=1 000 s, on a
/// paused pool of `workers`: the wall times.
fn pool_jumps(workers: usize) -> (f64, f64) {
    let p = pool::Builder::new()
        .worker_threads(workers)
        .start_paused(true)
        .build()
        .unwrap();
    p.block_on(async {
        let t = Instant::now();
        pool::spawn(async {
            for _ in 0..10_000 {
                pool::time::sleep(Duration::from_secs(1)).await;
            }
        })
        .await
        .unwrap();
        let chained = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let tasks: Vec<_> = (1..=1000u64)
            .map(|s| pool::spawn(pool::time::sleep(Duration::from_secs(s))))
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        (chained, t.elapsed().as_secs_f64())
    })
}

fn tokio_jumps() -> (f64, f64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let t = Instant::now();
        tokio::spawn(async {
            for _ in 0..10_000 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
        .await
        .unwrap();
        let chained = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let tasks: Vec<_> = (1..=1000u64)
            .map(|s| tokio::spawn(tokio::time::sleep(Duration::from_secs(s))))
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        (chained, t.elapsed().as_secs_f64())
    })
}

fn jumps(reps: usize) {
    println!("2. jumps of a paused clock (medians of {reps}, interleaved):\n");
    println!(
        "| runtime | 10 000 sleeps in a row | per jump | 1 000 sleeps at once | per jump |\n|---|--:|--:|--:|--:|"
    );
    let mut runs: [(Vec<f64>, Vec<f64>); 3] = Default::default();
    for _ in 0..reps {
        for (i, r) in runs.iter_mut().enumerate() {
            let (a, b) = match i {
                0 => pool_jumps(1),
                1 => pool_jumps(2),
                _ => tokio_jumps(),
            };
            r.0.push(a);
            r.1.push(b);
        }
    }
    let names = [
        "pool, 1 worker",
        "pool, 2 workers",
        "tokio current-thread (start_paused)",
    ];
    for (name, (a, b)) in names.iter().zip(runs.iter_mut()) {
        let (a, b) = (median(a), median(b));
        println!(
            "| {name} | {:.2} ms | {:.2} us | {:.2} ms | {:.2} us |",
            a * 1e3,
            a * 1e6 / 10_000.0,
            b * 1e3,
            b * 1e6 / 1_000.0
        );
    }
}

fn main() {
    let mut reps = 5;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--reps" => {
                reps = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| usage("--reps takes a positive number"));
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    suite(reps);
    jumps(reps);
}
