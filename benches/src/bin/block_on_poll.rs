//! The price of a `block_on` poll on the main thread (issue 72, part 3):
//! with `tokio-compat`, pool polls a future that uses tokio inside a
//! runtime's `Handle::block_on` on a budget of 4 tokio operations, so
//! that `axum::serve` in `#[pool::main]` spreads its connections; a future
//! that stops using tokio goes back to a plain poll. Beside tokio's own
//! `block_on` (multi-thread runtime, 2 workers), in one run:
//!
//! * `yield`: a loop of `yield_now` (pool's in pool, tokio's in tokio):
//!   the price of a poll of a future that never touches tokio (pool) or a
//!   deferred wake (tokio), per poll;
//! * `tokio_recv`: a loop draining a tokio unbounded channel filled
//!   beforehand, per message: every 4th is a poll of its own in pool.
//!
//! ```text
//! cargo run --release -p benches --bin block_on_poll [-- --rounds 7]
//! ```
//!
//! Prints the median ns per unit over the rounds, with pool / tokio.

use benches::median;
use std::time::Instant;

const UNITS: usize = 200_000;

fn yield_loop_pool(pool: &pool::Pool) -> f64 {
    let start = Instant::now();
    pool.block_on(async {
        for _ in 0..UNITS {
            pool::yield_now().await;
        }
    });
    start.elapsed().as_nanos() as f64 / UNITS as f64
}

fn yield_loop_tokio(rt: &tokio::runtime::Runtime) -> f64 {
    let start = Instant::now();
    rt.block_on(async {
        for _ in 0..UNITS {
            tokio::task::yield_now().await;
        }
    });
    start.elapsed().as_nanos() as f64 / UNITS as f64
}

/// A tokio channel with `UNITS` messages waiting, drained by `block_on`.
fn recv_loop(
    block_on: impl FnOnce(std::pin::Pin<Box<dyn std::future::Future<Output = u64>>>) -> u64,
) -> f64 {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..UNITS as u64 {
        tx.send(i).unwrap();
    }
    drop(tx);
    let start = Instant::now();
    let sum = block_on(Box::pin(async move {
        let mut sum = 0;
        while let Some(i) = rx.recv().await {
            sum += i;
        }
        sum
    }));
    let per = start.elapsed().as_nanos() as f64 / UNITS as f64;
    assert_eq!(
        sum,
        (UNITS as u64 - 1) * UNITS as u64 / 2,
        "every message came"
    );
    per
}

fn usage(problem: &str) -> ! {
    eprintln!("block_on_poll: {problem}\nusage: block_on_poll [--rounds N]");
    std::process::exit(2)
}

fn main() {
    let mut rounds = 7;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rounds" => rounds = benches::args::positive(&mut it, "--rounds", usage) as usize,
            other => usage(&format!("unknown argument {other}")),
        }
    }
    let pool = pool::Builder::new().worker_threads(2).build().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (mut yp, mut yt, mut rp, mut rt_) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // Alternate which runtime goes first.
        let mut pool_side = || {
            yp.push(yield_loop_pool(&pool));
            rp.push(recv_loop(|f| pool.block_on(f)));
        };
        let mut tokio_side = || {
            yt.push(yield_loop_tokio(&rt));
            rt_.push(recv_loop(|f| rt.block_on(f)));
        };
        if round % 2 == 0 {
            pool_side();
            tokio_side();
        } else {
            tokio_side();
            pool_side();
        }
    }
    println!(
        "block_on_poll: {rounds} rounds of {UNITS} units on the main thread, 2 workers each\n"
    );
    println!("| loop | pool ns per unit | tokio ns per unit | pool / tokio |");
    println!("|---|--:|--:|--:|");
    for (name, p, t) in [
        ("yield", &mut yp, &mut yt),
        ("tokio_recv", &mut rp, &mut rt_),
    ] {
        let (p, t) = (median(p), median(t));
        println!("| {name} | {p:.0} | {t:.0} | {:.2}x |", p / t);
    }
}
