//! Soaks (issue 71), pool beside tokio in one run: the reference service
//! (`examples/src/reference.rs`, axum) in a child process, 2 workers,
//! `--runtime pool` (`pool::hyper::serve`) and `--runtime tokio`
//! (`axum::serve` on tokio's multi-thread runtime), one after the other.
//!
//! ```text
//! cargo build --release -p benches --bins -p examples --example reference_service
//! target/release/soak [--secs 300] [--only pool,tokio] [--soaks ws-churn,fd-limit] [--quick]
//! ```
//!
//! * **ws-churn** (`--secs`, default 300): 32 client threads, each in a
//!   loop: open a WebSocket on `/ws`, echo 1 to 16 binary messages of 8 B
//!   to 4 KiB, then end it one of three ways in turn: a clean close (a
//!   close frame, and the server's in reply), a drop mid-frame (half a
//!   frame, then FIN), a rude close (`SO_LINGER` 0: a reset). Errors the
//!   server caused: a connect, handshake, echo or clean close that failed
//!   or came back wrong.
//! * **fd-limit** (60 s; `--quick`: 3 s): the server started under
//!   `RLIMIT_NOFILE` 256 (`ulimit -n 256`), 1000 client threads, each in a
//!   loop: `GET /json` on a new connection (2 s to connect, 2 s to read),
//!   10 ms pause after a failure. Counted: replies, resets, timeouts,
//!   other errors; after the clients stop, the time until a request is
//!   served again.
//!
//! Sampled from `/proc` every 200 ms: the server's descriptors and RSS.
//! Printed per soak and runtime: before (started, one request served),
//! the most while it ran, and after (2 s after the clients stopped); then
//! the server's exit on SIGINT (status and time).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tests::client::{WsClient, BINARY, CLOSE};
use tests::ListeningServer;

const RUNTIMES: [&str; 2] = ["pool", "tokio"];
const SOAKS: [&str; 2] = ["ws-churn", "fd-limit"];
const FD_LIMIT: u64 = 256;

struct Args {
    ws_secs: u64,
    fd_secs: u64,
    ws_clients: usize,
    fd_clients: usize,
    runtimes: Vec<String>,
    soaks: Vec<String>,
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "soak: {problem}\nusage: soak [--secs S] [--only {}] [--soaks {}] [--quick]",
        RUNTIMES.join(","),
        SOAKS.join(",")
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        ws_secs: 300,
        fd_secs: 60,
        ws_clients: 32,
        fd_clients: 1000,
        runtimes: RUNTIMES.iter().map(|s| s.to_string()).collect(),
        soaks: SOAKS.iter().map(|s| s.to_string()).collect(),
    };
    let mut it = std::env::args().skip(1);
    let pick = |v: String, all: &[&str], what: &str| -> Vec<String> {
        let picked: Vec<String> = v.split(',').map(str::to_owned).collect();
        for p in &picked {
            if !all.contains(&p.as_str()) {
                usage(&format!(
                    "{what} takes some of {}, got {p:?}",
                    all.join(",")
                ));
            }
        }
        picked
    };
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{a} takes a value")))
        };
        match a.as_str() {
            "--secs" => {
                let v = value();
                args.ws_secs =
                    v.parse().ok().filter(|&s| s > 0).unwrap_or_else(|| {
                        usage(&format!("--secs takes seconds (> 0), got {v:?}"))
                    });
            }
            "--only" => args.runtimes = pick(value(), &RUNTIMES, "--only"),
            "--soaks" => args.soaks = pick(value(), &SOAKS, "--soaks"),
            "--quick" => {
                args.ws_secs = 3;
                args.fd_secs = 3;
                args.ws_clients = 8;
                args.fd_clients = 200;
            }
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    args
}

/// The reference service's binary, beside this one.
fn reference_service() -> PathBuf {
    let exe = std::env::current_exe().expect("this binary's path");
    let path = exe
        .parent()
        .expect("target/release")
        .join("examples/reference_service");
    if !path.exists() {
        eprintln!(
            "soak: {} is missing: cargo build --release -p examples --example reference_service",
            path.display()
        );
        std::process::exit(2);
    }
    path
}

/// A server's descriptors and resident memory.
#[derive(Clone, Copy, Default)]
struct Sample {
    fds: usize,
    rss_kib: u64,
}

fn sample(pid: u32) -> Sample {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let rss_kib = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0);
    Sample { fds, rss_kib }
}

