//! `#[pool::main]` and `#[pool::test]` at run time: fresh pools with the
//! requested worker count, kept attributes, and `main`'s return value
//! becoming the exit status.

use pool::Handle;
use std::process::Command;

/// A doc comment on the test, kept by the attribute.
#[pool::test(worker_threads = 3)]
async fn runs_on_a_fresh_pool_with_the_requested_workers() {
    let m = Handle::current().metrics();
    assert_eq!(m.workers, 3);
    assert_eq!(m.spawned, 0, "a fresh pool has spawned nothing yet");
    let name = pool::spawn(async { std::thread::current().name().map(str::to_owned) })
        .await
        .unwrap()
        .unwrap();
    assert!(name.starts_with("pool-worker-"), "ran on {name}");
    assert_eq!(Handle::current().metrics().spawned, 1);
}

/// `thread_name` names the pool's threads, as `Builder::thread_name`.
#[pool::test(worker_threads = 1, thread_name = "macro-named")]
async fn thread_name_names_the_pools_threads() {
    let name = pool::spawn(async { std::thread::current().name().map(str::to_owned) })
        .await
        .unwrap();
    assert_eq!(name.as_deref(), Some("macro-named-0"));
}

#[pool::test(worker_threads = 1)]
async fn another_test_gets_its_own_pool() {
    let m = Handle::current().metrics();
    assert_eq!(m.workers, 1);
    assert_eq!(m.spawned, 0, "no state shared with other tests");
    pool::spawn(async {}).await.unwrap();
}

#[pool::test]
async fn default_worker_count_is_one_per_cpu() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert_eq!(Handle::current().metrics().workers, cpus);
}

#[pool::test]
#[should_panic(expected = "the body panicked")]
async fn should_panic_is_kept() {
    pool::yield_now().await;
    panic!("the body panicked");
}

#[pool::test]
#[ignore = "kept ignored by the attribute; running it would fail"]
async fn ignore_is_kept() {
    panic!("an ignored test ran");
}

#[pool::test]
async fn a_test_may_return_a_result() -> Result<(), pool::JoinError> {
    let v = pool::spawn(async { 5 }).await?;
    assert_eq!(v, 5);
    Ok(())
}

#[test]
fn main_returning_err_exits_non_zero_and_prints_the_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_main_returns_err"))
        .output()
        .expect("run the main_returns_err binary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("Error: ConfigMissing(\"settings.toml\")"),
        "stderr: {stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn main_returning_ok_exits_zero_with_its_output() {
    let out = Command::new(env!("CARGO_BIN_EXE_main_returns_value"))
        .output()
        .expect("run the main_returns_value binary");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "total 100\n");
}
