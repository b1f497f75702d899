//! `POOL_TRACE=path` traces the global pool, which is never dropped: its
//! timeline is written when the process exits. The test runs itself again
//! as a child process with the variable set (the global pool is
//! process-wide state), and reads the file the child left.

use std::process::Command;

/// Set in the child: it uses the global pool and exits.
const CHILD: &str = "POOL_TRACE_TEST_CHILD";

#[test]
fn the_global_pool_writes_its_trace_at_exit() {
    if std::env::var_os(CHILD).is_some() {
        // The child: some tasks on the global pool, then a normal exit.
        let handles: Vec<_> = (0..100).map(|i| pool::spawn(async move { i })).collect();
        let sum: i32 = handles
            .into_iter()
            .map(|h| pool::block_on(h).unwrap())
            .sum();
        assert_eq!(sum, 4950);
        return;
    }
    let path = std::env::temp_dir().join(format!("pool-global-trace-{}.json", std::process::id()));
    let out = tests::watchdog("the child process", 60, {
        let path = path.clone();
        move || {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "the_global_pool_writes_its_trace_at_exit",
                    "--test-threads=1",
                ])
                .env(CHILD, "1")
                .env("POOL_TRACE", &path)
                .env("POOL_WORKER_THREADS", "2")
                .output()
                .unwrap()
        }
    });
    assert!(out.status.success(), "child failed: {out:?}");
    let text = std::fs::read_to_string(&path).expect("the child wrote its trace at exit");
    std::fs::remove_file(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = json["traceEvents"].as_array().unwrap();
    let lanes = events.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!(lanes, 2, "a lane per worker of the global pool");
    let polls = events.iter().filter(|e| e["name"] == "poll").count();
    assert!(polls >= 100, "every task's poll is in the trace: {polls}");
}
