//! Record pool's timeline on two workloads of `compare` and draw them: the
//! pictures in `docs/` (`docs/TIMELINE.md` reads them).
//!
//! ```text
//! cargo run --release -p benches --bin timeline -- [--out docs] [--keep-json]
//! ```
//!
//! * bursty: 64 tasks of 5 us injected from outside, then 1 ms of quiet,
//!   200 times; drawn: 6 ms from the middle of the run.
//! * sparse_wake: one message every 200 us from an outside thread to one
//!   waiting task; drawn: 2 ms from the middle of the run.

use benches::exec::{bench_trace_path, Exec, PoolTraced};
use benches::workloads as w;
use examples::trace_svg::{render, View};
use std::path::PathBuf;

fn main() {
    let mut out = PathBuf::from("docs");
    let mut keep_json = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = PathBuf::from(args.next().expect("--out needs a directory")),
            "--keep-json" => keep_json = true,
            other => {
                eprintln!("timeline: unexpected argument {other:?}\nusage: timeline [--out DIR] [--keep-json]");
                std::process::exit(2);
            }
        }
    }
    let workers = 2;
    let picture = |name: &str, title: &str, from_ms: f64, to_ms: f64, run: &dyn Fn(&PoolTraced)| {
        let e = PoolTraced::start(workers);
        std::thread::sleep(std::time::Duration::from_millis(10));
        run(&e);
        drop(e); // writes the trace
        let json = std::fs::read_to_string(bench_trace_path()).expect("read the trace");
        let svg = render(
            &json,
            &View {
                from_ms: Some(from_ms),
                to_ms: Some(to_ms),
                width: 1100.0,
                title: title.to_string(),
            },
        )
        .expect("render the trace");
        let path = out.join(format!("timeline-{name}.svg"));
        std::fs::write(&path, svg).expect("write the SVG");
        if keep_json {
            std::fs::copy(
                bench_trace_path(),
                out.join(format!("timeline-{name}.json")),
            )
            .expect("keep the JSON");
        }
        println!("wrote {}", path.display());
    };
    picture(
        "bursty",
        "bursty on pool (2 workers): 64 injected tasks of 5 us, then 1 ms quiet",
        100.0,
        106.0,
        &|e| {
            w::bursty(e);
        },
    );
    picture(
        "sparse_wake",
        "sparse_wake on pool (2 workers): one message every 200 us from outside",
        100.0,
        102.0,
        &|e| {
            w::sparse_wake(e, 1);
        },
    );
    let _ = std::fs::remove_file(bench_trace_path());
}
