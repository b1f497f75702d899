//! Heap bytes per pending task on pool, in a build where nothing but pool
//! depends on async-task: the figure a service that uses pool alone gets.
//!
//! `compare --only task_memory` measures the same 100 000 pending tasks in a
//! binary that also links async-executor, whose dependency turns async-task's
//! `std` feature on for every crate of that build (16 B more a task: a
//! padded panic flag in the header and a boxed panic in the output slot).
//! Cargo unifies features over the packages of one build, so run this one on
//! its own:
//!
//! ```sh
//! cargo run --release -p task-memory-alone
//! ```

use std::time::Duration;

#[global_allocator]
static ALLOC: tests::alloc::Counting = tests::alloc::Counting;

/// Pending tasks held at once (as `compare`'s `MEMORY_TASKS`).
const TASKS: usize = 100_000;

fn main() {
    tests::alloc::start_counting();
    let pool = pool::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a two-worker pool");
    std::thread::sleep(Duration::from_millis(100));
    let mut handles = Vec::with_capacity(TASKS);
    let before = tests::alloc::live_bytes();
    for _ in 0..TASKS {
        handles.push(pool.spawn(std::future::pending::<()>()));
    }
    // Let every task be polled once (and park).
    std::thread::sleep(Duration::from_millis(100));
    let per_task = (tests::alloc::live_bytes() - before) as f64 / TASKS as f64;
    println!("pool alone: {per_task:.2} B per pending task ({TASKS} tasks, 2 workers)");
    drop(handles);
}
