//! Instructions per task, counted by valgrind's callgrind: `task_cost`'s
//! workloads on one worker, for pool, async-executor and tokio, side by
//! side, with the functions that spend pool's (docs/BENCHMARKS.md, "The
//! cheapest task, in instructions").
//!
//! ```text
//! cargo build --release -p benches --bins
//! target/release/task_ir [--only W,..] [--execs E,..] [--top N] [--quick] [--keep DIR]
//! ```
//!
//! A count moves about 1% between runs of the same build (the threads'
//! timing: how often a worker searches, sleeps and wakes), where this
//! machine's timings move 10-30%: a change of a few instructions a task
//! shows. Each workload runs twice under callgrind, R and 3R repetitions on
//! one runtime, and the difference is divided by the 2R repetitions' tasks
//! (yields for yield_many, messages for ping_pong), so the process's start,
//! the runtime's start and stop and the checksum cancel out. What stays is
//! what a task costs in the steady state, every thread counted (pool's
//! watcher too). The functions are callgrind's own (exclusive) counts,
//! differenced the same way. Instructions are not time: an atomic or a
//! cache miss costs more than one; read `compare` beside it.
//!
//! `--keep DIR` keeps the callgrind files there (for `callgrind_annotate`);
//! else they are removed. `--quick` (CI's smoke run) takes R = 1 for every
//! workload (10 for chained_spawn): the same table, with more of the
//! threads' timing in it (2-3% from the full run's). Needs valgrind
//! (Debian: apt-get install valgrind).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const EXECS: [&str; 3] = ["pool", "async-executor", "tokio"];

/// A workload of `task_cost`: its units per repetition, what a unit is,
/// and R (the repetitions of the short run; the long one runs 3R).
struct Workload {
    name: &'static str,
    units: u64,
    unit: &'static str,
    reps: u64,
}

const WORKLOADS: [Workload; 5] = [
    Workload {
        name: "spawn_many_local",
        units: benches::workloads::SPAWN_MANY,
        unit: "task",
        reps: 10,
    },
    Workload {
        name: "chained_spawn",
        units: benches::workloads::CHAIN,
        unit: "task",
        reps: 100,
    },
    Workload {
        name: "yield_many",
        units: benches::workloads::YIELD_TASKS * benches::workloads::YIELDS,
        unit: "yield",
        reps: 1,
    },
    Workload {
        name: "ping_pong",
        // Two messages a round trip; each pair's two tasks are spawned too.
        units: benches::workloads::PING_PONG_PAIRS * benches::workloads::ROUND_TRIPS * 2,
        unit: "message",
        reps: 3,
    },
    Workload {
        name: "task_tree_bare",
        units: benches::workloads::TREE_TASKS,
        unit: "task",
        reps: 1,
    },
];

fn usage(problem: &str) -> ! {
    let names: Vec<_> = WORKLOADS.iter().map(|w| w.name).collect();
    eprintln!(
        "task_ir: {problem}\n\
         usage: task_ir [--only W,..] [--execs E,..] [--top N] [--quick] [--keep DIR]\n\
         W: {}\nE: {}",
        names.join(", "),
        EXECS.join(", ")
    );
    std::process::exit(2)
}

/// One callgrind profile: the program's total and each function's own
/// instructions.
struct Profile {
    total: u64,
    functions: HashMap<String, u64>,
}

fn count(n: &str) -> Option<u64> {
    n.replace(',', "").parse().ok()
}

/// Reads `callgrind_annotate`'s listing of `file`: the totals line and
/// every function's line (`1,234 (0.5%)  path:function [object]`).
fn profile(file: &Path) -> Profile {
    let out = Command::new("callgrind_annotate")
        .args(["--threshold=100", "--auto=no"])
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!("task_ir: callgrind_annotate did not run ({e}); it comes with valgrind")
        });
    let text = String::from_utf8_lossy(&out.stdout);
    let mut total = None;
    let mut functions = HashMap::new();
    for line in text.lines() {
        let line = line.trim_start();
        let Some((n, rest)) = line.split_once(' ') else {
            continue;
        };
        let Some(n) = count(n) else { continue };
        // "(12.34%)  name": skip the share.
        let Some((_, name)) = rest.split_once(')') else {
            continue;
        };
        let name = name.trim();
        if name == "PROGRAM TOTALS" {
            total = Some(n);
            continue;
        }
        // Drop the object in brackets and the source path before the
        // function (a path has no spaces here; a function may).
        let name = name.rsplit_once(" [").map_or(name, |(f, _)| f);
        let name = match name.find(".rs:").or_else(|| name.find(".c:")) {
            Some(i) => &name[name[i..].find(':').unwrap() + i + 1..],
            None => name,
        };
        *functions.entry(name.to_string()).or_insert(0) += n;
    }
    Profile {
        total: total.unwrap_or_else(|| {
            panic!(
                "task_ir: no PROGRAM TOTALS in callgrind_annotate's listing of {}",
                file.display()
            )
        }),
        functions,
    }
}

