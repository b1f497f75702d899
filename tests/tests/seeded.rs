//! Seeded pools (API "Runs you can replay"): logical workers on the
//! calling thread, interleaved by a seeded generator, on a virtual clock.
//! The same seed replays the same schedule (in this process and in fresh
//! ones), different seeds explore different interleavings, a planted lost
//! update is found and replays, and what cannot replay is refused.
//!
//! Tests that compare seeds with each other skip themselves when
//! `POOL_SEED` is set: it replaces every seed, on purpose.

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use pool::Builder;
use std::collections::HashSet;
use std::io;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tests::watchdog;

fn seeded(seed: u64, workers: usize) -> pool::Pool {
    Builder::new()
        .seed(seed)
        .worker_threads(workers)
        .build()
        .unwrap()
}

/// `POOL_SEED` set: this test compares seeds, and every seed is the same.
fn seed_overridden(test: &str) -> bool {
    let set = std::env::var_os("POOL_SEED").is_some();
    if set {
        eprintln!("{test}: skipped, POOL_SEED replaces every seed");
    }
    set
}

/// Eight tasks in a ring, each sending to the next and receiving from the
/// one before for three rounds, with a yield between: what each did, in
/// the order it happened, and the schedule's hash.
fn ring_of_eight(seed: u64) -> (Vec<(u8, u8, u8)>, u64) {
    let pool = seeded(seed, 4);
    let log = Arc::new(Mutex::new(Vec::new()));
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..8).map(|_| mpsc::unbounded::<u8>()).unzip();
    let handles: Vec<_> = rxs
        .into_iter()
        .enumerate()
        .map(|(i, mut rx)| {
            let mut next = txs[(i + 1) % 8].clone();
            let log = Arc::clone(&log);
            pool.spawn(async move {
                for round in 0..3u8 {
                    next.send(i as u8).await.unwrap();
                    pool::yield_now().await;
                    let from = rx.next().await.unwrap();
                    log.lock().unwrap().push((i as u8, round, from));
                }
            })
        })
        .collect();
    drop(txs);
    pool.block_on(async {
        for h in handles {
            h.await.unwrap();
        }
    });
    let log = log.lock().unwrap().clone();
    (log, pool.schedule_hash())
}

/// Two tasks that each read a counter, yield, and write it back plus one:
/// the final count (1 if an update was lost) and the schedule's hash.
fn lost_update(seed: u64) -> (u64, u64) {
    let pool = seeded(seed, 2);
    let counter = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let counter = Arc::clone(&counter);
            pool.spawn(async move {
                let read = counter.load(Ordering::SeqCst);
                pool::yield_now().await;
                counter.store(read + 1, Ordering::SeqCst);
            })
        })
        .collect();
    pool.block_on(async {
        for h in handles {
            h.await.unwrap();
        }
    });
    (counter.load(Ordering::SeqCst), pool.schedule_hash())
}

#[test]
fn the_same_seed_runs_the_same_schedule_a_hundred_times() {
    watchdog("seeded replay", 60, || {
        let first = ring_of_eight(42);
        assert_ne!(first.1, 0, "a seeded pool records its schedule");
        for run in 1..100 {
            assert_eq!(ring_of_eight(42), first, "run {run} of seed 42 differs");
        }
    });
}

#[test]
fn a_hundred_seeds_give_at_least_ninety_interleavings() {
    if seed_overridden("interleavings") {
        return;
    }
    watchdog("seeded interleavings", 60, || {
        let runs: Vec<_> = (0..100).map(ring_of_eight).collect();
        let hashes: HashSet<u64> = runs.iter().map(|r| r.1).collect();
        let logs: HashSet<&Vec<(u8, u8, u8)>> = runs.iter().map(|r| &r.0).collect();
        eprintln!(
            "100 seeds: {} schedules, {} distinct logs",
            hashes.len(),
            logs.len()
        );
        assert!(
            hashes.len() >= 90,
            "only {} distinct schedules in 100 seeds",
            hashes.len()
        );
        assert!(
            logs.len() >= 50,
            "only {} distinct results in 100 seeds",
            logs.len()
        );
    });
}

