//! The reference service (`examples/src/reference.rs`: axum with
//! tower-http's trace, compression, timeout and `ServeDir`, sqlx on
//! SQLite, a reqwest proxy, a WebSocket echo) under load, route by route,
//! served three ways side by side in interleaved rounds, 2 workers each:
//!
//! * `pool`: `pool::hyper::serve` on pool;
//! * `pool-no-head-timeout` (only when named in `--only`): the same with
//!   `Serve::header_read_timeout(None)`, like for like with `axum::serve`,
//!   which arms no header-read timeout;
//! * `pool-axum-serve`: tokio's `axum::serve` inside a pool (code written
//!   for tokio, moved as it is);
//! * `tokio`: `axum::serve` on tokio's multi-thread runtime.
//!
//! ```text
//! cargo build --release -p benches --bins
//! cargo build --release -p examples --example reference_service
//! target/release/reference [--rounds 3] [--secs 3] [--connections 32]
//!     [--only pool,pool-no-head-timeout,pool-axum-serve,tokio] [--routes json,static,users,proxy,ws] [--quick]
//! ```
//!
//! HTTP routes are loaded by `wrk` (one thread); `ws` by client threads of
//! our own, one WebSocket each, echoing 64-byte binary messages. `/proxy`'s
//! upstream is one more reference service, on tokio with one worker, in its
//! own process, the same for every runtime. Per route and runtime it prints
//! the medians over rounds of requests (or echoes) per second and its ratio
//! to tokio, p50 and p99 latency, the server's CPU per request, and the
//! server's CPU by thread name (in % of one core; threads of one name
//! summed), which says where the work ran, and the most threads the server
//! had during the route's rounds (sampled every millisecond; tokio's
//! blocking threads stay 10 s idle, so a later round starts with an
//! earlier one's).

use benches::args::{names, positive};
use benches::load::{
    client_load, peak_while, thread_count, thread_cpu_ms, thread_ticks, wrk, Load,
};
use benches::median;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;
use tests::client::WsClient;
use tests::ListeningServer;

/// The servers run by default.
const RUNTIMES: [&str; 3] = ["pool", "pool-axum-serve", "tokio"];
/// Every server `--only` can name.
const ALL_RUNTIMES: [&str; 4] = ["pool", "pool-no-head-timeout", "pool-axum-serve", "tokio"];
const ROUTES: [(&str, &str); 5] = [
    ("json", "/json"),
    ("static", "/static/blob.txt"),
    ("users", "/users/42"),
    ("proxy", "/proxy"),
    ("ws", "/ws"),
];
const WS_MESSAGE: [u8; 64] = [b'w'; 64];

struct Args {
    rounds: usize,
    secs: u64,
    connections: usize,
    runtimes: Vec<String>,
    routes: Vec<String>,
}

