//! The scope example brightens every band exactly once (it checks itself
//! against a sequential pass and fails otherwise).

use std::process::Command;

#[test]
fn the_scope_example_brightens_every_band_once() {
    let bin = tests::example_binary("scope");
    for workers in ["1", "2", "3"] {
        let out = Command::new(&bin)
            .args(["--workers", workers])
            .output()
            .expect("run scope");
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.starts_with(&format!(
                "brightened 4096x4096 pixels in 64 bands on {workers} workers"
            )),
            "{stdout}"
        );
    }
    let bad = Command::new(&bin)
        .args(["--workers", "0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
