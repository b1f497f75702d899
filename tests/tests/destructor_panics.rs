//! No panic in a user destructor aborts the process or stops a worker: each
//! scenario of `src/bin/destructor_panics.rs` runs in its own process, so
//! an abort fails its test with a message instead of killing this binary.

fn run(scenario: &str) {
    tests::run_scenario(env!("CARGO_BIN_EXE_destructor_panics"), scenario);
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

#[test]
fn thread_hooks_that_panic_do_not_stop_their_workers() {
    run("hooks");
}

#[test]
fn a_deadlock_handler_that_panics_on_a_sleeping_worker_does_not_stop_it() {
    run("deadlock_handler");
}
