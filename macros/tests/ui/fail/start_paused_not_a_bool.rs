#[pool::test(start_paused = "yes")]
async fn quoted() {}

#[pool::test(start_paused = 1)]
async fn integer() {}

fn main() {}
