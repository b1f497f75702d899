//! Load from outside a server process, shared by `http_load`, `reference`
//! and `overload`: wrk runs, round trips from client threads of our own,
//! the CPU time of each of the server's threads read from `/proc`, and the
//! most threads a process had while something ran.

use crate::percentile;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

/// One load run: rate, latency percentiles and how many requests.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// Requests (or round trips) per second.
    pub rate: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub requests: f64,
}

/// `wrk`'s latency line value ("283.00us", "1.72ms", "1.01s") in us.
fn wrk_us(v: &str) -> f64 {
    let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len()));
    let n: f64 = num.parse().unwrap_or(f64::NAN);
    match unit {
        "us" => n,
        "ms" => n * 1e3,
        "s" => n * 1e6,
        _ => f64::NAN,
    }
}

/// Load `http://{addr}{path}` with wrk (one thread, `connections`
/// connections, `secs` seconds). Exits with what to install if wrk is
/// missing; panics with wrk's output if it printed no rate, or if any
/// reply was not a 2xx/3xx (a load test of error pages measures nothing).
pub fn wrk(addr: &str, path: &str, connections: usize, secs: u64) -> Load {
    let out = Command::new("wrk")
        .args([
            "-t1",
            &format!("-c{connections}"),
            &format!("-d{secs}s"),
            "--latency",
            &format!("http://{addr}{path}"),
        ])
        .output()
        .unwrap_or_else(|e| {
            eprintln!("cannot run wrk ({e}): install it with `apt-get install wrk`");
            std::process::exit(2)
        });
    let text = String::from_utf8_lossy(&out.stdout);
    let mut load = Load {
        rate: f64::NAN,
        p50_us: f64::NAN,
        p99_us: f64::NAN,
        requests: f64::NAN,
    };
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Requests/sec:", v] => load.rate = v.parse().unwrap_or(f64::NAN),
            ["50%", v] => load.p50_us = wrk_us(v),
            ["99%", v] => load.p99_us = wrk_us(v),
            [n, "requests", "in", ..] => load.requests = n.parse().unwrap_or(f64::NAN),
            ["Non-2xx", ..] => panic!("wrk on {path}: error replies:\n{text}"),
            _ => {}
        }
    }
    assert!(
        load.rate.is_finite(),
        "wrk printed no Requests/sec:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    load
}

/// Round trips of `trip` for `secs`, from `connections` threads, each on
/// its own client made by `connect`.
pub fn client_load<C>(
    connections: usize,
    secs: u64,
    connect: impl Fn() -> C + Sync,
    trip: impl Fn(&mut C) + Sync,
) -> Load {
    let stop = Instant::now() + Duration::from_secs(secs);
    let start = Instant::now();
    let mut all: Vec<f64> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..connections)
            .map(|_| {
                s.spawn(|| {
                    let mut client = connect();
                    let mut lat = Vec::with_capacity(1 << 16);
                    while Instant::now() < stop {
                        let t = Instant::now();
                        trip(&mut client);
                        lat.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    lat
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    let requests = all.len() as f64;
    Load {
        rate: requests / start.elapsed().as_secs_f64(),
        p50_us: percentile(&mut all, 50.0),
        p99_us: percentile(&mut all, 99.0),
        requests,
    }
}

/// CPU ticks (user + system) of each thread of `pid`, with its name.
pub fn thread_ticks(pid: u32) -> BTreeMap<u64, (String, u64)> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for entry in dir.flatten() {
        let tid: u64 = entry.file_name().to_string_lossy().parse().unwrap_or(0);
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let name = stat[stat.find('(').unwrap_or(0) + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        // After the name: state is field 3 of the line, utime 14, stime 15.
        let ticks = fields
            .get(11)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            + fields
                .get(12)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        out.insert(tid, (name, ticks));
    }
    out
}

/// Threads of process `pid` now (`/proc/PID/task`; 0 if it is gone).
pub fn thread_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
}

/// Run `run` while a sampler thread reads `threads()` every millisecond:
/// `run`'s result and the most it read. When `threads` counts this
/// process, the sampler is one of the threads it counts.
pub fn peak_while<T>(
    threads: impl Fn() -> usize + Send + 'static,
    run: impl FnOnce() -> T,
) -> (T, usize) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut most = threads();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                most = most.max(threads());
            }
            most
        })
    };
    let out = run();
    stop.store(true, Ordering::Relaxed);
    (out, sampler.join().expect("the thread sampler panicked"))
}

/// CPU milliseconds each thread of `after` used since `before`, with its
/// name (a thread that started in between counts from zero).
pub fn thread_cpu_ms(
    before: &BTreeMap<u64, (String, u64)>,
    after: &BTreeMap<u64, (String, u64)>,
) -> Vec<(String, f64)> {
    // SAFETY: sysconf only reads a system constant.
    let tick_ms = 1000.0 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    after
        .iter()
        .map(|(tid, (name, ticks))| {
            let used = ticks - before.get(tid).map_or(0, |b| b.1.min(*ticks));
            (name.clone(), used as f64 * tick_ms)
        })
        .collect()
}
