#![deny(warnings)]

// Any fn without parameters may be a blocking entry point.
#[pool::main(worker_threads = 1)]
async fn compute() -> u32 {
    pool::spawn(async { 7 }).await.unwrap()
}

fn main() {
    assert_eq!(compute(), 7);
}
