#[pool::test(seeds = 100)]
async fn no_first_seed() {}

#[pool::test(seed = 1, seeds = 0)]
async fn no_seeds() {}

fn main() {}
