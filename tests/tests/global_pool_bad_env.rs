//! A bad `POOL_WORKER_THREADS` is a clear panic (its own test binary: the
//! global pool is process-wide state).

#[test]
#[should_panic(
    expected = "POOL_WORKER_THREADS must be a positive integer (the global pool's worker count), got \"0\""
)]
fn zero_global_workers_panics_naming_the_variable_and_value() {
    std::env::set_var("POOL_WORKER_THREADS", "0");
    let _ = pool::Handle::current();
}