#[test]
fn a_planted_lost_update_is_found_within_200_seeds_and_each_finding_replays() {
    if seed_overridden("lost update") {
        return;
    }
    watchdog("seeded lost update", 60, || {
        let found: Vec<(u64, u64)> = (0..200)
            .filter_map(|seed| {
                let (count, hash) = lost_update(seed);
                (count == 1).then_some((seed, hash))
            })
            .collect();
        let first = found.first().map(|f| f.0);
        eprintln!(
            "lost update: {} of 200 seeds lose it, the first is seed {first:?}",
            found.len()
        );
        assert!(!found.is_empty(), "no seed of 200 lost the update");
        assert!(
            found.len() < 200,
            "every seed lost the update: the schedule does not vary"
        );
        for &(seed, hash) in &found {
            assert_eq!(lost_update(seed), (1, hash), "seed {seed} does not replay");
        }
    });
}

/// The child of the fresh-process tests: a seeded workload whose result
/// and schedule it prints. Does nothing unless its parent asked.
#[test]
fn child_prints_a_seeded_run() {
    let Ok(seed) = std::env::var("SEEDED_CHILD_SEED") else {
        return;
    };
    let (log, hash) = ring_of_eight(seed.parse().unwrap());
    let pool = seeded(seed.parse().unwrap(), 4);
    println!("SEEDED seed={:?} hash={hash} log={log:?}", pool.seed());
}

/// The child of the panic test: a seeded run whose task fails.
#[test]
fn child_panics_in_a_seeded_run() {
    if std::env::var_os("SEEDED_CHILD_PANIC").is_none() {
        return;
    }
    seeded(42, 2).block_on(async {
        pool::spawn(async { panic!("the planted failure") })
            .await
            .unwrap();
    });
}

/// Run one of this binary's tests in a fresh process.
fn child(test: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    cmd.env_remove("POOL_SEED");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run the test binary again")
}

fn seeded_line(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    // libtest prints the test's name on the same line first.
    stdout
        .lines()
        .find_map(|l| l.find("SEEDED ").map(|at| l[at..].to_string()))
        .unwrap_or_else(|| panic!("the child printed no run: {stdout}"))
}

#[test]
fn fresh_processes_replay_the_same_seed() {
    watchdog("seeded fresh processes", 120, || {
        let runs: HashSet<String> = (0..100)
            .map(|_| {
                seeded_line(&child(
                    "child_prints_a_seeded_run",
                    &[("SEEDED_CHILD_SEED", "7")],
                ))
            })
            .collect();
        assert_eq!(runs.len(), 1, "100 processes of seed 7 ran {runs:#?}");
        let line = runs.into_iter().next().unwrap();
        assert!(line.contains("seed=Some(7)"), "{line}");
        // The same run as in this process.
        let (log, hash) = ring_of_eight(7);
        if std::env::var_os("POOL_SEED").is_none() {
            assert_eq!(line, format!("SEEDED seed=Some(7) hash={hash} log={log:?}"));
        }
    });
}

#[test]
fn pool_seed_replaces_the_seed_of_every_seeded_pool() {
    watchdog("POOL_SEED", 60, || {
        let line = seeded_line(&child(
            "child_prints_a_seeded_run",
            &[("SEEDED_CHILD_SEED", "7"), ("POOL_SEED", "123")],
        ));
        let replayed = seeded_line(&child(
            "child_prints_a_seeded_run",
            &[("SEEDED_CHILD_SEED", "123")],
        ));
        assert!(line.contains("seed=Some(123)"), "{line}");
        assert_eq!(line, replayed, "POOL_SEED=123 is seed 123");
        let out = child(
            "child_prints_a_seeded_run",
            &[("SEEDED_CHILD_SEED", "7"), ("POOL_SEED", "twelve")],
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stdout.contains("POOL_SEED must be a seed")
                || stderr.contains("POOL_SEED must be a seed"),
            "{stdout}\n{stderr}"
        );
    });
}

