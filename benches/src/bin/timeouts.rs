//! A timeout that never fires: the price of registering a far timer and
//! cancelling it before its deadline, beside tokio's wheel and async-io's
//! timers, with a backlog of idle timers pending (issue 72).
//!
//! A server registers one such timer per request: hyper's header-read
//! timeout (30 s, `pool::hyper::serve` gives hyper pool's timers), a
//! `timeout` around a call that answers in microseconds, a keep-alive's
//! idle timer. Almost none fires. Each round, on each runtime with 2
//! workers, in one run, alternated:
//!
//! * `--idle N` tasks (default 1 000, like idle keep-alive connections)
//!   each sleep for an hour, so the store is not empty;
//! * one task spawned on the runtime then makes `--timeouts N` sleeps of
//!   30 s one after another, polls each once (which registers it) and
//!   drops it (which cancels it).
//!
//! ```text
//! cargo run --release -p benches --bin timeouts [-- --rounds 5 --timeouts 200000 --idle 1000]
//! ```
//!
//! Prints the median ns per timeout (create, register, cancel) over the
//! rounds, and pool's ratio to each.

use benches::args::positive;
use benches::{cpu_model, median};
use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

const FAR: Duration = Duration::from_secs(30);
const IDLE: Duration = Duration::from_secs(3600);

/// `n` timeouts made, registered (one poll) and cancelled (dropped) in
/// turn: ns each. Fails if one fires: none is due for 30 s.
async fn timeouts<S: Future<Output = ()>>(n: u64, sleep: impl Fn(Duration) -> S) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let mut timer = pin!(sleep(FAR));
        let pending =
            std::future::poll_fn(|cx| Poll::Ready(timer.as_mut().poll(cx).is_pending())).await;
        assert!(pending, "a timeout of 30 s fired at once");
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

fn run_pool(n: u64, idle: u64) -> f64 {
    let p = pool::Builder::new().worker_threads(2).build().unwrap();
    p.block_on(async {
        let idle: Vec<_> = (0..idle)
            .map(|_| pool::spawn(pool::time::sleep(IDLE)))
            .collect();
        let ns = pool::spawn(timeouts(n, pool::time::sleep)).await.unwrap();
        for task in idle {
            task.abort();
        }
        ns
    })
}

fn run_tokio(n: u64, idle: u64) -> f64 {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let idle: Vec<_> = (0..idle)
            .map(|_| tokio::spawn(tokio::time::sleep(IDLE)))
            .collect();
        let ns = tokio::spawn(timeouts(n, tokio::time::sleep)).await.unwrap();
        for task in idle {
            task.abort();
        }
        ns
    })
}

fn run_async_io(n: u64, idle: u64) -> f64 {
    let ex = async_executor::Executor::new();
    let (stop, stopped) = async_channel::bounded::<()>(1);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| futures_lite::future::block_on(ex.run(stopped.recv())));
        }
        let ns = futures_lite::future::block_on(async {
            let idle: Vec<_> = (0..idle)
                .map(|_| {
                    ex.spawn(async {
                        async_io::Timer::after(IDLE).await;
                    })
                })
                .collect();
            let sleep = |d| async move {
                async_io::Timer::after(d).await;
            };
            let ns = ex.spawn(timeouts(n, sleep)).await;
            drop(idle);
            ns
        });
        drop(stop);
        ns
    })
}

fn usage(problem: &str) -> ! {
    eprintln!("timeouts: {problem}\nusage: timeouts [--rounds N] [--timeouts N] [--idle N]");
    std::process::exit(2)
}

fn main() {
    let (mut rounds, mut n, mut idle) = (5, 200_000, 1_000);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rounds" => rounds = positive(&mut it, "--rounds", usage),
            "--timeouts" => n = positive(&mut it, "--timeouts", usage),
            "--idle" => idle = positive(&mut it, "--idle", usage),
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    type Run = fn(u64, u64) -> f64;
    let runs: [(&str, Run); 3] = [
        ("pool", run_pool),
        ("tokio", run_tokio),
        ("async-io", run_async_io),
    ];
    let mut ns: [Vec<f64>; 3] = Default::default();
    for round in 0..rounds as usize {
        for k in 0..runs.len() {
            let which = (k + round) % runs.len();
            ns[which].push((runs[which].1)(n, idle));
        }
    }
    let medians: Vec<f64> = ns.iter_mut().map(|v| median(v)).collect();
    println!(
        "{n} timeouts of 30 s registered and cancelled, {idle} idle timers pending, \
         2 workers, median of {rounds} rounds ({}):\n",
        cpu_model()
    );
    println!("| runtime | ns per timeout | pool / it |");
    println!("|---|--:|--:|");
    for ((name, _), m) in runs.iter().zip(&medians) {
        println!("| {name} | {m:.1} | {:.2}x |", medians[0] / m);
    }
}