fn usage(problem: &str) -> ! {
    let routes: Vec<&str> = ROUTES.iter().map(|r| r.0).collect();
    eprintln!(
        "reference: {problem}\nusage: reference [--rounds N] [--secs S] [--connections C] \
         [--only {}] [--routes {}] [--quick]",
        ALL_RUNTIMES.join(","),
        routes.join(",")
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let route_names: Vec<&str> = ROUTES.iter().map(|r| r.0).collect();
    let mut args = Args {
        rounds: 3,
        secs: 3,
        connections: 32,
        runtimes: RUNTIMES.iter().map(|r| r.to_string()).collect(),
        routes: route_names.iter().map(|r| r.to_string()).collect(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let it = &mut it;
        match a.as_str() {
            "--rounds" => args.rounds = positive(it, "--rounds", usage) as usize,
            "--secs" => args.secs = positive(it, "--secs", usage),
            "--connections" => args.connections = positive(it, "--connections", usage) as usize,
            "--only" => args.runtimes = names(it, "--only", &ALL_RUNTIMES, usage),
            "--routes" => args.routes = names(it, "--routes", &route_names, usage),
            "--quick" => {
                args.rounds = 1;
                args.secs = 1;
            }
            "--help" | "-h" => {
                println!("usage: reference [--rounds N] [--secs S] [--connections C] [--only RUNTIMES] [--routes ROUTES] [--quick]");
                std::process::exit(0)
            }
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    args
}

fn service_binary() -> PathBuf {
    let me = std::env::current_exe().expect("own path");
    let binary = me.with_file_name("examples").join("reference_service");
    if !binary.exists() {
        eprintln!(
            "reference: {} not found: build it with \
             `cargo build --release -p examples --example reference_service`",
            binary.display()
        );
        std::process::exit(2);
    }
    binary
}

fn start(runtime: &str, workers: usize, upstream: Option<&str>) -> ListeningServer {
    let mut cmd = Command::new(service_binary());
    cmd.args(["--runtime", runtime, "--workers", &workers.to_string()]);
    if let Some(url) = upstream {
        cmd.args(["--upstream", url]);
    }
    ListeningServer::start(cmd.stderr(Stdio::inherit()))
}

struct Run {
    load: Load,
    cpu_per_req_us: f64,
    /// CPU by thread name, in % of one core.
    by_thread: BTreeMap<String, f64>,
    /// The most threads the server had during the run (sampled every
    /// millisecond): its blocking threads for the route's load.
    peak_threads: usize,
}

fn run_once(server: &ListeningServer, route: &str, path: &str, args: &Args) -> Run {
    let addr = server.addr.as_str();
    let pid = server.pid();
    let before = thread_ticks(pid);
    let (load, peak_threads) = peak_while(
        move || thread_count(pid),
        || {
            if route == "ws" {
                client_load(
                    args.connections,
                    args.secs,
                    || WsClient::connect(addr, path).expect("WebSocket handshake"),
                    |ws| {
                        let (_, reply) = ws.echo(&WS_MESSAGE).expect("WebSocket echo");
                        assert_eq!(reply, WS_MESSAGE, "the echo differs");
                    },
                )
            } else {
                wrk(addr, path, args.connections, args.secs)
            }
        },
    );
    let after = thread_ticks(pid);
    let mut total_ms = 0.0;
    let mut by_thread = BTreeMap::new();
    for (name, ms) in thread_cpu_ms(&before, &after) {
        total_ms += ms;
        *by_thread.entry(name).or_insert(0.0) += ms / (args.secs as f64 * 10.0);
    }
    Run {
        load,
        cpu_per_req_us: total_ms * 1e3 / load.requests,
        by_thread,
        peak_threads,
    }
}

fn main() {
    let args = parse_args();
    println!(
        "reference: {} round(s) of {} s, {} connections, 2 workers per server",
        args.rounds, args.secs, args.connections
    );
    let upstream = start("tokio", 1, None);
    let upstream_url = format!("http://{}/json", upstream.addr);
    let servers: Vec<(String, ListeningServer)> = args
        .runtimes
        .iter()
        .map(|r| (r.clone(), start(r, 2, Some(&upstream_url))))
        .collect();
    // Let every server settle (sqlx's connections open, workers sleep).
    std::thread::sleep(Duration::from_millis(300));
    for (route, path) in ROUTES
        .iter()
        .filter(|r| args.routes.iter().any(|a| a == r.0))
    {
        let mut runs: BTreeMap<&str, Vec<Run>> = BTreeMap::new();
        for round in 0..args.rounds {
            let n = servers.len();
            for i in 0..n {
                // Interleaved, and each round starts with the next runtime.
                let (runtime, server) = &servers[(i + round) % n];
                let run = run_once(server, route, path, &args);
                eprintln!(
                    "  {route} round {round} {runtime}: {:.0}/s p50 {:.0} us p99 {:.0} us",
                    run.load.rate, run.load.p50_us, run.load.p99_us
                );
                runs.entry(runtime.as_str()).or_default().push(run);
            }
        }
        report(route, path, &args, &runs);
    }
    for (runtime, server) in servers {
        let (status, rest) = server.interrupt(30);
        assert!(status.success(), "{runtime} server: {status}: {rest}");
    }
}

fn report(route: &str, path: &str, args: &Args, runs: &BTreeMap<&str, Vec<Run>>) {
    let med =
        |rs: &[Run], f: &dyn Fn(&Run) -> f64| median(&mut rs.iter().map(f).collect::<Vec<_>>());
    let tokio = runs.get("tokio");
    let ratio = |rs: &[Run], f: &dyn Fn(&Run) -> f64| {
        tokio.map_or("-".to_owned(), |t| {
            format!("{:.2}x", med(rs, f) / med(t, f))
        })
    };
    let unit = if route == "ws" { "echoes/s" } else { "req/s" };
    println!("\n### {route} (`GET {path}`)\n");
    println!("| runtime | {unit} | vs tokio | p50 | p99 | vs tokio | CPU per request | vs tokio | peak threads | server CPU by thread (% of a core) |");
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|");
    for runtime in &args.runtimes {
        let Some(rs) = runs.get(runtime.as_str()) else {
            continue;
        };
        let mut names: Vec<&String> = rs.iter().flat_map(|r| r.by_thread.keys()).collect();
        names.sort();
        names.dedup();
        let mut threads: Vec<(f64, &String)> = names
            .into_iter()
            .map(|n| (med(rs, &|r| r.by_thread.get(n).copied().unwrap_or(0.0)), n))
            .filter(|(pct, _)| *pct >= 1.0)
            .collect();
        threads.sort_by(|a, b| b.0.total_cmp(&a.0));
        let threads: Vec<String> = threads.iter().map(|(p, n)| format!("{n} {p:.0}")).collect();
        println!(
            "| {runtime} | {:.0} | {} | {:.0} us | {:.0} us | {} | {:.1} us | {} | {} | {} |",
            med(rs, &|r| r.load.rate),
            ratio(rs, &|r| r.load.rate),
            med(rs, &|r| r.load.p50_us),
            med(rs, &|r| r.load.p99_us),
            ratio(rs, &|r| r.load.p99_us),
            med(rs, &|r| r.cpu_per_req_us),
            ratio(rs, &|r| r.cpu_per_req_us),
            rs.iter().map(|r| r.peak_threads).max().unwrap_or(0),
            threads.join(", ")
        );
    }
}
