//! Record pool's timeline on two workloads of `compare` and draw them: the
//! pictures in `docs/` (`docs/TIMELINE.md` reads them).
//!
//! ```text
//! cargo run --release -p benches --bin timeline -- [--out docs] [--keep-json]
//! ```
//!
//! * bursty: 64 tasks of 5 us injected from outside, then 1 ms of quiet,
//!   200 times; drawn: four bursts in a row that one worker ran (more than
//!   80% of the polls), and four that both shared, where the run has them.
//! * sparse_wake: one message every 200 us from an outside thread to one
//!   waiting task; drawn: 0.6 ms from the middle of the run.

use benches::exec::{bench_trace_path, Exec, PoolTraced};
use benches::trace::Timeline;
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
                eprintln!(
                    "timeline: unexpected argument {other:?}\nusage: timeline [--out DIR] [--keep-json]"
                );
                std::process::exit(2);
            }
        }
    }
    let workers = 2;
    let record = |name: &str, run: &dyn Fn(&PoolTraced)| -> String {
        let e = PoolTraced::start(workers);
        std::thread::sleep(std::time::Duration::from_millis(10));
        run(&e);
        drop(e); // writes the trace
        let json = std::fs::read_to_string(bench_trace_path()).expect("read the trace");
        if keep_json {
            std::fs::write(out.join(format!("timeline-{name}.json")), &json)
                .expect("keep the JSON");
        }
        json
    };
    let draw = |json: &str, name: &str, title: &str, (from_ms, to_ms): (f64, f64)| {
        let view = View {
            from_ms: Some(from_ms),
            to_ms: Some(to_ms),
            width: 1100.0,
            title: title.to_string(),
        };
        let svg = render(json, &view).expect("render the trace");
        let path = out.join(format!("timeline-{name}.svg"));
        std::fs::write(&path, svg).expect("write the SVG");
        println!("wrote {}", path.display());
    };

    let json = record("bursty", &|e| {
        w::bursty(e);
    });
    let bursts = bursts(&json);
    let one_sided = bursts.iter().filter(|b| b.one_sided()).count();
    println!(
        "bursty: {one_sided} of {} bursts run by one worker",
        bursts.len()
    );
    if let Some(window) = four_in_a_row(&bursts, true) {
        let title = format!(
            "bursty on pool (2 workers), 64 injected tasks of 5 us, 1 ms apart: \
             one worker runs the burst ({one_sided} of {} bursts)",
            bursts.len()
        );
        draw(&json, "bursty", &title, window);
    }
    if let Some(window) = four_in_a_row(&bursts, false) {
        let title = format!(
            "bursty on pool (2 workers): bursts both workers share ({} of {})",
            bursts.len() - one_sided,
            bursts.len()
        );
        draw(&json, "bursty-shared", &title, window);
    }

    let json = record("sparse_wake", &|e| {
        w::sparse_wake(e, 1);
    });
    draw(
        &json,
        "sparse_wake",
        "sparse_wake on pool (2 workers): one message every 200 us from outside",
        (100.0, 100.6),
    );
    let _ = std::fs::remove_file(bench_trace_path());
}

/// One burst of polls: when it ran (ms from the trace's first event) and
/// how many polls each of the two workers made.
struct Burst {
    start_ms: f64,
    end_ms: f64,
    polls: [usize; 2],
}

impl Burst {
    fn one_sided(&self) -> bool {
        let total = self.polls[0] + self.polls[1];
        self.polls.iter().any(|&n| n * 10 > total * 8)
    }
}

/// The bursts of a trace: polls separated by more than 300 us of no poll.
fn bursts(json: &str) -> Vec<Burst> {
    let timeline = Timeline::parse(json);
    let first = timeline.first;
    let mut polls: Vec<(f64, f64, usize)> = timeline
        .polls()
        .map(|(worker, span)| (span.start, span.end, worker))
        .collect();
    polls.sort_by(|a, b| a.0.total_cmp(&b.0));
    let ms = |us: f64| (us - first) / 1e3;
    let mut out: Vec<Burst> = Vec::new();
    for (start, end, tid) in polls {
        match out.last_mut() {
            Some(b) if ms(start) - b.end_ms < 0.3 => {
                b.end_ms = b.end_ms.max(ms(end));
                b.polls[tid.min(1)] += 1;
            }
            _ => {
                let mut polls = [0, 0];
                polls[tid.min(1)] = 1;
                out.push(Burst {
                    start_ms: ms(start),
                    end_ms: ms(end),
                    polls,
                });
            }
        }
    }
    out
}

/// A window around the first four bursts in a row that are (or are not)
/// one-sided, after the first 20 ms.
fn four_in_a_row(bursts: &[Burst], one_sided: bool) -> Option<(f64, f64)> {
    bursts
        .windows(4)
        .find(|w| w[0].start_ms > 20.0 && w.iter().all(|b| b.one_sided() == one_sided))
        .map(|w| (w[0].start_ms - 0.2, w[3].end_ms + 0.3))
}
