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
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

fn spread(i: u64) -> Duration {
    Duration::from_millis(1 + i % 100)
}

type Timed = Pin<Box<dyn Future<Output = f64> + Send>>;

/// Spawn `n` tasks (with `spawn`, which gives a future of the task's output)
/// that each `sleep` for their `spread` and report their lateness in us;
/// wait for all. The wall time from the first spawn, and the latenesses.
async fn measure<H, S>(
    n: u64,
    spawn: impl Fn(Timed) -> H,
    sleep: fn(Duration) -> S,
) -> (Duration, Vec<f64>)
where
    H: Future<Output = f64>,
    S: Future<Output = ()> + Send + 'static,
{
    let start = Instant::now();
    let tasks: Vec<H> = (0..n)
        .map(|i| {
            spawn(Box::pin(async move {
                let d = spread(i);
                let t = Instant::now();
                sleep(d).await;
                (t.elapsed() - d).as_secs_f64() * 1e6
            }))
        })
        .collect();
    let mut late = Vec::with_capacity(n as usize);
    for t in tasks {
        late.push(t.await);
    }
    (start.elapsed(), late)
}

fn run_pool(n: u64) -> (Duration, Vec<f64>) {
    let p = pool::Builder::new().worker_threads(2).build().unwrap();
    p.block_on(measure(
        n,
        |f| {
            let h = pool::spawn(f);
            async move { h.await.unwrap() }
        },
        pool::time::sleep,
    ))
}

fn run_tokio(n: u64) -> (Duration, Vec<f64>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(measure(
        n,
        |f| {
            let h = tokio::spawn(f);
            async move { h.await.unwrap() }
        },
        tokio::time::sleep,
    ))
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
