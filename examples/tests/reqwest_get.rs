//! The reqwest example: tokio's HTTP client in pool tasks (tokio-compat)
//! GETs from a pool server in the same process.

use tests::{run_example, watchdog};

#[test]
fn reqwest_gets_from_pool_tasks_against_a_pool_server() {
    watchdog("reqwest example", 60, || {
        let stdout = run_example("reqwest_get", &[]);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 5, "{stdout}");
        for line in &lines[..4] {
            assert_eq!(*line, r#"200 {"id":1,"name":"ada"}"#);
        }
        assert_eq!(lines[4], "done: 4");
    });
}
