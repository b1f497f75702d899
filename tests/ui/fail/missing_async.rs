#[pool::main]
fn main() {}
