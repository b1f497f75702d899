#[pool::test(thread_name = "")]
async fn t() {}

fn main() {}