/// Sample `pid` every 200 ms while `run` runs: the most of each.
fn peak_while<T>(pid: u32, run: impl FnOnce() -> T) -> (T, Sample) {
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut most = Sample::default();
            while !stop.load(Ordering::Relaxed) {
                let s = sample(pid);
                most.fds = most.fds.max(s.fds);
                most.rss_kib = most.rss_kib.max(s.rss_kib);
                std::thread::sleep(Duration::from_millis(200));
            }
            most
        })
    };
    let out = run();
    stop.store(true, Ordering::Relaxed);
    (out, sampler.join().unwrap())
}

/// Errors and outcomes, by kind.
#[derive(Default)]
struct Tally(Mutex<BTreeMap<String, u64>>);

impl Tally {
    fn add(&self, kind: &str) {
        *self.0.lock().unwrap().entry(kind.to_owned()).or_default() += 1;
    }
    fn get(&self, kind: &str) -> u64 {
        self.0.lock().unwrap().get(kind).copied().unwrap_or(0)
    }
    fn errors(&self, except: &[&str]) -> String {
        let m = self.0.lock().unwrap();
        let errors: Vec<String> = m
            .iter()
            .filter(|(k, _)| !except.contains(&k.as_str()))
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        if errors.is_empty() {
            "0".to_owned()
        } else {
            errors.join(", ")
        }
    }
}

/// One WebSocket's life, number `i` of a client: the outcome's kind.
fn ws_cycle(addr: &str, i: u64) -> Result<&'static str, String> {
    let mut ws = WsClient::connect(addr, "/ws").map_err(|e| format!("connect: {}", e.kind()))?;
    let messages = 1 + i % 16;
    for m in 0..messages {
        let len = 8usize << ((i + m) % 10);
        let payload: Vec<u8> = (0..len).map(|b| (b as u64 ^ i ^ m) as u8).collect();
        match ws.echo(&payload) {
            Ok((BINARY, back)) if back == payload => {}
            Ok((op, back)) => {
                return Err(format!(
                    "echo came back wrong (opcode {op}, {} B)",
                    back.len()
                ))
            }
            Err(e) => return Err(format!("echo: {}", e.kind())),
        }
    }
    match i % 3 {
        0 => {
            ws.send(CLOSE, &1000u16.to_be_bytes())
                .map_err(|e| format!("close: {}", e.kind()))?;
            match ws.recv() {
                Ok((CLOSE, _)) => Ok("clean close"),
                Ok((op, _)) => Err(format!("close answered with opcode {op}")),
                Err(e) => Err(format!("close: {}", e.kind())),
            }
        }
        1 => {
            // A frame header promising 1000 bytes, masked, and 10 of them.
            let mut frame = vec![0x80 | BINARY, 0x80 | 126, 0x03, 0xe8, 1, 2, 3, 4];
            frame.extend_from_slice(&[0u8; 10]);
            let _ = ws.tcp().write_all(&frame);
            Ok("dropped mid-frame")
        }
        _ => {
            tests::reset_on_close(ws.tcp());
            Ok("rude close")
        }
    }
}

/// `GET /json` on a new connection, 2 s to connect and 2 s to read: the
/// outcome's kind.
fn get_json(addr: SocketAddr) -> &'static str {
    let kind = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => "reset",
        std::io::ErrorKind::ConnectionRefused => "refused",
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => "timeout",
        _ => "other error",
    };
    let mut s = match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(s) => s,
        Err(e) => return kind(e),
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if let Err(e) = s.write_all(b"GET /json HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n") {
        return kind(e);
    }
    let mut reply = Vec::new();
    match s.read_to_end(&mut reply) {
        Ok(_) if reply.starts_with(b"HTTP/1.1 200") => "reply",
        Ok(_) if reply.is_empty() => "closed without a reply",
        Ok(_) => "other reply",
        Err(e) => kind(e),
    }
}

