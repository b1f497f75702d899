//! What the sleep protocol costs and saves, measured:
//!
//! 1. the CPU time a 2-worker pool burns while idle for one second;
//! 2. how many workers one spawn onto a sleeping 4-worker pool wakes.
//!
//! Each is repeated and reported as the median and the range.
//!
//! ```text
//! cargo run --release -p examples --example sleep_stats
//! ```

use std::time::Duration;
use tests::{process_cpu_time as cpu_time, wait_until_asleep};

const REPS: usize = 5;

fn main() -> std::io::Result<()> {
    let mut idle_cpu = Vec::new();
    for _ in 0..REPS {
        let pool = pool::Builder::new().worker_threads(2).build()?;
        wait_until_asleep(&pool);
        let before = cpu_time();
        std::thread::sleep(Duration::from_secs(1));
        idle_cpu.push(cpu_time() - before);
    }
    idle_cpu.sort();
    println!(
        "idle 2-worker pool, 1 s: process CPU median {:?} (min {:?}, max {:?}, {REPS} runs)",
        idle_cpu[REPS / 2],
        idle_cpu[0],
        idle_cpu[REPS - 1]
    );

    let pool = pool::Builder::new().worker_threads(4).build()?;
    let mut woken = Vec::new();
    for _ in 0..100 {
        wait_until_asleep(&pool);
        let before = pool.metrics().wakeups;
        pool.block_on(pool.spawn(async {}))
            .expect("the task completes");
        wait_until_asleep(&pool);
        woken.push(pool.metrics().wakeups - before);
    }
    woken.sort();
    println!(
        "one spawn onto a sleeping 4-worker pool: wakeups median {} (min {}, max {}, 100 runs)",
        woken[50], woken[0], woken[99]
    );
    Ok(())
}
