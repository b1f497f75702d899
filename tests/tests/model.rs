//! A randomized model test of the task lifecycle: random programs of spawns
//! (ready, pending forever, yielding, woken from another thread after a
//! delay, panicking in poll, panicking in `Drop`, spawning children),
//! aborts, kept or dropped handles, `block_on` from outside and from inside
//! tasks, `spawn_blocking`, `spawn_local` tasks (`!Send`, of the same
//! kinds), `JoinSet`s (ready, pending and panicking members, joined, then
//! dropped with the pending ones in them), sleeps on the pool's clock, and
//! a pool drop or `shutdown_timeout` at a random point; half the pools
//! start with their clock paused (`Builder::start_paused`), where the
//! sleeps are minutes long and must neither end early nor hang the
//! program. After each program:
//!
//! * every future (and blocking closure) was dropped exactly once;
//! * every kept handle resolved to an outcome its task allows (`Ok` with
//!   the right value, `is_panic`, `is_cancelled`);
//! * `Metrics::spawned` equals the spawns made;
//! * the allocator's live bytes stay within `ALLOC_SLACK` of where they were
//!   after a warm-up, however many programs ran, once crossbeam-epoch's
//!   deferred frees are collected. (Not exactly equal: lazily grown tables
//!   of the dependencies come and go with timing. A leak of one task per
//!   program, about 100 bytes, exceeds the slack within the default 300
//!   programs.)
//!
//! A seeded generator of our own rather than proptest: the programs need a
//! live pool, threads and timing, which proptest's state machines do not
//! model any better, and a seed replays a program exactly. A failing case
//! prints its seed and a shrunk program (ops removed one by one while it
//! still fails). `POOL_MODEL_CASES=N` sets the number of programs (default
//! 300); `POOL_MODEL_SEED=S` runs the one program of seed S.

use pool::Builder;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tests::alloc;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

const DEFAULT_CASES: u64 = 300;
const MAX_OPS: u64 = 24;
/// How far live bytes may stray from the warm-up's (see the module docs).
const ALLOC_SLACK: isize = 16 * 1024;

/// How a spawned task behaves.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Returns its value at once.
    Ready,
    /// Never completes.
    Pending,
    /// Yields this many times, then returns.
    Yield(u8),
    /// Waits for a message another thread sends after this many us.
    WokenAfter(u16),
    /// Panics in its first poll.
    PanicInPoll,
    /// Never completes, and panics when dropped.
    PanicInDrop,
    /// Spawns this many ready children and returns the sum of their values.
    Children(u8),
    /// `block_on`s a ready child inside the task (on a worker).
    BlockOnInside,
    /// Sleeps on the pool's clock: this many minutes on a paused pool,
    /// this many times 20 us on a running one; a sleep that ends early
    /// returns a wrong value.
    Sleep(u8),
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Spawn {
        kind: Kind,
        keep: bool,
    },
    SpawnBlocking {
        panics: bool,
        keep: bool,
    },
    /// A `!Send` task of `kind` (`Ready`, `Pending`, `Yield`, `WokenAfter`),
    /// spawned with `spawn_local` by a task on a worker.
    SpawnLocal {
        kind: Kind,
        keep: bool,
    },
    /// A task that fills a `JoinSet` with these members (0: ready, 1:
    /// pending forever, 2: panics in its poll), joins every member that
    /// ends, then drops the set with the pending ones in it.
    JoinSet {
        members: [u8; 4],
        keep: bool,
    },
    /// Abort the n-th kept handle (modulo their number).
    Abort(usize),
    /// Await the n-th kept handle from this (outside) thread, if its task
    /// can finish.
    BlockOn(usize),
}

#[derive(Clone, Copy, Debug)]
enum End {
    Drop,
    ShutdownTimeout(u16),
}

