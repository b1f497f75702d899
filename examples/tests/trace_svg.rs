//! The timeline renderer draws a trace that a pool recorded.

use std::process::Command;

#[test]
fn renders_a_recorded_trace_to_svg() {
    let dir = std::env::temp_dir();
    let trace = dir.join(format!("pool-svg-test-{}.json", std::process::id()));
    let svg = dir.join(format!("pool-svg-test-{}.svg", std::process::id()));
    tests::watchdog("record a trace", 60, {
        let trace = trace.clone();
        move || {
            let pool = pool::Builder::new()
                .worker_threads(2)
                .trace(&trace)
                .build()
                .unwrap();
            for _ in 0..5 {
                let hs: Vec<_> = (0..20)
                    .map(|_| pool.spawn(async { pool::yield_now().await }))
                    .collect();
                for h in hs {
                    pool.block_on(h).unwrap();
                }
                tests::wait_until_asleep(&pool);
            }
        }
    });
    let out = Command::new(tests::example_binary("trace_svg"))
        .arg(&trace)
        .arg(&svg)
        .args(["--title", "test"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "an SVG document");
    assert!(text.trim_end().ends_with("</svg>"));
    assert!(
        text.contains(">worker 0<") && text.contains(">worker 1<"),
        "a row per worker"
    );
    assert!(text.contains("#2e9e5b"), "poll spans drawn");
    assert!(text.contains("#c9ccd1"), "sleep spans drawn");
    // A file that is not a trace is an error that says so.
    let bad = dir.join(format!("pool-svg-test-{}.txt", std::process::id()));
    std::fs::write(&bad, "hello").unwrap();
    let out = Command::new(tests::example_binary("trace_svg"))
        .arg(&bad)
        .arg(&svg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not JSON"));
    for f in [trace, svg, bad] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn render_rejects_a_trace_without_lanes() {
    let err =
        examples::trace_svg::render(r#"{"traceEvents":[]}"#, &Default::default()).unwrap_err();
    assert!(err.contains("no worker lanes"), "{err}");
}
