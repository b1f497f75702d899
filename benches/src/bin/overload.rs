//! Under overload, pool beside tokio, in one process: what the blocking
//! pool keeps after a burst, and what an HTTP accept loop does while the
//! descriptor table is full.
//!
//! ```text
//! cargo run --release -p benches --bin overload [-- --quick]
//! ```
//!
//! * **Blocking burst**: 256 `spawn_blocking` closures of 20 ms each on a
//!   runtime of 2 workers with its default blocking settings (both keep an
//!   idle blocking thread 10 s; `--quick`: 1 s, set on both). Printed: the
//!   most threads the process had beyond the runtime's own at rest, and how
//!   many are left 1 s after the burst and past the keep-alive.
//! * **Accept at EMFILE**: an HTTP server (`pool::hyper::serve`; axum 0.8's
//!   `axum::serve` on tokio) whose process has used up its descriptors but
//!   for the one a client connects with. The client connects `n` times in a
//!   row (one connection at a time) and waits up to 2 s for an answer;
//!   printed: the answers (a reset, or a reply) and the time to each, the
//!   CPU of every thread but the client's over the flood (the server's),
//!   the process's over a second of a full table with nothing connecting,
//!   and, once descriptors are free, the time to the first request served.

use benches::{median, process_cpu_time};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Threads of this process now.
fn threads() -> usize {
    benches::load::thread_count(std::process::id())
}

/// What a burst left behind: the most threads beyond `base` while it ran,
/// then 1 s after it, then past the keep-alive.
struct Burst {
    peak: usize,
    after_1s: usize,
    after_keep_alive: usize,
}

/// The most threads of this process while `run` runs (sampled every
/// millisecond), the sampler not counted.
fn peak_while(run: impl FnOnce()) -> usize {
    let ((), most) = benches::load::peak_while(threads, run);
    // The sampler itself is one thread more than the runtime's.
    most.saturating_sub(1)
}

fn after(base: usize, keep_alive: Duration, peak: usize) -> Burst {
    std::thread::sleep(Duration::from_secs(1));
    let after_1s = threads().saturating_sub(base);
    std::thread::sleep(keep_alive + Duration::from_secs(1));
    Burst {
        peak: peak.saturating_sub(base),
        after_1s,
        after_keep_alive: threads().saturating_sub(base),
    }
}

const BURST: usize = 256;
const JOB: Duration = Duration::from_millis(20);

fn burst_pool(keep_alive: Duration) -> Burst {
    let p = pool::Builder::new()
        .worker_threads(2)
        .blocking_keep_alive(keep_alive)
        .build()
        .unwrap();
    let base = threads();
    let peak = peak_while(|| {
        let handles: Vec<_> = (0..BURST)
            .map(|_| p.spawn_blocking(|| std::thread::sleep(JOB)))
            .collect();
        for h in handles {
            p.block_on(h).unwrap();
        }
    });
    after(base, keep_alive, peak)
}

fn burst_tokio(keep_alive: Duration) -> Burst {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_keep_alive(keep_alive)
        .enable_all()
        .build()
        .unwrap();
    let base = threads();
    let peak = peak_while(|| {
        rt.block_on(async {
            let handles: Vec<_> = (0..BURST)
                .map(|_| tokio::task::spawn_blocking(|| std::thread::sleep(JOB)))
                .collect();
            for h in handles {
                h.await.unwrap();
            }
        })
    });
    after(base, keep_alive, peak)
}

/// One client's connection to a server whose process is out of
/// descriptors: how it was answered, and when.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Answer {
    Reset,
    Closed,
    Reply,
    Silence,
    /// The client's own connect failed (not the server's doing).
    ClientFailed,
}