#[test]
fn a_failing_seeded_run_says_its_seed_and_how_to_rerun_it() {
    watchdog("seeded panic report", 60, || {
        let out = child(
            "child_panics_in_a_seeded_run",
            &[("SEEDED_CHILD_PANIC", "1")],
        );
        assert!(!out.status.success(), "the child's run failed");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("the planted failure"), "{text}");
        assert!(text.contains("seed 42"), "{text}");
        assert!(text.contains("POOL_SEED=42"), "{text}");
    });
}

#[test]
fn virtual_time_takes_no_wall_time_and_ties_are_ordered_by_the_seed() {
    watchdog("seeded timers", 60, || {
        let run = |seed: u64| {
            let pool = seeded(seed, 3);
            let order = Arc::new(Mutex::new(Vec::new()));
            let handles: Vec<_> = (0..6u8)
                .map(|i| {
                    let order = Arc::clone(&order);
                    pool.spawn(async move {
                        // Three deadlines, two timers each.
                        let secs = 3600 * (1 + u64::from(i % 3));
                        pool::time::sleep(Duration::from_secs(secs)).await;
                        order.lock().unwrap().push(i);
                    })
                })
                .collect();
            let elapsed = pool.block_on(async {
                let start = pool::time::Instant::now();
                for h in handles {
                    h.await.unwrap();
                }
                start.elapsed()
            });
            let order = order.lock().unwrap().clone();
            (order, elapsed)
        };
        let wall = std::time::Instant::now();
        let (order, elapsed) = run(1);
        assert_eq!(elapsed, Duration::from_secs(3 * 3600));
        assert!(
            wall.elapsed() < Duration::from_secs(5),
            "three hours took {:?}",
            wall.elapsed()
        );
        for pair in order.chunks(2) {
            let deadlines: Vec<u8> = pair.iter().map(|i| i % 3).collect();
            assert_eq!(
                deadlines[0], deadlines[1],
                "fired out of deadline order: {order:?}"
            );
        }
        assert_eq!(run(1).0, order, "seed 1 replays its timers");
        if !seed_overridden("timer ties") {
            let orders: HashSet<Vec<u8>> = (0..20).map(|s| run(s).0).collect();
            assert!(
                orders.len() > 1,
                "20 seeds ordered the ties one way: {orders:?}"
            );
        }
    });
}

#[test]
fn a_seeded_pool_refuses_real_io() {
    watchdog("seeded refuses I/O", 30, || {
        let pool = seeded(1, 2);
        let errors = pool.block_on(async {
            vec![
                pool::net::TcpListener::bind("127.0.0.1:0").await.err(),
                pool::net::UdpSocket::bind("127.0.0.1:0").await.err(),
                pool::fs::read("Cargo.toml").await.err(),
                pool::process::Command::new("true").spawn().err(),
                pool::net::lookup_host("localhost:80").await.err(),
            ]
        });
        let says = format!(
            "seeded pool (seed {}) has no real I/O",
            pool.seed().unwrap()
        );
        for e in errors {
            let e = e.expect("refused");
            assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
            assert!(e.to_string().contains(&says), "{e}");
        }
    });
}

#[test]
fn a_deadlock_panics_instead_of_hanging() {
    watchdog("seeded deadlock", 30, || {
        let pool = seeded(9, 2);
        let (_tx, rx) = futures::channel::oneshot::channel::<()>();
        let waiting = pool.spawn(async move {
            let _ = rx.await;
        });
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.block_on(waiting).unwrap();
        }))
        .expect_err("nothing can wake it");
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        let says = format!("deadlock in a seeded pool (seed {})", pool.seed().unwrap());
        assert!(message.contains(&says), "{message}");
    });
}

