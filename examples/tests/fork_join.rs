//! The fork_join example sorts correctly (it checks itself against
//! `sort_unstable` and fails otherwise) and reports its speed-up.

use std::process::Command;

#[test]
fn the_parallel_quicksort_matches_sort_unstable() {
    let bin = tests::example_binary("fork_join");
    for workers in ["1", "2", "4"] {
        let out = Command::new(&bin)
            .args(["--len", "300000", "--workers", workers])
            .output()
            .expect("run fork_join");
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.starts_with(&format!(
                "sorted 300000 u64 correctly on {workers} workers\n"
            )),
            "{stdout}"
        );
        assert!(stdout.contains("speed-up"), "{stdout}");
    }
    let bad = Command::new(&bin).args(["--len", "zero"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
