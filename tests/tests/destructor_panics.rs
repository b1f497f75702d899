//! No panic in a user destructor aborts the process or stops a worker: each
//! scenario of `src/bin/destructor_panics.rs` runs in its own process, so
//! an abort fails its test with a message instead of killing this binary.

use std::process::Command;

fn run(scenario: &str) {
    let exe = env!("CARGO_BIN_EXE_destructor_panics");
    let out = tests::watchdog(scenario, 60, {
        let scenario = scenario.to_string();
        move || Command::new(exe).arg(&scenario).output().unwrap()
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim() == format!("ok: {scenario}"),
        "{scenario}: {:?} (an abort is a killed process)\nstdout: {stdout}\nstderr (last 2000 bytes): {}",
        out.status,
        &stderr[stderr.len().saturating_sub(2000)..]
    );
}

#[test]
fn detached_tasks_whose_output_panics_when_dropped() {
    run("detached_outputs");
}

#[test]
fn pending_futures_that_panic_when_dropped_at_shutdown_give_is_panic() {
    run("shutdown");
}

#[test]
fn aborted_futures_that_panic_when_dropped_give_is_panic() {
    run("abort");
}

#[test]
fn dropping_a_handle_whose_output_panics_when_dropped_does_not_panic() {
    run("handle_dropped");
}

#[test]
fn dropping_a_blocking_handle_whose_output_panics_when_dropped_does_not_panic() {
    run("blocking_handle_dropped");
}

#[test]
fn a_future_that_panics_when_dropped_after_completing_gives_is_panic() {
    run("completion");
}
