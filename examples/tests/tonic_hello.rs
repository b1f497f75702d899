//! The tonic example: a unary gRPC round trip between tonic's generated
//! client and server, both on pool, and a `Status` error carried back.

use tests::{example_binary, watchdog};

#[test]
fn a_unary_call_round_trips_and_an_error_status_comes_back() {
    watchdog("tonic example", 60, || {
        let out = std::process::Command::new(example_binary("tonic_hello"))
            .args(["ada", "grace"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
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