#[derive(Clone, Debug)]
struct Program {
    workers: usize,
    ops: Vec<Op>,
    end: End,
    /// The pool starts with its clock paused (`Builder::start_paused`).
    paused: bool,
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

fn generate(seed: u64) -> Program {
    let mut r = Rng(seed);
    let ops = (0..1 + r.below(MAX_OPS))
        .map(|_| match r.below(12) {
            10 => Op::SpawnLocal {
                kind: match r.below(4) {
                    0 => Kind::Ready,
                    1 => Kind::Pending,
                    2 => Kind::Yield(1 + r.below(5) as u8),
                    _ => Kind::WokenAfter(r.below(500) as u16),
                },
                keep: r.below(3) != 0,
            },
            11 => Op::JoinSet {
                members: [0; 4].map(|_| r.below(3) as u8),
                keep: r.below(3) != 0,
            },
            0..=5 => Op::Spawn {
                kind: match r.below(9) {
                    0 => Kind::Ready,
                    1 => Kind::Pending,
                    2 => Kind::Yield(1 + r.below(5) as u8),
                    3 => Kind::WokenAfter(r.below(500) as u16),
                    4 => Kind::PanicInPoll,
                    5 => Kind::PanicInDrop,
                    6 => Kind::Children(1 + r.below(4) as u8),
                    7 => Kind::Sleep(r.below(50) as u8),
                    _ => Kind::BlockOnInside,
                },
                keep: r.below(3) != 0,
            },
            6 => Op::SpawnBlocking {
                panics: r.below(3) == 0,
                keep: r.below(2) == 0,
            },
            7 | 8 => Op::Abort(r.below(8) as usize),
            _ => Op::BlockOn(r.below(8) as usize),
        })
        .collect();
    Program {
        workers: 1 + r.below(3) as usize,
        ops,
        end: if r.below(2) == 0 {
            End::Drop
        } else {
            End::ShutdownTimeout(r.below(3) as u16)
        },
        paused: r.below(2) == 0,
    }
}

/// Counts drops of everything a program creates, and its spawns.
#[derive(Default)]
struct Counts {
    created: AtomicUsize,
    dropped: AtomicUsize,
    spawns: AtomicUsize,
}

/// Owned by every future and closure a program creates.
struct Tracked {
    counts: Arc<Counts>,
    panic_in_drop: bool,
}

impl Tracked {
    fn new(counts: &Arc<Counts>, panic_in_drop: bool) -> Tracked {
        counts.created.fetch_add(1, Ordering::SeqCst);
        Tracked {
            counts: counts.clone(),
            panic_in_drop,
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.counts.dropped.fetch_add(1, Ordering::SeqCst);
        if self.panic_in_drop {
            panic!("model: a destructor panics (on purpose)");
        }
    }
}

/// Yields `n` times (a self-wake while running).
struct YieldTimes(u8);

impl Future for YieldTimes {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// What a kept handle may resolve to.
#[derive(Clone, Copy, Debug)]
enum Allowed {
    /// `Ok(value)`, or cancelled (aborted or shut down before it finished).
    Value(u64),
    /// A panic, or cancelled before its first poll.
    Panic,
    /// Cancelled.
    Cancelled,
    /// A panic (its drop panics, whenever it is dropped).
    AlwaysPanic,
}

type Outcome = Result<u64, pool::JoinError>;

fn check(allowed: Allowed, outcome: &Outcome) -> Result<(), String> {
    let ok = match (allowed, outcome) {
        (Allowed::Value(v), Ok(got)) => *got == v,
        (Allowed::Value(_), Err(e)) => e.is_cancelled(),
        (Allowed::Panic, Err(e)) => e.is_panic() || e.is_cancelled(),
        (Allowed::Cancelled, Err(e)) => e.is_cancelled(),
        (Allowed::AlwaysPanic, Err(e)) => e.is_panic(),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("a handle allowed {allowed:?} gave {outcome:?}"))
    }
}

/// Run `program`; an error describes what did not hold.
fn run(program: &Program) -> Result<(), String> {
    let counts = Arc::new(Counts::default());
    let p = Builder::new()
        .worker_threads(program.workers)
        .max_blocking_threads(2)
        .start_paused(program.paused)
        .build()
        .unwrap();
    let handle = p.handle();
    let mut kept: Vec<(pool::JoinHandle<u64>, Allowed, bool)> = Vec::new();
    let mut wakers = Vec::new();
    let mut results = Vec::new();
    for (i, op) in program.ops.iter().enumerate() {
        let value = i as u64 * 7 + 1;
        match *op {
            Op::Spawn { kind, keep } => {
                counts.spawns.fetch_add(1, Ordering::SeqCst);
                let t = Tracked::new(&counts, matches!(kind, Kind::PanicInDrop));
                let c = counts.clone();
                let (allowed, h) = match kind {
                    Kind::Ready => (
                        Allowed::Value(value),
                        p.spawn(async move {
                            drop(t);
                            value
                        }),
                    ),
                    Kind::Pending => (
                        Allowed::Cancelled,
                        p.spawn(async move {
                            let _t = t;
                            std::future::pending::<u64>().await
                        }),
                    ),
                    Kind::PanicInDrop => (
                        Allowed::AlwaysPanic,
                        p.spawn(async move {
                            let _t = t;
                            std::future::pending::<u64>().await
                        }),
                    ),
                    Kind::Yield(n) => (
                        Allowed::Value(value),
                        p.spawn(async move {
                            let _t = t;
                            YieldTimes(n).await;
                            value
                        }),
                    ),
                    Kind::WokenAfter(us) => {
                        let (tx, rx) = futures::channel::oneshot::channel::<u64>();
                        wakers.push(std::thread::spawn(move || {
                            std::thread::sleep(Duration::from_micros(us.into()));
                            let _ = tx.send(value);
                        }));
                        (
                            Allowed::Value(value),
                            p.spawn(async move {
                                let _t = t;
                                rx.await.unwrap_or(value)
                            }),
                        )
                    }
                    Kind::Sleep(n) => {
                        let d = if program.paused {
                            Duration::from_secs(60 * u64::from(n))
                        } else {
                            Duration::from_micros(20 * u64::from(n))
                        };
                        (
                            Allowed::Value(value),
                            p.spawn(async move {
                                let _t = t;
                                let before = pool::time::Instant::now();
                                pool::time::sleep(d).await;
                                // Early: a value the check refuses.
                                value + u64::from(before.elapsed() < d)
                            }),
                        )
                    }
                    Kind::PanicInPoll => (
                        Allowed::Panic,
                        p.spawn(async move {
                            let _t = t;
                            if value > 0 {
                                panic!("model: a poll panics (on purpose)");
                            }
                            value
                        }),
                    ),
                    Kind::Children(n) => (
                        Allowed::Value(value * u64::from(n)),
                        p.spawn(async move {
                            let _t = t;
                            let mut sum = 0;
                            let children: Vec<_> = (0..n)
                                .map(|_| {
                                    c.spawns.fetch_add(1, Ordering::SeqCst);
                                    let t = Tracked::new(&c, false);
                                    pool::spawn(async move {
                                        drop(t);
                                        value
                                    })
                                })
                                .collect();
                            for child in children {
                                sum += child.await.unwrap_or(value);
                            }
                            sum
                        }),
                    ),
                    Kind::BlockOnInside => (
                        Allowed::Value(value),
                        p.spawn(async move {
                            let _t = t;
                            c.spawns.fetch_add(1, Ordering::SeqCst);
                            let t2 = Tracked::new(&c, false);
                            let child = pool::spawn(async move {
                                drop(t2);
                                value
                            });
                            pool::block_on(child).unwrap_or(value)
                        }),
                    ),
                };
                if keep {
                    kept.push((h, allowed, false));
                }
            }
            Op::SpawnLocal { kind, keep } => {
                // The spawner and the local task.
                counts.spawns.fetch_add(2, Ordering::SeqCst);
                let t = Tracked::new(&counts, false);
                let woken_by = match kind {
                    Kind::WokenAfter(us) => {
                        let (tx, rx) = futures::channel::oneshot::channel::<u64>();
                        wakers.push(std::thread::spawn(move || {
                            std::thread::sleep(Duration::from_micros(us.into()));
                            let _ = tx.send(value);
                        }));
                        Some(rx)
                    }
                    _ => None,
                };
                // The spawner returns the local task's handle (not awaited
                // in it: the outside thread keeps it).
                #[allow(clippy::async_yields_async)]
                let spawner = p.spawn(async move {
                    pool::spawn_local(async move {
                        // Not `Send`: it may only ever run on this worker.
                        let t = std::rc::Rc::new(t);
                        let home = std::thread::current().id();
                        let v = match (kind, woken_by) {
                            (Kind::Pending, _) => std::future::pending::<u64>().await,
                            (Kind::Yield(n), _) => {
                                YieldTimes(n).await;
                                value
                            }
                            (_, Some(rx)) => rx.await.unwrap_or(value),
                            _ => value,
                        };
                        assert_eq!(std::thread::current().id(), home, "a local task moved");
                        drop(t);
                        v
                    })
                });
                let allowed = match kind {
                    Kind::Pending => Allowed::Cancelled,
                    _ => Allowed::Value(value),
                };
                match pool::block_on(spawner) {
                    Ok(h) if keep => kept.push((h, allowed, false)),
                    Ok(_) => {}
                    // Cancelled before it ran: so was the local spawn.
                    Err(e) => return Err(format!("the spawner of a local task: {e:?}")),
                }
            }
            Op::JoinSet { members, keep } => {
                counts.spawns.fetch_add(1, Ordering::SeqCst);
                let t = Tracked::new(&counts, false);
                let c = counts.clone();
                let expected: u64 = members.iter().filter(|m| **m == 0).map(|_| value).sum();
                let h = p.spawn(async move {
                    let _t = t;
                    let mut set = pool::JoinSet::new();
                    for &m in &members {
                        let t = Tracked::new(&c, false);
                        c.spawns.fetch_add(1, Ordering::SeqCst);
                        set.spawn(async move {
                            let _t = t;
                            match m {
                                0 => value,
                                1 => std::future::pending::<u64>().await,
                                _ => panic!("model: a JoinSet member panics (on purpose)"),
                            }
                        });
                    }
                    let ending = members.iter().filter(|m| **m != 1).count();
                    let mut sum = 0;
                    for _ in 0..ending {
                        match set.join_next().await {
                            Some(Ok(v)) => sum += v,
                            Some(Err(e)) if e.is_panic() => {}
                            // The pool is shutting down: so is this task,
                            // whose handle then gives `cancelled`.
                            Some(Err(_)) => std::future::pending::<()>().await,
                            None => unreachable!("the set ran dry early"),
                        }
                    }
                    assert_eq!(set.len(), members.len() - ending);
                    drop(set); // aborts the pending members
                    sum
                });
                if keep {
                    kept.push((h, Allowed::Value(expected), false));
                }
            }
            Op::SpawnBlocking { panics, keep } => {
                let t = Tracked::new(&counts, false);
                let h = p.spawn_blocking(move || {
                    drop(t);
                    if panics {
                        panic!("model: a blocking closure panics (on purpose)");
                    }
                    value
                });
                if keep {
                    let allowed = if panics {
                        Allowed::Panic
                    } else {
                        Allowed::Value(value)
                    };
                    kept.push((h, allowed, false));
                }
            }
            Op::Abort(n) => {
                if !kept.is_empty() {
                    let len = kept.len();
                    let (h, _, aborted) = &mut kept[n % len];
                    h.abort();
                    *aborted = true;
                }
            }
            Op::BlockOn(n) => {
                if !kept.is_empty() {
                    let len = kept.len();
                    let finishes = matches!(kept[n % len].1, Allowed::Value(_) | Allowed::Panic)
                        || kept[n % len].2;
                    if finishes {
                        let (h, allowed, _) = kept.remove(n % len);
                        let outcome = pool::block_on(h);
                        results.push((allowed, outcome));
                    }
                }
            }
        }
    }
    match program.end {
        End::Drop => drop(p),
        End::ShutdownTimeout(ms) => p.shutdown_timeout(Duration::from_millis(ms.into())),
    }
    for (h, allowed, _) in kept {
        results.push((allowed, pool::block_on(h)));
    }
    for w in wakers {
        w.join().unwrap();
    }
    // Blocking threads that `shutdown_timeout` did not wait for exit soon
    // after; their memory is the process's until they do.
    tests::wait_for("blocking threads gone", Duration::from_secs(10), || {
        handle.metrics().blocking_threads == 0
    });
    for (allowed, outcome) in &results {
        check(*allowed, outcome)?;
    }
    drop(results);
    // After `shutdown_timeout`, a worker that had not left its loop yet
    // still drops what it holds as it leaves: give it time, not forever.
    let start = std::time::Instant::now();
    loop {
        let (created, dropped) = (
            counts.created.load(Ordering::SeqCst),
            counts.dropped.load(Ordering::SeqCst),
        );
        if created == dropped {
            break;
        }
        if dropped > created || start.elapsed() > Duration::from_secs(10) {
            return Err(format!("{created} values created, {dropped} dropped"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let spawned = handle.metrics().spawned;
    let spawns = counts.spawns.load(Ordering::SeqCst) as u64;
    if spawned != spawns {
        return Err(format!(
            "Metrics::spawned is {spawned}, {spawns} spawns were made"
        ));
    }
    Ok(())
}

/// Run `program` and check the allocator too, against the live bytes
/// `baseline` after the warm-up.
fn run_counted(program: &Program, baseline: isize) -> Result<(), String> {
    run(program)?;
    // Memory freed late (threads exiting, epoch-deferred frees) is given a
    // second to come back; a leak does not.
    let start = std::time::Instant::now();
    loop {
        collect_deferred();
        let grown = alloc::live_bytes() - baseline;
        if grown.abs() <= ALLOC_SLACK {
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(1) {
            let threads = std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("Threads:").map(|n| n.trim().to_string()))
                })
                .unwrap_or_default();
            return Err(format!(
                "{grown} bytes more allocated than after the warm-up (slack {ALLOC_SLACK}), \
                 {threads} threads in the process"
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The deques free their old buffers through crossbeam-epoch, which frees
/// them later, when some thread pins enough: pin and flush until it has.
fn collect_deferred() {
    for _ in 0..8 {
        crossbeam_epoch::pin().flush();
    }
}

/// Remove ops one by one while the program still fails.
fn shrink(mut program: Program, baseline: isize) -> Program {
    let mut i = 0;
    while i < program.ops.len() {
        let mut smaller = program.clone();
        smaller.ops.remove(i);
        if run_counted(&smaller, baseline).is_err() {
            program = smaller;
        } else {
            i += 1;
        }
    }
    program
}

#[test]
fn random_task_lifecycles_drop_everything_once_and_resolve_every_handle() {
    alloc::start_counting();
    // Silence the deliberate panics' messages (thousands of them), not the
    // others.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if !message.contains("(on purpose)") {
            default_hook(info);
        }
    }));
    {
        let seeds: Vec<u64> = match std::env::var("POOL_MODEL_SEED") {
            Ok(s) => vec![s.parse().expect("POOL_MODEL_SEED is a number")],
            Err(_) => {
                let cases = std::env::var("POOL_MODEL_CASES")
                    .map(|v| v.parse().expect("POOL_MODEL_CASES is a number"))
                    .unwrap_or(DEFAULT_CASES);
                (0..cases).collect()
            }
        };
        // Warm-up: the first pool, thread-locals and lazily sized tables of
        // the runtime's dependencies allocate once and keep it.
        for seed in 0..20 {
            let _ = run(&generate(u64::MAX - seed));
        }
        collect_deferred();
        let baseline = alloc::live_bytes();
        for seed in seeds {
            if std::env::var_os("POOL_MODEL_PROGRESS").is_some() {
                // Straight to stderr: `eprintln!` would go to the test
                // harness's capture buffer, which grows (and counts as
                // allocated) with every line.
                let _ = writeln!(
                    std::io::stderr(),
                    "seed {seed}, live bytes {}",
                    alloc::live_bytes() - baseline
                );
            }
            let program = generate(seed);
            if std::env::var_os("POOL_MODEL_PROGRESS").is_some() {
                let _ = writeln!(std::io::stderr(), "{program:?}");
            }
            // A program that hangs names its seed.
            let case = program.clone();
            let result = tests::watchdog(&format!("lifecycle model, seed {seed}"), 60, move || {
                run_counted(&case, baseline)
            });
            if let Err(first) = result {
                let small = shrink(program, baseline);
                let again = run_counted(&small, baseline).err().unwrap_or_default();
                panic!(
                    "seed {seed} failed: {first}\nshrunk program ({again}):\n{small:#?}\n\
                     replay: POOL_MODEL_SEED={seed} cargo test -p tests --test model"
                );
            }
        }
        eprintln!(
            "lifecycle model: live bytes {} against {baseline} after the warm-up",
            alloc::live_bytes()
        );
    }
}