fn start(runtime: &str, fd_limit: Option<u64>) -> ListeningServer {
    let mut cmd = Command::new(reference_service());
    cmd.args(["--runtime", runtime, "--workers", "2"]);
    if let Some(limit) = fd_limit {
        // SAFETY: between fork and exec the closure only calls setrlimit,
        // which is async-signal-safe, on a value on its own stack.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    let server = ListeningServer::start(&mut cmd);
    // One request served: the service is up (its database made).
    let addr: SocketAddr = server.addr.parse().expect("an address");
    let deadline = Instant::now() + Duration::from_secs(10);
    while get_json(addr) != "reply" {
        assert!(
            Instant::now() < deadline,
            "the {runtime} server did not serve /json within 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// Clients running `cycle` in a loop for `secs`, `n` threads.
fn clients(n: usize, secs: u64, cycle: impl Fn(u64) + Send + Sync + 'static) {
    let cycle = Arc::new(cycle);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let next = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (cycle, next) = (Arc::clone(&cycle), Arc::clone(&next));
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    while Instant::now() < deadline {
                        cycle(next.fetch_add(1, Ordering::Relaxed));
                    }
                })
                .expect("a client thread")
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// The server's end: SIGINT, and (clean exit, time to it).
fn interrupt(server: ListeningServer) -> (bool, Duration) {
    let start = Instant::now();
    let (status, _) = server.interrupt(30);
    (status.success(), start.elapsed())
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// One table row; `exit`: (clean, time to it).
fn row(
    (soak, runtime): (&str, &str),
    [before, peak, after]: [Sample; 3],
    load: &str,
    (clean, took): (bool, Duration),
) {
    println!(
        "| {soak} | {runtime} | {} / {} / {} | {} / {} / {} | {load} | {} in {:.0} ms |",
        before.fds,
        peak.fds,
        after.fds,
        mib(before.rss_kib),
        mib(peak.rss_kib),
        mib(after.rss_kib),
        if clean { "clean exit" } else { "FAILED exit" },
        took.as_secs_f64() * 1e3
    );
}

fn ws_churn(runtime: &str, args: &Args) {
    let server = start(runtime, None);
    let pid = server.pid();
    let addr = server.addr.clone();
    let before = sample(pid);
    let tally = Arc::new(Tally::default());
    let ((), peak) = peak_while(pid, || {
        let (tally, addr) = (Arc::clone(&tally), addr.clone());
        clients(args.ws_clients, args.ws_secs, move |i| {
            match ws_cycle(&addr, i) {
                Ok(kind) => tally.add(kind),
                Err(e) => tally.add(&e),
            }
        })
    });
    std::thread::sleep(Duration::from_secs(2));
    let after = sample(pid);
    let exit = interrupt(server);
    let ends = ["clean close", "dropped mid-frame", "rude close"];
    let cycles: u64 = ends.iter().map(|k| tally.get(k)).sum();
    row(
        ("ws-churn", runtime),
        [before, peak, after],
        &format!(
            "{cycles} WebSockets ({:.0}/s), errors the server caused: {}",
            cycles as f64 / args.ws_secs as f64,
            tally.errors(&ends),
        ),
        exit,
    );
}

fn fd_limit(runtime: &str, args: &Args) {
    let server = start(runtime, Some(FD_LIMIT));
    let pid = server.pid();
    let addr: SocketAddr = server.addr.parse().expect("an address");
    let before = sample(pid);
    let tally = Arc::new(Tally::default());
    let ((), peak) = peak_while(pid, || {
        let tally = Arc::clone(&tally);
        clients(args.fd_clients, args.fd_secs, move |_| {
            let kind = get_json(addr);
            tally.add(kind);
            if kind != "reply" {
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    });
    // Served again: the time to the first reply once the clients stopped.
    let stopped = Instant::now();
    while get_json(addr) != "reply" {
        if stopped.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    let resumed = stopped.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    let after = sample(pid);
    let accept_errors = (runtime == "pool")
        .then(|| tests::client::get(&addr.to_string(), "/metrics", &[]).ok())
        .flatten()
        .and_then(|r| {
            r.text()
                .lines()
                .find(|l| l.starts_with("pool_accept_errors_total "))
                .map(|l| l.rsplit(' ').next().unwrap_or("?").to_owned())
        })
        .unwrap_or_else(|| "n/a".to_owned());
    let exit = interrupt(server);
    row(
        ("fd-limit", runtime),
        [before, peak, after],
        &format!(
            "{} replies ({:.0}/s), resets {}, timeouts {}, other: {}; served again {:.0} ms after; accept_errors {accept_errors}",
            tally.get("reply"),
            tally.get("reply") as f64 / args.fd_secs as f64,
            tally.get("reset"),
            tally.get("timeout"),
            tally.errors(&["reply", "reset", "timeout"]),
            resumed.as_secs_f64() * 1e3,
        ),
        exit,
    );
}

fn main() {
    let args = parse_args();
    // 1000 clients need 1000 descriptors here.
    tests::set_soft_limit(libc::RLIMIT_NOFILE, None);
    println!(
        "soak: {}, {} cores; reference service, 2 workers; ws-churn {} s x {} clients, fd-limit {} s x {} clients under ulimit -n {FD_LIMIT}",
        benches::cpu_model(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        args.ws_secs,
        args.ws_clients,
        args.fd_secs,
        args.fd_clients
    );
    println!("| soak | runtime | fds before / most / after | RSS before / most / after | load and errors | SIGINT |");
    println!("|---|---|---|---|---|---|");
    for soak in &args.soaks {
        for runtime in &args.runtimes {
            match soak.as_str() {
                "ws-churn" => ws_churn(runtime, &args),
                _ => fd_limit(runtime, &args),
            }
        }
    }
}
