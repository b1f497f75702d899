//! A non-numeric `POOL_WORKER_THREADS` is a clear panic (own test binary).

#[test]
#[should_panic(
    expected = "POOL_WORKER_THREADS must be a positive integer (the global pool's worker count), got \"four\""
)]
fn non_numeric_global_workers_panics_naming_the_variable_and_value() {
    std::env::set_var("POOL_WORKER_THREADS", "four");
    drop(pool::spawn(async {}));
}
