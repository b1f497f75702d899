//! The pool at work: a fan-out of tasks that sleep, compute and talk to each
//! other, then what the pool's counters say about it.
//!
//! ```text
//! cargo run --release -p examples --example hello
//! ```

use std::time::Instant;

fn main() -> std::io::Result<()> {
    let pool = pool::Builder::new().worker_threads(4).build()?;
    let start = Instant::now();

    let (sum, threads) = pool.block_on(async {
        // 1 000 tasks, each summing a slice of 1..=1_000_000, spread over the
        // workers by spawning and stealing.
        let handles: Vec<_> = (0..1_000u64)
            .map(|chunk| {
                pool::spawn(async move {
                    let lo = chunk * 1_000 + 1;
                    let s: u64 = (lo..lo + 1_000).sum();
                    pool::yield_now().await; // let the others run once
                    (s, std::thread::current().name().unwrap_or("?").to_string())
                })
            })
            .collect();
        let mut sum = 0;
        let mut threads = std::collections::BTreeMap::<String, usize>::new();
        for h in handles {
            let (s, thread) = h.await.expect("a task panicked");
            sum += s;
            *threads.entry(thread).or_default() += 1;
        }
        (sum, threads)
    });

    println!("sum of 1..=1000000 = {sum} (expected 500000500000)");
    println!("computed by {} tasks in {:?}", 1_000, start.elapsed());
    for (thread, n) in &threads {
        println!("  {thread}: {n} tasks");
    }
    let m = pool.metrics();
    println!(
        "metrics: workers {} spawned {} polls {} steals {} injected {} sleeps {} wakeups {}",
        m.workers, m.spawned, m.polls, m.steals, m.injected, m.sleeps, m.wakeups
    );
    assert_eq!(sum, 500_000_500_000);
    Ok(())
}
