#[pool::test(seed = "42")]
async fn quoted() {}

#[pool::test(seed = -1)]
async fn negative() {}

#[pool::test(seed = 18446744073709551616)]
async fn too_big() {}

fn main() {}
