#[pool::main(worker_threads = 0)]
async fn main() {
    let n: u32 = "not a number";
    let _ = n;
}
