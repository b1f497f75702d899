//! How soon a sleeping worker starts the half of a `join` that a busy
//! worker offers: the first share of every fork-join run on a pool whose
//! workers fell asleep between runs.
//!
//! ```text
//! cargo run --release -p benches --bin thief_wake [-- --reps N]
//! ```
//!
//! Each repetition lets a 2-worker pool settle (its workers asleep), then
//! runs `join(a, b)` on it: `a` stamps the time and spins for `SPIN`, `b`
//! stamps the time it starts. `b` is offered at once (the outermost `join`
//! of a worker's stack, for pool; every half, for rayon), so the other
//! worker is woken for it by a worker that goes on computing, and the gap
//! between the two stamps is that wake. A gap of `SPIN` or more means `b`
//! ran after `a`, on the same worker: nobody came.
//!
//! The benches build pool with `tokio-compat` (the `tests` package they
//! share turns it on), so pool's idle workers sleep inside their tokio
//! runtimes and are woken through it: an eventfd write, where a pool
//! without the feature wakes a condvar sleeper first. Beside them, the
//! OS's own: a thread woken on a condvar by a thread that then blocks (as
//! `block_on`'s caller does when it hands a pool its work), and by one
//! that then spins (as a worker that offers a half does).
//! docs/BENCHMARKS.md, "The second worker's wake", has what this reads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long `a` (and the spinning waker) compute.
const SPIN: Duration = Duration::from_millis(5);
/// How long a pool settles before each repetition: its workers sleep.
const SETTLE: Duration = Duration::from_millis(10);

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Nanoseconds since `origin`, plus one (0 is "not stamped").
fn stamp(origin: Instant) -> u64 {
    origin.elapsed().as_nanos() as u64 + 1
}

/// A half of the `join`.
type Half<'a> = &'a (dyn Fn() + Sync);

/// One `join(a, b)` by `join`: the gap from `a`'s start to `b`'s, in us.
fn gap(join: &dyn Fn(Half<'_>, Half<'_>)) -> f64 {
    let origin = Instant::now();
    let (ta, tb) = (AtomicU64::new(0), AtomicU64::new(0));
    let a = || {
        ta.store(stamp(origin), Ordering::Relaxed);
        spin(SPIN);
    };
    let b = || tb.store(stamp(origin), Ordering::Relaxed);
    join(&a, &b);
    let (ta, tb) = (ta.into_inner(), tb.into_inner());
    assert!(ta > 0 && tb > 0, "both halves ran");
    tb.saturating_sub(ta) as f64 / 1e3
}

/// A condvar wake of a sleeping thread by one that then blocks on a
/// channel (`spin_after` false) or spins for `SPIN`: how long until the
/// sleeper runs, in us.
fn condvar_gaps(reps: usize, spin_after: bool) -> Vec<f64> {
    let shared = Arc::new((Mutex::new(None::<Instant>), Condvar::new()));
    let (tx, rx) = std::sync::mpsc::channel::<f64>();
    let sleeper = Arc::clone(&shared);
    let thread = std::thread::spawn(move || {
        for _ in 0..reps {
            let (m, c) = &*sleeper;
            let mut sent = m.lock().unwrap();
            while sent.is_none() {
                sent = c.wait(sent).unwrap();
            }
            let at = sent.take().expect("stamped");
            drop(sent);
            tx.send(at.elapsed().as_secs_f64() * 1e6).unwrap();
        }
    });
    let mut gaps = Vec::with_capacity(reps);
    for _ in 0..reps {
        std::thread::sleep(SETTLE);
        let (m, c) = &*shared;
        *m.lock().unwrap() = Some(Instant::now());
        c.notify_one();
        if spin_after {
            spin(SPIN);
        }
        gaps.push(rx.recv().expect("the sleeper answers"));
    }
    thread.join().unwrap();
    gaps
}

fn summary(name: &str, mut gaps: Vec<f64>) {
    let mut at = |p: f64| benches::percentile(&mut gaps, p);
    let (p50, p90, p99, max) = (at(50.0), at(90.0), at(99.0), at(100.0));
    let late = gaps.iter().filter(|&&g| g >= 1000.0).count();
    let alone = gaps
        .iter()
        .filter(|&&g| g >= SPIN.as_secs_f64() * 1e6)
        .count();
    println!("| {name} | {p50:.0} | {p90:.0} | {p99:.0} | {max:.0} | {late} | {alone} |");
}

fn main() {
    let mut reps = 60usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next().and_then(|n| n.parse().ok())) {
            ("--reps", Some(n)) if n > 0 => reps = n,
            _ => {
                eprintln!("usage: thief_wake [--reps N] (N a positive integer)");
                std::process::exit(2);
            }
        }
    }
    let pool = pool::Builder::new()
        .worker_threads(2)
        .build()
        .expect("start pool");
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("start rayon");
    let (mut on_pool, mut on_rayon) = (Vec::new(), Vec::new());
    // Interleaved, so that both see the same machine.
    for _ in 0..reps {
        std::thread::sleep(SETTLE);
        on_pool.push(gap(&|a, b| {
            pool.join(a, b);
        }));
        std::thread::sleep(SETTLE);
        on_rayon.push(gap(&|a, b| {
            rayon.install(|| rayon::join(a, b));
        }));
    }
    let cpu = benches::cpu_model();
    println!(
        "thief_wake: {reps} reps, 2 workers, {} ms spin; CPU {cpu}\n",
        SPIN.as_millis()
    );
    println!("| who wakes the sleeper | p50 us | p90 us | p99 us | max us | >= 1 ms | >= spin (nobody came) |");
    println!("|---|--:|--:|--:|--:|--:|--:|");
    summary("pool::join: a busy worker offers b", on_pool);
    summary("rayon::join: a busy worker pushes b", on_rayon);
    summary("condvar: the waker then blocks", condvar_gaps(reps, false));
    summary("condvar: the waker then spins", condvar_gaps(reps, true));
}
