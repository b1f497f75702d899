//! The retry bug only a partition shows (`examples/src/retry_counter.rs`):
//! a seed sweep finds it, the seed that found it replays it (in this
//! process and in a fresh one, through `POOL_SEED`), and the deduplicating
//! server never loses the count.

use examples::retry_counter::{run, Server, ADDS};
use std::process::Command;

#[test]
fn a_sweep_finds_the_double_count_and_its_seed_replays_it() {
    tests::watchdog("retry counter sweep", 120, || {
        let found = (0..200)
            .map(|seed| (seed, run(seed, Server::Naive)))
            .find(|(_, outcome)| outcome.total != ADDS);
        let (seed, outcome) = found.expect("a partition bug found within 200 seeds");
        assert_eq!(
            outcome.total,
            ADDS + 1,
            "one retried addition counted twice"
        );
        assert!(outcome.sent > ADDS, "the client retried: {outcome:?}");
        assert_eq!(
            run(seed, Server::Naive),
            outcome,
            "seed {seed} replays in this process"
        );
        // And in a fresh process, from its seed alone.
        let out = Command::new(tests::example_binary("retry_counter"))
            .env("POOL_SEED", seed.to_string())
            .output()
            .expect("run the example");
        assert!(
            !out.status.success(),
            "the replay fails as the sweep's run did"
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("total {} after {ADDS} additions", outcome.total)),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("schedule hash {:#018x}", outcome.schedule_hash)),
            "the same schedule: {stdout}"
        );
    });
}

#[test]
fn the_deduplicating_server_counts_each_addition_once_under_the_same_partitions() {
    tests::watchdog("retry counter fixed", 120, || {
        for seed in 0..50 {
            let outcome = run(seed, Server::Deduplicating);
            assert_eq!(outcome.total, ADDS, "seed {seed}: {outcome:?}");
        }
    });
}
