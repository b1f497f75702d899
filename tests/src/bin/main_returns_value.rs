//! A `#[pool::main]` that returns `Ok(())` after work on the pool (run by
//! `tests/macros.rs`): exits 0 and prints what it computed.

#[pool::main]
async fn main() -> std::io::Result<()> {
    let handles: Vec<_> = (1..=4u64)
        .map(|i| pool::spawn(async move { i * 10 }))
        .collect();
    let mut total = 0;
    for h in handles {
        total += h.await.expect("task ran");
    }
    println!("total {total}");
    Ok(())
}