#[test]
fn blocking_closures_joins_scopes_local_tasks_and_nested_block_ons_run() {
    watchdog("seeded features", 30, || {
        let pool = seeded(5, 3);
        let result = pool.block_on(async {
            let blocking = pool::spawn_blocking(|| 40).await.unwrap();
            let (a, b) = pool::join(|| 1, || 1);
            let inner = pool::spawn(async {
                // A block_on inside a task: the run goes on inside it.
                pool::block_on(pool::spawn(async {
                    pool::yield_now().await;
                    7
                }))
                .unwrap()
            })
            .await
            .unwrap();
            let local = pool::spawn(async { pool::spawn_local(async { 3 }).await.unwrap() })
                .await
                .unwrap();
            let mut sum = 0;
            pool::scope(|s| {
                let sum = &mut sum;
                s.spawn(move |_| *sum += 2);
            });
            blocking + a + b + inner + local + sum
        });
        assert_eq!(result, 40 + 2 + 7 + 3 + 2);
        // Pool::join and Pool::scope from outside run on the logical workers.
        assert_eq!(pool.join(|| 1, || 2), (1, 2));
        assert_eq!(
            pool.scope(|s| {
                s.spawn(|_| {});
                5
            }),
            5
        );
    });
}

#[test]
fn a_seeded_pool_tells_its_seed_and_a_real_one_records_no_schedule() {
    let real = Builder::new().worker_threads(1).build().unwrap();
    assert_eq!(real.seed(), None);
    assert_eq!(real.schedule_hash(), 0);
    if seed_overridden("seed()") {
        return;
    }
    let pool = seeded(77, 2);
    assert_eq!(pool.seed(), Some(77));
    let before = pool.schedule_hash();
    pool.block_on(pool.spawn(async {})).unwrap();
    assert_ne!(
        pool.schedule_hash(),
        before,
        "a step that ran a task is recorded"
    );
}

#[test]
fn a_seeded_pool_out_of_range_is_invalid_input() {
    let e = Builder::new()
        .seed(1)
        .worker_threads(64)
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(
        e.to_string().contains("worker_threads of a seeded pool"),
        "{e}"
    );
}

#[pool::test(seed = 42, worker_threads = 3)]
async fn the_test_attribute_takes_a_seed() {
    let seed = std::env::var("POOL_SEED").map_or(42, |s| s.parse().unwrap());
    assert_eq!(pool::Handle::current().seed(), Some(seed));
    assert_eq!(pool::Handle::current().metrics().workers, 3);
    let start = pool::time::Instant::now();
    pool::time::sleep(Duration::from_secs(86_400)).await;
    assert_eq!(start.elapsed(), Duration::from_secs(86_400));
}

/// A sweep's body: counts its runs, and fails on the seed
/// `SWEEP_FAIL_AT` names (if any).
static SWEEP_RUNS: AtomicU64 = AtomicU64::new(0);

#[pool::test(seed = 1000, seeds = 25, worker_threads = 2)]
async fn child_sweeps_seeds() {
    SWEEP_RUNS.fetch_add(1, Ordering::SeqCst);
    let seed = pool::Handle::current().seed().unwrap();
    if std::env::var("SWEEP_FAIL_AT").is_ok_and(|s| s == seed.to_string()) {
        panic!("planted failure at seed {seed}");
    }
    if std::env::var_os("SWEEP_PRINT").is_some() {
        println!(
            "SWEEP seed={seed} runs={}",
            SWEEP_RUNS.load(Ordering::SeqCst)
        );
    }
}

