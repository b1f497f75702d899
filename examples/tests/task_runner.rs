//! The task runner gives the same output for every worker count, both
//! designs and the example binary, equal to a sequential run of the tree.

use examples::task_runner::{
    generate_set, roots, run_on_pool, run_on_threads, run_sequential, TaskKind,
};
use std::process::Command;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tests::watchdog;

/// Small enough to run in a second, big enough to have three levels.
const SEED: u64 = 3;
const HEIGHT: usize = 2;
const MAX_CHILDREN: usize = 3;

#[test]
fn the_draws_follow_the_specification() {
    // A set draws n in 0..=max_num, then kind and seed task by task; the
    // same seed gives the same set, and the roots are a set of at most 64.
    let a = generate_set(42, 3, 5, 5);
    assert_eq!(a, generate_set(42, 3, 5, 5));
    assert!(a.len() <= 5);
    assert!(a.iter().all(|t| t.height == 3 && t.max_children == 5));
    assert_eq!(roots(SEED, HEIGHT, MAX_CHILDREN).len(), 3);
    let kinds: Vec<TaskKind> = roots(1, 5, 5).iter().map(|t| t.kind).collect();
    assert_eq!(kinds.len(), 40);
}

#[test]
fn every_worker_count_and_design_gives_the_sequential_output() {
    watchdog("task_runner outputs", 120, || {
        let expected = run_sequential(roots(SEED, HEIGHT, MAX_CHILDREN));
        assert!(
            expected.tasks() >= 5,
            "the test tree is too small: {expected:?}"
        );
        for workers in [1, 2, 4] {
            let pool = pool::Builder::new()
                .worker_threads(workers)
                .build()
                .unwrap();
            let done = Arc::new(AtomicU64::new(0));
            let got = pool.block_on(run_on_pool(roots(SEED, HEIGHT, MAX_CHILDREN), done.clone()));
            assert_eq!(got, expected, "pool with {workers} workers");
            assert_eq!(
                done.load(std::sync::atomic::Ordering::Relaxed),
                expected.tasks()
            );
        }
        let done = Arc::new(AtomicU64::new(0));
        let got = run_on_threads(roots(SEED, HEIGHT, MAX_CHILDREN), 3, done);
        assert_eq!(got, expected, "the seed's thread design");
    });
}

#[test]
fn the_example_prints_one_line_on_stdout_and_the_rest_on_stderr() {
    let bin = tests::example_binary("task_runner");
    let expected = run_sequential(roots(SEED, HEIGHT, MAX_CHILDREN)).line();
    for design in ["pool", "threads"] {
        let out = Command::new(&bin)
            .args(["3", "2", "3", "--workers", "2", "--design", design])
            .output()
            .expect("run task_runner");
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{expected}\n")
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("Using seed 3, starting height 2, max. children 3\n"),
            "{stderr}"
        );
        assert!(stderr.contains("Completed in "), "{stderr}");
        // Not a terminal: no progress line.
        assert_eq!(stderr.lines().count(), 2, "{stderr}");
    }
    let bad = Command::new(&bin)
        .args(["--workers", "0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--workers takes a positive integer"));
}
