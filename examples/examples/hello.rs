//! The pool at work: a fan-out of CPU-bound tasks over four workers, how
//! many tasks each worker ran, and what the pool's counters say about it.
//!
//! ```text
//! cargo run --release -p examples --example hello
//! ```
//!
//! Each task sums a quarter of a million numbers (some tens of microseconds
//! of CPU): big enough that the workers the spawns wake steal their share.
//! With tasks of a few nanoseconds, the first worker to wake would run them
//! all before the others got up, which is the right call for tasks that
//! small, and the counts would say so.

use std::collections::BTreeMap;
use std::time::Instant;

const WORKERS: usize = 4;
const TASKS: u64 = 400;
const PER_TASK: u64 = 250_000;

fn main() -> std::io::Result<()> {
    let pool = pool::Builder::new().worker_threads(WORKERS).build()?;
    let start = Instant::now();

    let (sum, threads) = pool.block_on(async {
        let handles: Vec<_> = (0..TASKS)
            .map(|chunk| {
                pool::spawn(async move {
                    let lo = chunk * PER_TASK + 1;
                    // black_box: add each number, no closed form.
                    let s: u64 = (lo..lo + PER_TASK).map(std::hint::black_box).sum();
                    (s, std::thread::current().name().unwrap_or("?").to_string())
                })
            })
            .collect();
        let mut sum = 0;
        let mut threads = BTreeMap::<String, usize>::new();
        for h in handles {
            let (s, thread) = h.await.expect("a task panicked");
            sum += s;
            *threads.entry(thread).or_default() += 1;
        }
        (sum, threads)
    });

    let n = TASKS * PER_TASK;
    let expected = n * (n + 1) / 2;
    println!("sum of 1..={n} = {sum} (expected {expected})");
    println!(
        "{TASKS} tasks in {:?}; tasks run by each worker:",
        start.elapsed()
    );
    for w in 0..WORKERS {
        let name = format!("pool-worker-{w}");
        println!("  {name}: {}", threads.get(&name).copied().unwrap_or(0));
    }
    println!(
        "the work spread over {} of {WORKERS} workers",
        threads.len()
    );
    let m = pool.metrics();
    println!(
        "metrics: workers {} spawned {} polls {} steals {} injected {} sleeps {} wakeups {}",
        m.workers, m.spawned, m.polls, m.steals, m.injected, m.sleeps, m.wakeups
    );
    assert_eq!(sum, expected);
    Ok(())
}
