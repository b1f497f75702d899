#[pool::main(worker_threads = "4")]
async fn main() {}

#[pool::test(worker_threads = 2.5)]
async fn float() {}

#[pool::test(worker_threads = -1)]
async fn negative() {}
