#![deny(warnings)]

/// Doc comments stay.
#[pool::test(worker_threads = 2)]
#[should_panic(expected = "boom")]
async fn panics() {
    panic!("boom");
}

#[pool::test]
async fn returns_result() -> Result<(), pool::JoinError> {
    pool::spawn(async {}).await
}

#[pool::test(start_paused = true, worker_threads = 4)]
async fn paused() {
    pool::time::sleep(std::time::Duration::from_secs(60)).await;
}

#[pool::test(start_paused = false)]
async fn running() {}

#[pool::test(seed = 42, worker_threads = 4)]
async fn seeded() {
    pool::time::sleep(std::time::Duration::from_secs(60)).await;
}

#[pool::test(seed = 0, seeds = 20)]
async fn seeded_sweep_returns_result() -> Result<(), pool::JoinError> {
    pool::spawn(async {}).await
}

fn main() {}
