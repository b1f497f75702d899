//! 100 000 concurrent timers: pool's timer store against tokio's wheel, side
//! by side, interleaved, a fresh runtime per repetition (2 workers).
//!
//! ```text
//! cargo run --release -p benches --bin timers [-- --reps N --timers N]
//! ```
//!
//! Each repetition spawns N tasks that each sleep 1..=100 ms (spread evenly)
//! and report how late their timer fired. Printed: the wall time from the
//! first spawn to the last wake, and the median and p99 lateness.

use benches::{median, percentile};
use std::time::{Duration, Instant};

fn spread(i: u64) -> Duration {
    Duration::from_millis(1 + i % 100)
}

fn run_pool(n: u64) -> (Duration, Vec<f64>) {
    let p = pool::Builder::new().worker_threads(2).build().unwrap();
    p.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..n)
            .map(|i| {
                pool::spawn(async move {
                    let d = spread(i);
                    let t = Instant::now();
                    pool::time::sleep(d).await;
                    (t.elapsed() - d).as_secs_f64() * 1e6
                })
            })
            .collect();
        let mut late = Vec::with_capacity(n as usize);
        for t in tasks {
            late.push(t.await.unwrap());
        }
        (start.elapsed(), late)
    })
}

fn run_tokio(n: u64) -> (Duration, Vec<f64>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..n)
            .map(|i| {
                tokio::spawn(async move {
                    let d = spread(i);
                    let t = Instant::now();
                    tokio::time::sleep(d).await;
                    (t.elapsed() - d).as_secs_f64() * 1e6
                })
            })
            .collect();
        let mut late = Vec::with_capacity(n as usize);
        for t in tasks {
            late.push(t.await.unwrap());
        }
        (start.elapsed(), late)
    })
}

fn main() {
    let mut reps = 5;
    let mut n = 100_000;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let v: u64 = it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
            eprintln!("usage: timers [--reps N] [--timers N]");
            std::process::exit(2)
        });
        match a.as_str() {
            "--reps" => reps = v,
            "--timers" => n = v,
            _ => {
                eprintln!("usage: timers [--reps N] [--timers N]");
                std::process::exit(2)
            }
        }
    }
    let mut results: [(Vec<f64>, Vec<f64>, Vec<f64>); 2] = Default::default();
    for rep in 0..reps {
        for k in 0..2 {
            let which = (k + rep as usize) % 2;
            let (wall, mut late) = if which == 0 {
                run_pool(n)
            } else {
                run_tokio(n)
            };
            let r = &mut results[which];
            r.0.push(wall.as_secs_f64() * 1e3);
            r.1.push(percentile(&mut late, 50.0));
            r.2.push(percentile(&mut late, 99.0));
        }
    }
    println!("{n} concurrent timers of 1..=100 ms, 2 workers, median of {reps}:\n");
    println!("| runtime | wall (ms) | lateness p50 (us) | lateness p99 (us) |");
    println!("|---|--:|--:|--:|");
    for (name, r) in ["pool", "tokio"].iter().zip(results.iter_mut()) {
        println!(
            "| {name} | {:.1} | {:.0} | {:.0} |",
            median(&mut r.0),
            median(&mut r.1),
            median(&mut r.2)
        );
    }
}
