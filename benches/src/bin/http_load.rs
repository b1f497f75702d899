//! HTTP (and TCP echo) load on `http_server`, side by side: pool's own
//! driver, pool over async-io, tokio and smol, 2 workers each, interleaved
//! rounds, a fresh server per run, loaded by `wrk` (Debian package `wrk`).
//!
//! ```text
//! cargo build --release -p benches --bins
//! target/release/http_load [--rounds 3] [--secs 4] [--connections 64]
//!     [--only pool,tokio] [--variants hello,work,echo] [--quick] [--pin]
//! ```
//!
//! Per runtime and variant it reports the medians over rounds of req/s (and
//! its ratio to tokio), wrk's p50 and p99 latency, the server's CPU time per
//! request, and the CPU of every server thread that is not a worker (the
//! main thread, async-io's reactor), read from `/proc/PID/task`.
//! `hello` is `GET /`; `work` is `GET /work?us=10` (10 us of CPU per
//! request); `echo` is 64-byte round trips over raw TCP from this process's
//! own client threads (no HTTP). `unix-echo` is the same over a Unix
//! socket, and `unix-hello` is `GET /` over a Unix socket from this
//! process's own keep-alive HTTP/1.1 client threads (wrk has no Unix
//! sockets); both run on pool and tokio only. `axum` is `GET /users/1` (a
//! JSON reply) from the axum example's app, served by
//! `pool::hyper::serve` on pool and by `axum::serve` on tokio.
//!
//! The client (wrk, or this process's threads) shares the machine's CPUs
//! with the server, and where the kernel puts the server's workers beside it
//! changes from run to run: on 2 CPUs it sets the p99 (`scripts/http-sched`,
//! docs/BENCHMARKS.md, "The HTTP work tail"). `--pin` fixes the placement:
//! the client on the last CPU this process may use, the server on the
//! others with one worker per CPU, so that the runtimes' own tails compare.

use benches::load::{client_load, thread_cpu_ms, thread_ticks, wrk};
use benches::median;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;
use tests::ListeningServer;

const RUNTIMES: [&str; 4] = ["pool", "pool-async-io", "tokio", "smol"];
const VARIANTS: [&str; 6] = ["hello", "work", "echo", "unix-echo", "unix-hello", "axum"];
/// The runtimes `http_server` serves a Unix socket, and the axum app, on.
const UNIX_RUNTIMES: [&str; 2] = ["pool", "tokio"];

/// Does `variant` run on pool and tokio only?
fn pool_and_tokio_only(variant: &str) -> bool {
    variant.starts_with("unix") || variant == "axum"
}
const ECHO_MSG: usize = 64;

