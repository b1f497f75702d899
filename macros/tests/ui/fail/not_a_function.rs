#[pool::main]
struct Config;

fn main() {}
