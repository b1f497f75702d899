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

fn main() -> std::io::Result<()> {
    // `--quick`: one short repetition, for the example's test.
    let quick = std::env::args().any(|a| a == "--quick");
    let (reps, idle) = if quick {
        (1, Duration::from_millis(100))
    } else {
        (5, Duration::from_secs(1))
    };
    let mut idle_cpu = Vec::new();
    for _ in 0..reps {
        let pool = pool::Builder::new().worker_threads(2).build()?;
        wait_until_asleep(&pool);
        let before = cpu_time();
        std::thread::sleep(idle);
        idle_cpu.push(cpu_time() - before);
    }
    idle_cpu.sort();
    println!(
        "idle 2-worker pool, {idle:?}: process CPU median {:?} (min {:?}, max {:?}, {reps} runs)",
        idle_cpu[reps / 2],
        idle_cpu[0],
        idle_cpu[reps - 1]
    );

    let pool = pool::Builder::new().worker_threads(4).build()?;
    let mut woken = Vec::new();
    let spawns = if quick { 5 } else { 100 };
    for _ in 0..spawns {
        wait_until_asleep(&pool);
        let before = pool.metrics().wakeups;
        pool.block_on(pool.spawn(async {}))
            .expect("the task completes");
        wait_until_asleep(&pool);
        woken.push(pool.metrics().wakeups - before);
    }
    woken.sort();
    println!(
        "one spawn onto a sleeping 4-worker pool: wakeups median {} (min {}, max {}, {spawns} runs)",
        woken[spawns / 2],
        woken[0],
        woken[spawns - 1]
    );
    Ok(())
}