struct Args {
    rounds: usize,
    secs: u64,
    connections: usize,
    runtimes: Vec<String>,
    variants: Vec<String>,
    /// `--pin`: the server's CPUs (the client has the one left).
    server_cpus: Option<Vec<usize>>,
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "http_load: {problem}\nusage: http_load [--rounds N] [--secs S] [--connections C] \
         [--only {}] [--variants {}] [--quick] [--pin]",
        RUNTIMES.join(","),
        VARIANTS.join(",")
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        rounds: 3,
        secs: 4,
        connections: 64,
        runtimes: RUNTIMES.iter().map(|s| s.to_string()).collect(),
        variants: VARIANTS.iter().map(|s| s.to_string()).collect(),
        server_cpus: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        let number = |v: String| -> u64 {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{a} takes a number, got {v:?}")))
        };
        match a.as_str() {
            "--rounds" => args.rounds = number(value()) as usize,
            "--secs" => args.secs = number(value()),
            "--connections" => args.connections = number(value()) as usize,
            "--only" => args.runtimes = value().split(',').map(str::to_string).collect(),
            "--variants" => args.variants = value().split(',').map(str::to_string).collect(),
            "--quick" => {
                args.rounds = 1;
                args.secs = 1;
                args.variants = vec![
                    "hello".into(),
                    "echo".into(),
                    "unix-echo".into(),
                    "unix-hello".into(),
                    "axum".into(),
                ];
            }
            "--pin" => {
                let mut cpus = allowed_cpus().unwrap_or_else(|e| {
                    usage(&format!("--pin: cannot read this process's CPUs: {e}"))
                });
                let Some(client) = cpus.pop().filter(|_| !cpus.is_empty()) else {
                    usage("--pin needs 2 CPUs or more: one for the client, the rest for the server")
                };
                pin(&[client]).unwrap_or_else(|e| {
                    usage(&format!(
                        "--pin: cannot pin the client to CPU {client}: {e}"
                    ))
                });
                args.server_cpus = Some(cpus);
            }
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    for r in &args.runtimes {
        if !RUNTIMES.contains(&r.as_str()) {
            usage(&format!("unknown runtime {r:?}"));
        }
    }
    for v in &args.variants {
        if !VARIANTS.contains(&v.as_str()) {
            usage(&format!("unknown variant {v:?}"));
        }
    }
    if args.rounds == 0 || args.secs == 0 || args.connections == 0 {
        usage("--rounds, --secs and --connections must be positive");
    }
    args
}

/// The CPUs this process may run on.
fn allowed_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: a zeroed `cpu_set_t` is a valid, empty set; the kernel writes
    // at most `size_of::<cpu_set_t>()` bytes into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; pid 0 is the calling thread.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below `CPU_SETSIZE`, within the set.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Pin the calling thread, and so every thread and process it starts
/// afterwards, to `cpus`. Only system calls: safe between fork and exec.
fn pin(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: a zeroed `cpu_set_t` is a valid, empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: `c` came from `allowed_cpus`, so it is below `CPU_SETSIZE`.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `set` is a valid set of the size passed; pid 0 is this thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// One run's figures.
#[derive(Clone, Debug, Default)]
struct Run {
    rps: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_per_req_us: f64,
    /// CPU (ms) of each thread that is not a worker, by name.
    others_ms: BTreeMap<String, f64>,
}

fn server_binary() -> PathBuf {
    let me = std::env::current_exe().expect("own path");
    me.with_file_name("http_server")
}

fn start(
    runtime: &str,
    variant: &str,
    echo: bool,
    unix: Option<&std::path::Path>,
    server_cpus: Option<&[usize]>,
) -> ListeningServer {
    let binary = server_binary();
    if !binary.exists() {
        eprintln!(
            "http_load: {} not found: build it with `cargo build --release -p benches --bins`",
            binary.display()
        );
        std::process::exit(2);
    }
    let mut cmd = Command::new(binary);
    let workers = server_cpus.map_or(2, <[usize]>::len);
    cmd.args(["--runtime", runtime, "--workers", &workers.to_string()]);
    if let Some(cpus) = server_cpus {
        let cpus = cpus.to_vec();
        // SAFETY: the hook only makes a system call (`pin`), which is safe
        // between fork and exec; it allocates nothing.
        unsafe {
            cmd.pre_exec(move || pin(&cpus));
        }
    }
    if echo {
        cmd.arg("--echo");
    }
    if variant == "axum" {
        cmd.arg("--axum");
    }
    if let Some(path) = unix {
        let _ = std::fs::remove_file(path);
        cmd.arg("--unix").arg(path);
    }
    ListeningServer::start(cmd.stderr(Stdio::inherit()))
}

fn is_worker(runtime: &str, name: &str) -> bool {
    match runtime {
        "pool" | "pool-async-io" => name
            .strip_prefix("pool-worker-")
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())),
        "tokio" => name.starts_with("tokio-r"),
        _ => name.starts_with("smol-"),
    }
}

/// A client connection: TCP (`HOST:PORT`, no Nagle) or Unix (`unix:PATH`).
fn connect(addr: &str) -> Box<dyn ReadWrite> {
    match addr.strip_prefix("unix:") {
        Some(path) => Box::new(UnixStream::connect(path).unwrap()),
        None => {
            let s = TcpStream::connect(addr).unwrap();
            s.set_nodelay(true).unwrap();
            Box::new(s)
        }
    }
}

trait ReadWrite: Read + Write + Send {}
impl<T: Read + Write + Send> ReadWrite for T {}

/// One round trip: 64 bytes echoed.
fn echo_round_trip(s: &mut dyn ReadWrite, buf: &mut Vec<u8>) {
    let msg = [7u8; ECHO_MSG];
    buf.resize(ECHO_MSG, 0);
    s.write_all(&msg).unwrap();
    s.read_exact(buf).unwrap();
}

/// One round trip: `GET /` on a keep-alive connection, its response read
/// to the end of its body (`content-length`).
fn http_round_trip(s: &mut dyn ReadWrite, buf: &mut Vec<u8>) {
    s.write_all(b"GET / HTTP/1.1\r\nhost: bench\r\n\r\n")
        .unwrap();
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("a content-length header");
        if buf.len() >= end + 4 + len {
            return;
        }
    }
}

