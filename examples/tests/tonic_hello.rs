//! The tonic example: a unary gRPC round trip between tonic's generated
//! client and server, both on pool, and a `Status` error carried back.

use tests::{run_example, watchdog};

#[test]
fn a_unary_call_round_trips_and_an_error_status_comes_back() {
    watchdog("tonic example", 60, || {
        let stdout = run_example("tonic_hello", &["ada", "grace"]);
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(lines[0].starts_with("listening on 127.0.0.1:"), "{stdout}");
        assert_eq!(
            &lines[1..],
            [
                "Hello ada!",
                "Hello grace!",
                "InvalidArgument: say who to greet: `name` is empty"
            ]
        );
    });
}
