#[pool::main(thread_name = app)]
async fn main() {}
