//! The small examples run and say what they did.

use std::process::Command;

#[test]
fn hello_sums_on_the_pool_and_prints_its_metrics() {
    let out = Command::new(tests::example_binary("hello"))
        .output()
        .expect("run hello");
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("sum of 1..=1000000 = 500000500000"),
        "{stdout}"
    );
    assert!(
        stdout.contains("metrics: workers 4 spawned 1000"),
        "{stdout}"
    );
}

#[test]
fn sleep_stats_reports_idle_cpu_and_one_wakeup_per_spawn() {
    let out = Command::new(tests::example_binary("sleep_stats"))
        .arg("--quick")
        .output()
        .expect("run sleep_stats");
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("idle 2-worker pool"), "{stdout}");
    assert!(
        stdout.contains("one spawn onto a sleeping 4-worker pool: wakeups median 1 (min 1, max 1"),
        "{stdout}"
    );
}
