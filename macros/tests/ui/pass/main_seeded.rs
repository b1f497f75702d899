#![deny(warnings, unused_qualifications, rust_2018_idioms)]

#[pool::main(seed = 7, worker_threads = 2)]
async fn main() {
    let handle = pool::Handle::current();
    if std::env::var_os("POOL_SEED").is_none() {
        assert_eq!(handle.seed(), Some(7));
    }
    assert_eq!(handle.metrics().workers, 2);
    let start = pool::time::Instant::now();
    pool::time::sleep(std::time::Duration::from_secs(60)).await;
    assert_eq!(start.elapsed().as_secs(), 60);
}
