//! What a simulated round trip costs in wall time, beside a real one: is
//! the network of `pool::sim` the slow part of a test suite?
//!
//! ```text
//! cargo run --release -p benches --bin sim_echo [-- --reps N --trips N]
//! ```
//!
//! A client writes 16 bytes to an echo server and reads them back, `trips`
//! times in a row over one connection, in four settings, interleaved rep
//! by rep:
//!
//! * **real**: a pool of 1 worker, the OS's loopback TCP;
//! * **sim, no latency**: a seeded pool (1 logical worker) with a
//!   simulated network whose links have no latency: every arrival is
//!   within the operation that sent it;
//! * **sim, 1-5 ms**: the same with `Network::new()`'s latency (each
//!   arrival is a jump of the virtual clock, through the timer store);
//! * **sim, 4 workers**: `Network::new()` on 4 logical workers (the
//!   seeded runner's steps among more actors).
//!
//! Printed: the median wall time per round trip of each, and its ratio to
//! the real one. Every run checks that each echo is what was sent.

use benches::median;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use pool::net::{TcpListener, TcpStream};
use pool::sim;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

fn usage(problem: &str) -> ! {
    eprintln!("sim_echo: {problem}\nusage: sim_echo [--reps N] [--trips N]");
    std::process::exit(2)
}

const SERVER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 1, 10));

/// `trips` echo round trips from a client to an echo server listening on
/// `listener` (its task detached); the wall time of the round trips.
async fn trips(listener: TcpListener, trips: usize) -> Duration {
    let addr = listener.local_addr().unwrap();
    let addr = if addr.ip().is_unspecified() {
        std::net::SocketAddr::new(SERVER, addr.port())
    } else {
        addr
    };
    drop(pool::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut buf = [0; 16];
        while conn.read_exact(&mut buf).await.is_ok() {
            conn.write_all(&buf).await.unwrap();
        }
    }));
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.set_nodelay(true).unwrap();
    let start = Instant::now();
    for i in 0..trips {
        let msg = [i as u8; 16];
        conn.write_all(&msg).await.unwrap();
        let mut back = [0; 16];
        conn.read_exact(&mut back).await.unwrap();
        assert_eq!(back, msg, "the echo is what was sent");
    }
    start.elapsed()
}

/// Wall time per round trip on a real 1-worker pool.
fn real(n: usize) -> Duration {
    let pool = pool::Builder::new().worker_threads(1).build().unwrap();
    let took = pool.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        trips(listener, n).await
    });
    took / n as u32
}

/// Wall time per round trip on a seeded pool of `workers` logical workers
/// with `net`, the server on its own host.
fn simulated(n: usize, workers: usize, net: sim::Network) -> Duration {
    let pool = pool::Builder::new()
        .seed(1)
        .worker_threads(workers)
        .network(net)
        .build()
        .unwrap();
    let took = pool.block_on(async {
        let listener = sim::host(SERVER)
            .spawn(async { TcpListener::bind("0.0.0.0:7").await.unwrap() })
            .await
            .unwrap();
        trips(listener, n).await
    });
    took / n as u32
}

/// One setting's run: the wall time per round trip.
type Setting = Box<dyn Fn() -> Duration>;

fn main() {
    let mut reps = 7;
    let mut n = 2_000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .filter(|&v| v > 0)
                .unwrap_or_else(|| usage(&format!("{name} takes a positive number")))
        };
        match a.as_str() {
            "--reps" => reps = value("--reps"),
            "--trips" => n = value("--trips"),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    let no_latency = || sim::Network::new().latency(Duration::ZERO, Duration::ZERO);
    let settings: [(&str, Setting); 4] = [
        ("real loopback, 1 worker", Box::new(move || real(n))),
        (
            "sim, no latency, 1 worker",
            Box::new(move || simulated(n, 1, no_latency())),
        ),
        (
            "sim, 1-5 ms, 1 worker",
            Box::new(move || simulated(n, 1, sim::Network::new())),
        ),
        (
            "sim, 1-5 ms, 4 workers",
            Box::new(move || simulated(n, 4, sim::Network::new())),
        ),
    ];
    let mut samples = vec![Vec::new(); settings.len()];
    for _ in 0..reps {
        for (k, (_, run)) in settings.iter().enumerate() {
            samples[k].push(run().as_nanos() as f64);
        }
    }
    println!(
        "echo round trips of 16 bytes, {n} per run, median of {reps} interleaved runs ({}):",
        benches::cpu_model()
    );
    let real = median(&mut samples[0].clone());
    for (k, (name, _)) in settings.iter().enumerate() {
        let m = median(&mut samples[k]);
        println!(
            "  {name:<28} {:>8.2} us per round trip  {:>5.2}x real",
            m / 1e3,
            m / real
        );
    }
}
