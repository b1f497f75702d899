#[pool::main(seed = 1, seeds = 10)]
async fn main() {}