fn run_once(runtime: &str, variant: &str, args: &Args) -> Run {
    let echo = variant.ends_with("echo");
    let unix = variant
        .starts_with("unix")
        .then(|| std::env::temp_dir().join(format!("http_load-{}.sock", std::process::id())));
    let server = start(
        runtime,
        variant,
        echo,
        unix.as_deref(),
        args.server_cpus.as_deref(),
    );
    let (pid, addr) = (server.pid(), server.addr.clone());
    // Let the server settle: its workers fall asleep.
    std::thread::sleep(Duration::from_millis(100));
    let before = thread_ticks(pid);
    let (c, secs) = (args.connections, args.secs);
    let connect = || (connect(&addr), Vec::new());
    let load = match variant {
        "hello" => wrk(&addr, "/", c, secs),
        "work" => wrk(&addr, "/work?us=10", c, secs),
        "axum" => wrk(&addr, "/users/1", c, secs),
        "unix-hello" => client_load(c, secs, connect, |(s, buf)| http_round_trip(&mut **s, buf)),
        _ => client_load(c, secs, connect, |(s, buf)| echo_round_trip(&mut **s, buf)),
    };
    let after = thread_ticks(pid);
    drop(server);
    let mut total_ms = 0.0;
    let mut others_ms = BTreeMap::new();
    for (name, ms) in thread_cpu_ms(&before, &after) {
        total_ms += ms;
        if !is_worker(runtime, &name) {
            *others_ms.entry(name).or_insert(0.0) += ms;
        }
    }
    Run {
        rps: load.rate,
        p50_us: load.p50_us,
        p99_us: load.p99_us,
        cpu_per_req_us: total_ms * 1e3 / load.requests,
        others_ms,
    }
}

fn main() {
    let args = parse_args();
    let placement = match &args.server_cpus {
        Some(cpus) => format!(
            "{} worker(s) per server pinned to CPU(s) {cpus:?}, the client to the CPU left",
            cpus.len()
        ),
        None => "2 workers per server".to_string(),
    };
    println!(
        "http_load: {} round(s) of {} s, {} connections, {placement}",
        args.rounds, args.secs, args.connections
    );
    for variant in &args.variants {
        let mut runs: BTreeMap<&str, Vec<Run>> = BTreeMap::new();
        for round in 0..args.rounds {
            // Interleaved, and each round starts with the next runtime.
            let runtimes: Vec<&String> = args
                .runtimes
                .iter()
                .filter(|r| !pool_and_tokio_only(variant) || UNIX_RUNTIMES.contains(&r.as_str()))
                .collect();
            let n = runtimes.len();
            for i in 0..n {
                let runtime = runtimes[(i + round) % n].as_str();
                let run = run_once(runtime, variant, &args);
                eprintln!(
                    "  {variant} round {round} {runtime}: {:.0}/s p50 {:.0} us p99 {:.0} us",
                    run.rps, run.p50_us, run.p99_us
                );
                runs.entry(runtime).or_default().push(run);
            }
        }
        let med =
            |rs: &[Run], f: fn(&Run) -> f64| median(&mut rs.iter().map(f).collect::<Vec<_>>());
        let tokio_rps = runs.get("tokio").map(|r| med(r, |r| r.rps));
        println!("\n### {variant}\n");
        println!("| runtime | req/s (median) | vs tokio | p50 | p99 | server CPU per request | CPU of non-worker threads (ms, median) |");
        println!("|---|--:|--:|--:|--:|--:|---|");
        for runtime in &args.runtimes {
            let Some(rs) = runs.get(runtime.as_str()) else {
                continue;
            };
            let rps = med(rs, |r| r.rps);
            let ratio = tokio_rps.map_or("-".to_string(), |t| format!("{:.2}", rps / t));
            let mut names: Vec<&String> = rs.iter().flat_map(|r| r.others_ms.keys()).collect();
            names.sort();
            names.dedup();
            let others: Vec<String> = names
                .iter()
                .map(|name| {
                    let mut v: Vec<f64> = rs
                        .iter()
                        .map(|r| r.others_ms.get(*name).copied().unwrap_or(0.0))
                        .collect();
                    format!("{name} {:.0}", median(&mut v))
                })
                .collect();
            println!(
                "| {runtime} | {rps:.0} | {ratio} | {:.0} us | {:.0} us | {:.1} us | {} |",
                med(rs, |r| r.p50_us),
                med(rs, |r| r.p99_us),
                med(rs, |r| r.cpu_per_req_us),
                others.join(", ")
            );
        }
    }
}
