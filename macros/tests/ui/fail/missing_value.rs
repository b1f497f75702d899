#[pool::main(worker_threads)]
async fn main() {}
