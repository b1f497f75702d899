//! A client that retries, and the bug only a partition shows, found by a
//! seed sweep and replayed: a counter service on simulated host
//! 127.0.1.10, a client on 127.0.1.2 that adds 1 five times and retries an
//! `ADD` that timed out, and a partition between them at 60 ms for 300 ms,
//! all in one seeded pool (`pool::sim`, `examples/src/retry_counter.rs`).
//!
//! ```sh
//! cargo run --release -p examples --example retry_counter              # sweep 200 seeds
//! cargo run --release -p examples --example retry_counter -- --fixed    # the deduplicating server
//! POOL_SEED=3 cargo run --release -p examples --example retry_counter   # replay one seed
//! ```

use examples::retry_counter::{run, Server, ADDS};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = if args.iter().any(|a| a == "--fixed") {
        Server::Deduplicating
    } else {
        Server::Naive
    };
    if let Ok(seed) = std::env::var("POOL_SEED") {
        // POOL_SEED replaces every seed: one run, with its log.
        let outcome = run(0, server);
        println!(
            "seed {seed}: total {} after {ADDS} additions ({} requests sent)",
            outcome.total, outcome.sent
        );
        for line in &outcome.log {
            println!("  {line}");
        }
        println!("  schedule hash {:#018x}", outcome.schedule_hash);
        if outcome.total != ADDS {
            println!("a retried ADD counted twice: the client could not tell a lost request from a lost answer");
            std::process::exit(1);
        }
        return;
    }
    let seeds: u64 = args
        .iter()
        .position(|a| a == "--seeds")
        .and_then(|i| args.get(i + 1))
        .map_or(200, |n| n.parse().expect("--seeds takes a number"));
    let mut failing = Vec::new();
    for seed in 0..seeds {
        let outcome = run(seed, server);
        if outcome.total != ADDS {
            failing.push((seed, outcome.total));
        }
    }
    println!(
        "{server:?} server: {} of {seeds} seeds counted an addition twice",
        failing.len()
    );
    if let Some((seed, total)) = failing.first() {
        println!("first: seed {seed}, total {total} for {ADDS} additions; replay it with");
        println!("  POOL_SEED={seed} cargo run --release -p examples --example retry_counter");
        std::process::exit(1);
    }
}
