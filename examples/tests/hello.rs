//! The small examples run and say what they did.

use std::process::Command;

#[test]
fn hello_sums_on_the_pool_spreads_the_work_and_prints_its_metrics() {
    let out = Command::new(tests::example_binary("hello"))
        .output()
        .expect("run hello");
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("sum of 1..=100000000 = 5000000050000000 (expected 5000000050000000)"),
        "{stdout}"
    );
    // Four workers listed, and the CPU-bound tasks did not all run on one:
    // the spawns from outside woke more than one worker, which stole.
    let spread: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("the work spread over "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no spread line: {stdout}"));
    assert!((2..=4).contains(&spread), "{stdout}");
    assert_eq!(stdout.matches("  pool-worker-").count(), 4, "{stdout}");
    assert!(
        stdout.contains("metrics: workers 4 spawned 400"),
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
