#![deny(warnings)]

#[pool::main(worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = "42".parse()?;
    let doubled = pool::spawn(async move { n * 2 }).await?;
    assert_eq!(doubled, 84);
    Ok(())
}