fn connect_once(addr: SocketAddr) -> (Answer, Duration) {
    let start = Instant::now();
    let Ok(mut conn) = TcpStream::connect(addr) else {
        return (Answer::ClientFailed, start.elapsed());
    };
    conn.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut buf = [0; 256];
    let answer = match conn.read(&mut buf) {
        Ok(0) => Answer::Closed,
        Ok(_) => Answer::Reply,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Answer::Reset,
        Err(_) => Answer::Silence,
    };
    (answer, start.elapsed())
}

/// A GET that is served: the time until it is (retried every 10 ms).
fn time_to_served(addr: SocketAddr) -> Duration {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if connect_once(addr).0 == Answer::Reply {
            return start.elapsed();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    start.elapsed()
}

struct Emfile {
    answered: usize,
    tried: usize,
    median_ms: f64,
    max_ms: f64,
    cpu_per_conn_us: f64,
    flood_cpu_pct: f64,
    idle_cpu_pct: f64,
    resumed_ms: f64,
}

/// The client, in a process of its own (`--client ADDR N`, so that the
/// server's full table is the server's alone): waits for a line on stdin,
/// connects `n` times in a row, and prints one line: answered, median and
/// max time to an answer in ms, and the answers by kind.
fn client(addr: SocketAddr, n: usize) {
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
    let mut times = Vec::new();
    let mut answered = 0;
    let mut kinds = std::collections::BTreeMap::new();
    for _ in 0..n {
        let (answer, took) = connect_once(addr);
        if matches!(answer, Answer::Reset | Answer::Closed | Answer::Reply) {
            answered += 1;
        }
        *kinds.entry(format!("{answer:?}")).or_insert(0) += 1;
        times.push(took.as_secs_f64() * 1e3);
    }
    let max_ms = times.iter().copied().fold(0.0, f64::max);
    println!("{answered} {} {max_ms} {kinds:?}", median(&mut times));
}

/// The flood of a client process against `addr`, whose server (`name` in
/// what is printed) already served one request; with the descriptor table
/// full if `full` (else the same flood served normally, for comparison).
fn flood(addr: SocketAddr, n: usize, name: &str, full: bool) -> Emfile {
    use std::process::{Command, Stdio};
    // The client process and its pipes, before the table fills.
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--client", &addr.to_string(), &n.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let hogs = if full {
        tests::use_up_descriptors(4096)
    } else {
        Vec::new()
    };
    let cpu = process_cpu_time();
    let idle_start = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let idle_cpu_pct =
        (process_cpu_time() - cpu).as_secs_f64() * 100.0 / idle_start.elapsed().as_secs_f64();
    let cpu = process_cpu_time();
    let flood_start = Instant::now();
    // Both pipes held until the table is freed: closing one frees a slot.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    let mut out = String::new();
    let mut stdout = child.stdout.take().unwrap();
    stdout.read_to_string(&mut out).unwrap();
    let server_cpu = process_cpu_time() - cpu;
    let flood_secs = flood_start.elapsed().as_secs_f64();
    drop(hogs);
    drop((stdin, stdout));
    tests::set_soft_limit(libc::RLIMIT_NOFILE, None);
    child.wait().unwrap();
    let resumed_ms = time_to_served(addr).as_secs_f64() * 1e3;
    let mut fields = out.splitn(4, ' ');
    let mut next = || fields.next().unwrap_or_default().trim().to_string();
    let (answered, median_ms, max_ms, kinds) = (next(), next(), next(), next());
    eprintln!("{name}: answers {kinds}");
    Emfile {
        answered: answered.parse().unwrap_or(0),
        tried: n,
        median_ms: median_ms.parse().unwrap_or(f64::NAN),
        max_ms: max_ms.parse().unwrap_or(f64::NAN),
        cpu_per_conn_us: server_cpu.as_secs_f64() * 1e6 / n as f64,
        flood_cpu_pct: server_cpu.as_secs_f64() * 100.0 / flood_secs,
        idle_cpu_pct,
        resumed_ms,
    }
}

