//! Draw a pool timeline as an SVG.
//!
//! ```text
//! POOL_TRACE=trace.json cargo run --example hello     # or Builder::trace
//! cargo run -p examples --example trace_svg -- trace.json timeline.svg [--from-ms 10 --to-ms 30] [--width 1200] [--title TEXT]
//! ```
//!
//! One row per worker: green while it polls a task, blue for a fork-join
//! job, grey while it sleeps, white while it is awake and not polling;
//! ticks above a row mark getting sleepy, steals and injector takes.

use examples::trace_svg::{render, View};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut input, mut output) = (None, None);
    let mut view = View::default();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let parsed: Result<(), String> = match arg.as_str() {
            "--from-ms" => {
                value("--from-ms").and_then(|v| number(&v).map(|n| view.from_ms = Some(n)))
            }
            "--to-ms" => value("--to-ms").and_then(|v| number(&v).map(|n| view.to_ms = Some(n))),
            "--width" => value("--width").and_then(|v| number(&v).map(|n| view.width = n)),
            "--title" => value("--title").map(|v| view.title = v),
            _ if input.is_none() => {
                input = Some(arg);
                Ok(())
            }
            _ if output.is_none() => {
                output = Some(arg);
                Ok(())
            }
            other => Err(format!("unexpected argument {other:?}")),
        };
        if let Err(e) = parsed {
            return usage(&e);
        }
    }
    let (Some(input), Some(output)) = (input, output) else {
        return usage("give the trace file and the SVG file to write");
    };
    let text = match std::fs::read_to_string(&input) {
        Ok(t) => t,
        Err(e) => return usage(&format!("cannot read {input}: {e}")),
    };
    match render(&text, &view).and_then(|svg| {
        std::fs::write(&output, svg).map_err(|e| format!("cannot write {output}: {e}"))
    }) {
        Ok(()) => {
            println!("wrote {output}");
            ExitCode::SUCCESS
        }
        Err(e) => usage(&e),
    }
}

fn number(v: &str) -> Result<f64, String> {
    v.parse().map_err(|_| format!("{v:?} is not a number"))
}

fn usage(error: &str) -> ExitCode {
    eprintln!("trace_svg: {error}");
    eprintln!(
        "usage: trace_svg TRACE.json OUT.svg [--from-ms MS] [--to-ms MS] [--width PX] [--title TEXT]"
    );
    ExitCode::from(2)
}
