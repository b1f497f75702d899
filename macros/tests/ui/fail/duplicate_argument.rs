#[pool::main(worker_threads = 2, worker_threads = 4)]
async fn main() {}
