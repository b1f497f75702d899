#[pool::test(network)]
async fn no_seed() {}

#[pool::test(seed = 1, network = true)]
async fn with_a_value() {}

#[pool::test(seed = 1, network, network)]
async fn twice() {}

fn main() {}
