//! A blocking thread the OS refuses to start loses no closure: each
//! scenario of `src/bin/faults.rs` runs in its own process (it lowers the
//! process's address-space limit).

fn run(scenario: &str) {
    tests::run_scenario(env!("CARGO_BIN_EXE_faults"), scenario);
}

#[test]
fn a_closure_no_thread_can_run_is_cancelled_not_left_waiting() {
    run("blocking_no_thread");
}

#[test]
fn a_closure_whose_thread_cannot_start_waits_for_a_busy_one() {
    run("blocking_queued");
}
