#[pool::main]
async fn helper(n: u32) -> u32 {
    n
}

fn main() {}