fn emfile_pool(n: usize, full: bool) -> Emfile {
    use hyper::body::Incoming;
    let p = pool::Builder::new().worker_threads(2).build().unwrap();
    let listener = p
        .block_on(pool::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let service = hyper::service::service_fn(|_: hyper::Request<Incoming>| async {
        Ok::<_, std::convert::Infallible>(hyper::Response::new(String::from("served")))
    });
    drop(p.spawn(pool::hyper::serve(listener, service)));
    assert_eq!(connect_once(addr).0, Answer::Reply);
    while p.metrics().alive_tasks > 1 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let result = flood(addr, n, "pool", full);
    eprintln!("pool: accept_errors = {}", p.metrics().accept_errors);
    result
}

fn emfile_tokio(n: usize) -> Emfile {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "served" }));
    rt.spawn(async move { axum::serve(listener, app).await });
    assert_eq!(connect_once(addr).0, Answer::Reply);
    // Let the served connection's task close its socket.
    std::thread::sleep(Duration::from_millis(100));
    flood(addr, n, "tokio", true)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, addr, n] = &args[..] {
        if flag == "--client" {
            return client(addr.parse().unwrap(), n.parse().unwrap());
        }
    }
    let quick = args.iter().any(|a| a == "--quick");
    // `--emfile N`: the accept part alone, N connections to pool's server
    // (to profile it: `perf record -g target/release/overload --emfile 2000`).
    let emfile_only = match &args[..] {
        [flag, n] if flag == "--emfile" => n.parse::<usize>().ok().filter(|&n| n > 0),
        _ => None,
    };
    if emfile_only.is_none() {
        if let Some(bad) = args.iter().find(|a| *a != "--quick") {
            eprintln!("overload: unknown option {bad:?}\nusage: overload [--quick | --emfile N]");
            std::process::exit(2);
        }
    }
    let keep_alive = if quick {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    };
    println!("machine: {}, {} CPUs", benches::cpu_model(), num_cpus());
    if let Some(n) = emfile_only {
        for (table, full) in [("full", true), ("free", false)] {
            let e = emfile_pool(n, full);
            println!(
                "pool::hyper::serve, table {table}: {} of {} answered; {:.2} / {:.2} ms; {:.0} us of CPU a connection; {:.1}% of a core",
                e.answered, e.tried, e.median_ms, e.max_ms, e.cpu_per_conn_us, e.flood_cpu_pct
            );
        }
        return;
    }
    println!(
        "\n### Blocking burst: {BURST} closures of {JOB:?}, keep-alive {keep_alive:?} on both\n"
    );
    println!("| runtime | peak threads beyond its own | 1 s after | past the keep-alive |");
    println!("|---|--:|--:|--:|");
    for (name, b) in [
        ("pool", burst_pool(keep_alive)),
        ("tokio", burst_tokio(keep_alive)),
    ] {
        println!(
            "| {name} | {} | {} | {} |",
            b.peak, b.after_1s, b.after_keep_alive
        );
    }
    let (n_pool, n_tokio) = if quick { (20, 2) } else { (200, 5) };
    println!("\n### Accept at EMFILE: one connection at a time, each waiting up to 2 s\n");
    println!(
        "| server | answered | time to answer, median / max | server CPU per connection | server CPU during the flood | process CPU, full table, nobody connecting | served again after freeing |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|");
    for (name, e) in [
        ("pool::hyper::serve", emfile_pool(n_pool, true)),
        ("axum::serve on tokio", emfile_tokio(n_tokio)),
    ] {
        println!(
            "| {name} | {} of {} | {:.2} / {:.2} ms | {:.0} us | {:.1}% of a core | {:.2}% of a core | {:.1} ms |",
            e.answered,
            e.tried,
            e.median_ms,
            e.max_ms,
            e.cpu_per_conn_us,
            e.flood_cpu_pct,
            e.idle_cpu_pct,
            e.resumed_ms
        );
    }
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