#[test]
fn a_seeds_sweep_runs_each_seed_and_stops_at_the_first_failure() {
    watchdog("seed sweep", 60, || {
        let out = child("child_sweeps_seeds", &[("SWEEP_PRINT", "1")]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        let seeds: Vec<&str> = stdout.matches("SWEEP seed=").collect();
        assert_eq!(seeds.len(), 25, "{stdout}");
        assert!(stdout.contains("SWEEP seed=1024 runs=25"), "{stdout}");
        // POOL_SEEDS replaces the count.
        let out = child(
            "child_sweeps_seeds",
            &[("SWEEP_PRINT", "1"), ("POOL_SEEDS", "3")],
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout.matches("SWEEP seed=").count(), 3, "{stdout}");
        // The first failure stops it and says how to replay it.
        let out = child(
            "child_sweeps_seeds",
            &[("SWEEP_PRINT", "1"), ("SWEEP_FAIL_AT", "1007")],
        );
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(text.contains("planted failure at seed 1007"), "{text}");
        assert!(text.contains("POOL_SEED=1007"), "{text}");
        assert!(!text.contains("SWEEP seed=1008"), "{text}");
        // POOL_SEED replays that one seed.
        let out = child(
            "child_sweeps_seeds",
            &[
                ("SWEEP_PRINT", "1"),
                ("POOL_SEED", "1007"),
                ("SWEEP_FAIL_AT", "1007"),
            ],
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success());
        assert_eq!(stdout.matches("SWEEP seed=").count(), 0, "{stdout}");
    });
}

/// T1 reads a counter, yields once and writes it back plus one; T2 waits
/// until T1 has read, yields `k` times, then adds one. The update is lost
/// only if T1 stays off the CPU for all of T2's `k` steps: a starvation
/// that uniform choice almost never runs for large `k` (about 2^-k).
fn starved_update(seed: u64, strategy: pool::SeedStrategy, k: usize) -> (bool, u64) {
    let pool = Builder::new()
        .seed(seed)
        .seed_strategy(strategy)
        .worker_threads(2)
        .build()
        .unwrap();
    let counter = Arc::new(AtomicU64::new(0));
    let read = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let t1 = {
        let (counter, read) = (Arc::clone(&counter), Arc::clone(&read));
        pool.spawn(async move {
            let v = counter.load(Ordering::SeqCst);
            read.store(true, Ordering::SeqCst);
            pool::yield_now().await;
            counter.store(v + 1, Ordering::SeqCst);
        })
    };
    let t2 = {
        let (counter, read) = (Arc::clone(&counter), Arc::clone(&read));
        pool.spawn(async move {
            // Spins on yield_now: under PCT this relies on its fallback to
            // uniform choice after `steps`.
            while !read.load(Ordering::SeqCst) {
                pool::yield_now().await;
            }
            for _ in 0..k {
                pool::yield_now().await;
            }
            counter.fetch_add(1, Ordering::SeqCst);
        })
    };
    pool.block_on(async {
        t1.await.unwrap();
        t2.await.unwrap();
    });
    (counter.load(Ordering::SeqCst) == 1, pool.schedule_hash())
}

#[test]
fn pct_finds_a_starvation_that_uniform_choice_does_not_and_replays_it() {
    if seed_overridden("pct") {
        return;
    }
    watchdog("seeded pct", 120, || {
        let pct = pool::SeedStrategy::Pct {
            depth: 3,
            steps: 100,
        };
        let found: Vec<(u64, u64)> = (0..500)
            .filter_map(|seed| {
                let (lost, hash) = starved_update(seed, pct, 12);
                lost.then_some((seed, hash))
            })
            .collect();
        let uniform = (0..500)
            .filter(|&seed| starved_update(seed, pool::SeedStrategy::Random, 12).0)
            .count();
        eprintln!(
            "starved update (k = 12), 500 seeds: PCT depth 3 finds it in {}, uniform in {uniform}",
            found.len()
        );
        assert!(
            found.len() >= 3,
            "PCT found the starved update in {} of 500 seeds",
            found.len()
        );
        for &(seed, hash) in &found {
            assert_eq!(
                starved_update(seed, pct, 12),
                (true, hash),
                "seed {seed} replays"
            );
        }
    });
}

#[test]
fn a_pct_strategy_out_of_range_is_invalid_input() {
    for (depth, steps) in [(0, 100), (2, 0)] {
        let e = Builder::new()
            .seed(1)
            .seed_strategy(pool::SeedStrategy::Pct { depth, steps })
            .build()
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(
            e.to_string()
                .contains("SeedStrategy::Pct needs depth and steps"),
            "{e}"
        );
    }
}