/// Runs `task_cost EXEC WORKLOAD --workers 1 --reps REPS` under callgrind
/// into `dir`.
fn callgrind(task_cost: &Path, dir: &Path, exec: &str, workload: &str, reps: u64) -> Profile {
    let file = dir.join(format!("{exec}.{workload}.{reps}.cg"));
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", file.display()))
        .arg(task_cost)
        .args([exec, workload, "--workers", "1", "--reps", &reps.to_string()])
        .output()
        .unwrap_or_else(|e| {
            eprintln!("task_ir: valgrind did not run ({e}). Install it (Debian: apt-get install valgrind) and rerun.");
            std::process::exit(2)
        });
    if !out.status.success() {
        eprintln!(
            "task_ir: task_cost {exec} {workload} failed under callgrind:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::process::exit(1)
    }
    profile(&file)
}

fn main() {
    let mut it = std::env::args().skip(1);
    let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (mut only, mut execs) = (owned(&names), owned(&EXECS));
    let (mut top, mut quick, mut keep) = (10usize, false, None::<PathBuf>);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--only" => only = benches::args::names(&mut it, "--only", &names, usage),
            "--execs" => execs = benches::args::names(&mut it, "--execs", &EXECS, usage),
            "--top" => top = benches::args::positive(&mut it, "--top", usage) as usize,
            "--quick" => quick = true,
            "--keep" => {
                keep = Some(
                    it.next()
                        .map(PathBuf::from)
                        .unwrap_or_else(|| usage("--keep takes a directory")),
                )
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    let task_cost = std::env::current_exe()
        .expect("task_ir: its own path")
        .with_file_name("task_cost");
    if !task_cost.exists() {
        usage(&format!(
            "{} is not built: cargo build --release -p benches --bins",
            task_cost.display()
        ));
    }
    let kept = keep.is_some();
    let dir = keep
        .unwrap_or_else(|| std::env::temp_dir().join(format!("task_ir.{}", std::process::id())));
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| usage(&format!("cannot create {}: {e}", dir.display())));

    println!(
        "instructions per unit, one worker, callgrind (R and 3R repetitions differenced); {}",
        benches::cpu_model()
    );
    let mut tops = Vec::new();
    print!("{:<18}{:<9}", "workload", "unit");
    for e in &execs {
        print!("{e:>16}");
    }
    let has_pool = execs.iter().any(|e| e == "pool");
    let ratios: Vec<&str> = execs
        .iter()
        .map(String::as_str)
        .filter(|e| *e != "pool")
        .collect();
    if has_pool {
        for e in &ratios {
            print!("{:>20}", format!("pool/{e}"));
        }
    }
    println!();
    for w in WORKLOADS
        .iter()
        .filter(|w| only.iter().any(|o| o == w.name))
    {
        let r = if quick {
            w.reps.min(if w.name == "chained_spawn" { 10 } else { 1 })
        } else {
            w.reps
        };
        let units = (2 * r * w.units) as f64;
        let mut per = HashMap::new();
        for exec in execs.iter().map(String::as_str) {
            let short = callgrind(&task_cost, &dir, exec, w.name, r);
            let long = callgrind(&task_cost, &dir, exec, w.name, 3 * r);
            per.insert(exec, long.total.saturating_sub(short.total) as f64 / units);
            if exec == "pool" {
                let mut f: Vec<(String, f64)> = long
                    .functions
                    .iter()
                    .map(|(name, &n)| {
                        let before = short.functions.get(name).copied().unwrap_or(0);
                        (name.clone(), (n as f64 - before as f64) / units)
                    })
                    .collect();
                f.sort_by(|a, b| b.1.total_cmp(&a.1));
                f.truncate(top);
                tops.push((w.name, w.unit, f));
            }
        }
        print!("{:<18}{:<9}", w.name, w.unit);
        for e in &execs {
            print!("{:>16.0}", per[e.as_str()]);
        }
        if let Some(p) = per.get("pool") {
            for e in &ratios {
                print!("{:>19.2}x", p / per[e]);
            }
        }
        println!();
    }
    for (name, unit, f) in tops {
        println!(
            "\npool, {name}: the top {} functions, own instructions per {unit}",
            f.len()
        );
        for (function, n) in f {
            println!("{n:>10.1}  {function}");
        }
    }
    if kept {
        println!("\ncallgrind data: {}", dir.display());
    } else {
        // A few megabytes of profiles: kept only when asked (`--keep`).
        let _ = std::fs::remove_dir_all(&dir);
    }
}
