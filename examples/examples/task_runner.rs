//! The seeded task runner of `shared/seeds/002_fb160c1f20a02885.txt`, on
//! `pool`, one `pool::spawn` per task.
//!
//! ```text
//! cargo run --release -p examples --example task_runner -- [SEED] [STARTING_HEIGHT] [MAX_CHILDREN]
//!     [--workers N] [--design pool|threads]
//! ```
//!
//! Defaults: a random seed, height 5, 5 children. Prints the seed and the
//! time on stderr and exactly one line on stdout:
//! `XOR_OF_ALL_OUTPUTS,HASH_COUNT,DERIVE_COUNT,RANDOM_COUNT`. The output is
//! the same for every worker count and every design. `--design threads` runs
//! the same tree on the seed's own design (plain threads, crossbeam deques),
//! to compare with `pool`.

use examples::task_runner::{roots, run_on_pool, run_on_threads};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    seed: u64,
    height: usize,
    max_children: usize,
    workers: Option<usize>,
    threads_design: bool,
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "task_runner: {problem}\n\
         usage: task_runner [SEED] [STARTING_HEIGHT] [MAX_CHILDREN] [--workers N] [--design pool|threads]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut positional = Vec::new();
    let mut workers = None;
    let mut threads_design = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--workers" => {
                let v = it
                    .next()
                    .unwrap_or_else(|| usage("--workers needs a value"));
                workers = Some(
                    v.parse()
                        .ok()
                        .filter(|&n: &usize| n > 0)
                        .unwrap_or_else(|| {
                            usage(&format!("--workers takes a positive integer, got {v:?}"))
                        }),
                );
            }
            "--design" => match it.next().as_deref() {
                Some("pool") => threads_design = false,
                Some("threads") => threads_design = true,
                other => usage(&format!("--design takes pool or threads, got {other:?}")),
            },
            _ if a.starts_with("--") => usage(&format!("unknown option {a:?}")),
            _ => positional.push(a),
        }
    }
    if positional.len() > 3 {
        usage("at most three positional arguments");
    }
    let number = |i: usize, name: &str| -> Option<u64> {
        positional.get(i).map(|v| {
            v.parse().unwrap_or_else(|_| {
                usage(&format!("{name} must be a non-negative integer, got {v:?}"))
            })
        })
    };
    Args {
        seed: number(0, "SEED").unwrap_or_else(rand::random),
        height: number(1, "STARTING_HEIGHT").unwrap_or(5) as usize,
        max_children: number(2, "MAX_CHILDREN").unwrap_or(5) as usize,
        workers,
        threads_design,
    }
}

/// A progress line on stderr while the run lasts, only if stderr is a terminal.
fn progress(
    done: Arc<AtomicU64>,
    finished: Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(std::thread::spawn(move || {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .expect("a valid template"),
        );
        while !finished.load(Ordering::Acquire) {
            bar.set_message(format!("{} tasks done", done.load(Ordering::Relaxed)));
            bar.tick();
            std::thread::sleep(Duration::from_millis(100));
        }
        bar.finish_and_clear();
    }))
}

fn main() -> std::io::Result<()> {
    let args = parse_args();
    eprintln!(
        "Using seed {}, starting height {}, max. children {}",
        args.seed, args.height, args.max_children
    );
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let roots = roots(args.seed, args.height, args.max_children);
    let done = Arc::new(AtomicU64::new(0));
    let finished = Arc::new(AtomicBool::new(false));
    let bar = progress(done.clone(), finished.clone());

    let start = Instant::now();
    let tally = if args.threads_design {
        run_on_threads(roots, workers, done)
    } else {
        let pool = pool::Builder::new().worker_threads(workers).build()?;
        pool.block_on(run_on_pool(roots, done))
    };
    let elapsed = start.elapsed();

    finished.store(true, Ordering::Release);
    if let Some(bar) = bar {
        let _ = bar.join();
    }
    println!("{}", tally.line());
    eprintln!("Completed in {:.3} s", elapsed.as_secs_f64());
    Ok(())
}
