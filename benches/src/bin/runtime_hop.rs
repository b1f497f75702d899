//! The price of a wake between two workers' tokio runtimes (issue 72,
//! part 2): with `tokio-compat`, a tokio task stays on the runtime it was
//! spawned on, and each runtime is driven by its worker alone. A task
//! woken from another thread (another worker, or a library's thread)
//! waits for that worker: tokio's remote schedule (a lock and a write to
//! the runtime's eventfd), and, if the worker sleeps in its runtime, its
//! wake. sqlx's pool hands its connections over in that way, through a
//! fair semaphore whose oldest waiter is on either runtime.
//!
//! Two tokio tasks pass a number back and forth through two tokio
//! channels of capacity 1, in one run:
//!
//! * `pool, one runtime`: both tasks on one worker's runtime (the second
//!   spawned from the first);
//! * `pool, two runtimes`: one on each (spawned by `block_on` on the
//!   main thread, which spawns each poll onto the runtime with the fewest
//!   tokio tasks);
//! * `tokio`: both spawned by `block_on` on tokio's multi-thread runtime
//!   with 2 workers (tokio runs a task a wake made on a worker next, on
//!   that worker: its LIFO slot).
//!
//! ```text
//! cargo run --release -p benches --bin runtime_hop [-- --rounds 5]
//! ```
//!
//! Prints the median time and process CPU per round trip over the rounds,
//! and the workers each task ran on.

use benches::{median, process_cpu_time};
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const ROUND_TRIPS: u64 = 50_000;

/// One measure: ns and CPU ns per round trip, and the threads of the two
/// tasks.
struct Hop {
    ns: f64,
    cpu_ns: f64,
    threads: (String, String),
}

/// A case's measures over the rounds, and its last round's threads.
#[derive(Default)]
struct Samples {
    ns: Vec<f64>,
    cpu_ns: Vec<f64>,
    threads: (String, String),
}

fn thread_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_owned()
}

/// The two tasks: `ping` sends and waits for the reply `ROUND_TRIPS`
/// times, `pong` answers; each returns its thread's name.
fn tasks() -> (
    impl Future<Output = String> + Send + 'static,
    impl Future<Output = String> + Send + 'static,
) {
    let (to_pong, mut pong_rx) = mpsc::channel::<u64>(1);
    let (to_ping, mut ping_rx) = mpsc::channel::<u64>(1);
    let ping = async move {
        for i in 0..ROUND_TRIPS {
            to_pong.send(i).await.expect("pong is alive");
            let back = ping_rx.recv().await.expect("pong answers");
            assert_eq!(back, i + 1, "pong answers the number it was sent");
        }
        thread_name()
    };
    let pong = async move {
        while let Some(i) = pong_rx.recv().await {
            if to_ping.send(i + 1).await.is_err() {
                break;
            }
        }
        thread_name()
    };
    (ping, pong)
}

/// Time `run` (which blocks until both tasks are done) per round trip.
fn measure(run: impl FnOnce() -> (String, String)) -> Hop {
    let cpu = process_cpu_time();
    let start = Instant::now();
    let threads = run();
    let ns = start.elapsed().as_nanos() as f64 / ROUND_TRIPS as f64;
    let cpu_ns = (process_cpu_time() - cpu).as_nanos() as f64 / ROUND_TRIPS as f64;
    Hop {
        ns,
        cpu_ns,
        threads,
    }
}

fn one_runtime(pool: &pool::Pool) -> Hop {
    measure(|| {
        pool.block_on(async {
            tokio::spawn(async {
                let (ping, pong) = tasks();
                let pong = tokio::spawn(pong);
                let ping = ping.await;
                (ping, pong.await.expect("pong ends"))
            })
            .await
            .expect("the pair ends")
        })
    })
}

fn two_runtimes(pool: &pool::Pool) -> Hop {
    measure(|| {
        pool.block_on(async {
            let (ping, pong) = tasks();
            let pong = tokio::spawn(pong);
            // The next poll spawns onto the other runtime, now the lighter.
            tokio::task::yield_now().await;
            let ping = tokio::spawn(ping);
            let ping = ping.await.expect("ping ends");
            (ping, pong.await.expect("pong ends"))
        })
    })
}

fn tokio_pair(rt: &tokio::runtime::Runtime) -> Hop {
    measure(|| {
        rt.block_on(async {
            let (ping, pong) = tasks();
            let pong = tokio::spawn(pong);
            let ping = tokio::spawn(ping);
            let ping = ping.await.expect("ping ends");
            (ping, pong.await.expect("pong ends"))
        })
    })
}

fn usage(problem: &str) -> ! {
    eprintln!("runtime_hop: {problem}\nusage: runtime_hop [--rounds N]");
    std::process::exit(2)
}

fn main() {
    let mut rounds = 5;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rounds" => rounds = benches::args::positive(&mut it, "--rounds", usage) as usize,
            other => usage(&format!("unknown argument {other}")),
        }
    }
    let pool = pool::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a pool of 2 workers");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio's runtime");
    type Case<'a> = (&'static str, Box<dyn Fn() -> Hop + 'a>);
    let cases: Vec<Case> = vec![
        ("pool, one runtime", Box::new(|| one_runtime(&pool))),
        ("pool, two runtimes", Box::new(|| two_runtimes(&pool))),
        ("tokio", Box::new(|| tokio_pair(&rt))),
    ];
    let mut results: Vec<Samples> = cases.iter().map(|_| Samples::default()).collect();
    for round in 0..rounds {
        // Rotate which case goes first.
        for k in 0..cases.len() {
            let i = (round + k) % cases.len();
            let hop = (cases[i].1)();
            results[i].ns.push(hop.ns);
            results[i].cpu_ns.push(hop.cpu_ns);
            results[i].threads = hop.threads;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let tokio_ns = median(&mut results[2].ns.clone());
    println!(
        "runtime_hop: {rounds} rounds of {ROUND_TRIPS} round trips between two tokio tasks, \
         2 workers each ({})\n",
        benches::cpu_model()
    );
    println!("| case | ns per round trip | vs tokio | CPU ns per round trip | ping's thread | pong's thread |");
    println!("|---|--:|--:|--:|---|---|");
    for ((name, _), samples) in cases.iter().zip(results.iter_mut()) {
        let ns = median(&mut samples.ns);
        let (ping, pong) = &samples.threads;
        println!(
            "| {name} | {ns:.0} | {:.2}x | {:.0} | {ping} | {pong} |",
            ns / tokio_ns,
            median(&mut samples.cpu_ns)
        );
    }
    let (ping, pong) = &results[1].threads;
    if ping == pong {
        eprintln!(
            "runtime_hop: the two-runtime case ran both tasks on {ping}: the spread of \
             `block_on`'s spawns did not happen"
        );
        std::process::exit(1);
    }
}
