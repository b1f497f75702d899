//! What a seeded pool costs: the same tests on a seeded pool
//! (`Builder::seed`, 4 logical workers on the calling thread) and on a real
//! pool of 1 worker (the clock paused on both, so timers take no wall
//! time on either), a fresh pool per run, the build included.
//!
//! ```text
//! cargo run --release -p benches --bin seeded [-- --reps N]
//! ```
//!
//! Printed: each test's median wall time both ways, in one interleaved
//! sitting, and the ratio seeded / real (the goal: at most 3x).

use benches::median;
use std::time::{Duration, Instant};

fn usage(problem: &str) -> ! {
    eprintln!("seeded: {problem}\nusage: seeded [--reps N]");
    std::process::exit(2)
}

/// 8 tasks in a ring, each sending to the next and receiving from the one
/// before, 200 rounds with a yield between.
async fn ring() -> u64 {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..8).map(|_| async_channel::unbounded::<u64>()).unzip();
    let tasks: Vec<_> = rxs
        .into_iter()
        .enumerate()
        .map(|(i, rx)| {
            let next = txs[(i + 1) % 8].clone();
            pool::spawn(async move {
                let mut sum = 0;
                for round in 0..200u64 {
                    next.send(round).await.unwrap();
                    pool::yield_now().await;
                    sum += rx.recv().await.unwrap();
                }
                sum
            })
        })
        .collect();
    drop(txs);
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total
}

/// 2 000 tasks spawned from a task, each yielding once.
async fn spawn_many() -> u64 {
    pool::spawn(async {
        let tasks: Vec<_> = (0..2000u64)
            .map(|i| {
                pool::spawn(async move {
                    pool::yield_now().await;
                    i
                })
            })
            .collect();
        let mut sum = 0;
        for t in tasks {
            sum += t.await.unwrap();
        }
        sum
    })
    .await
    .unwrap()
}

/// 1 000 tasks sleeping 1..=100 ms (on the paused clock).
async fn timers() -> u64 {
    let tasks: Vec<_> = (0..1000u64)
        .map(|i| {
            pool::spawn(async move {
                pool::time::sleep(Duration::from_millis(1 + i % 100)).await;
                i
            })
        })
        .collect();
    let mut sum = 0;
    for t in tasks {
        sum += t.await.unwrap();
    }
    sum
}

/// fib(18) with a `pool::join` per call, inside a task.
async fn joins() -> u64 {
    fn fib(n: u64) -> u64 {
        if n < 2 {
            return n;
        }
        let (a, b) = pool::join(|| fib(n - 1), || fib(n - 2));
        a + b
    }
    pool::spawn(async { fib(18) }).await.unwrap()
}

/// 200 `spawn_blocking` closures, awaited in turn.
async fn blocking() -> u64 {
    let tasks: Vec<_> = (0..200u64)
        .map(|i| pool::spawn_blocking(move || i))
        .collect();
    let mut sum = 0;
    for t in tasks {
        sum += t.await.unwrap();
    }
    sum
}

/// One run on a fresh pool, seeded or real: its wall time and result.
fn run<F: std::future::Future<Output = u64>>(seed: Option<u64>, test: fn() -> F) -> (f64, u64) {
    let wall = Instant::now();
    let builder = pool::Builder::new().start_paused(true);
    let p = match seed {
        Some(seed) => builder.seed(seed).worker_threads(4),
        None => builder.worker_threads(1),
    }
    .build()
    .unwrap();
    let out = p.block_on(test());
    drop(p);
    (wall.elapsed().as_secs_f64(), out)
}

fn main() {
    let mut reps = 21;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--reps" => reps = benches::args::positive(&mut args, "--reps", usage) as usize,
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    println!(
        "seeded pool (4 logical workers) against a real 1-worker pool, paused clocks, \
         medians of {reps}, {}\n",
        benches::cpu_model()
    );
    println!("| test | real, 1 worker | seeded, 4 logical | seeded / real |\n|---|--:|--:|--:|");
    macro_rules! test {
        ($name:ident) => {{
            let (mut real, mut seeded) = (Vec::new(), Vec::new());
            for rep in 0..reps {
                let (r, a) = run(None, $name);
                let (s, b) = run(Some(rep as u64), $name);
                assert_eq!(a, b, "{}: the same result", stringify!($name));
                real.push(r);
                seeded.push(s);
            }
            let (r, s) = (median(&mut real), median(&mut seeded));
            println!(
                "| {} | {:.3} ms | {:.3} ms | {:.2}x |",
                stringify!($name),
                r * 1e3,
                s * 1e3,
                s / r
            );
        }};
    }
    test!(ring);
    test!(spawn_many);
    test!(timers);
    test!(joins);
    test!(blocking);
}
