//! Tasks in groups, fairly, and on one thread: pool against tokio (and
//! async-executor where it has the piece), interleaved rounds, medians.
//!
//! * `fairness`: a 2-worker server; one hot connection whose client writes
//!   without pause (the server reads it 64 bytes at a time, so its socket
//!   is always ready) while 100 light connections ping one byte each,
//!   round robin. Light round-trip p50/p99 on pool, on tokio, and on pool
//!   with the hot connection's task `unconstrained` (the budget off: pool
//!   before it had one), and the hot connections' MB/s (what the server
//!   read of them: starving the hot tasks would look fair to the light
//!   ones).
//! * `fairness_per_worker`: the same with one hot connection per worker,
//!   so that every worker has an always-ready task: there the budget is
//!   what lets the light connections in.
//! * `join_set`: 10 000 tasks that sleep 1 ms and finish, joined through a
//!   `JoinSet` (pool's, tokio's); wall time of spawn + join.
//! * `spawn_local`: 10 000 `!Send` tasks spawned and awaited on one thread:
//!   `pool::spawn_local` (inside a task of a 2-worker pool), tokio's
//!   `LocalSet` (current-thread runtime), async-executor's `LocalExecutor`.
//!
//! ```text
//! cargo build --release -p benches --bin groups
//! target/release/groups [--rounds N] [--only fairness,fairness_per_worker,join_set,spawn_local] [--quick]
//!     [--trace DIR]
//! ```
//!
//! `--trace DIR` records each fairness round of `pool` in a timeline
//! (`Builder::trace`, `DIR/fairness-<hot>hot-<round>.json`) and prints where
//! its light pings waited: each ping by what the worker that served it was
//! doing when the client sent it (polling a hot task, polling a light one,
//! asleep, or awake between polls), with its round trips' p50 and p99 and
//! how many of the round's slowest 1% fell there. Tracing costs the pool a
//! little; compare such rounds with each other, not with untraced ones.

use benches::trace::What;
use futures_lite::{AsyncReadExt as _, AsyncWriteExt as _};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WORKERS: usize = 2;
const LIGHT_CONNECTIONS: usize = 100;
const HOT_READ: usize = 64;
const SET_TASKS: u64 = 10_000;
const LOCAL_TASKS: u64 = 10_000;
/// How long a light connection may wait for its echo before its round
/// counts as starved (`fairness_round`).
const STARVED: Duration = Duration::from_secs(10);

struct Args {
    rounds: usize,
    only: Option<Vec<String>>,
    fairness_secs: f64,
    /// `--trace DIR`: record the pool's fairness rounds (see the top).
    trace: Option<PathBuf>,
}

fn args() -> Args {
    let mut a = Args {
        rounds: 5,
        only: None,
        fairness_secs: 2.0,
        trace: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--rounds" => a.rounds = it.next().and_then(|v| v.parse().ok()).expect("--rounds N"),
            "--only" => {
                a.only = Some(
                    it.next()
                        .expect("--only LIST")
                        .split(',')
                        .map(str::to_string)
                        .collect(),
                )
            }
            "--trace" => {
                let dir = PathBuf::from(it.next().expect("--trace DIR"));
                if let Err(e) = std::fs::create_dir_all(&dir) {
                    eprintln!("--trace {}: cannot create the folder: {e}", dir.display());
                    std::process::exit(2);
                }
                a.trace = Some(dir);
            }
            "--quick" => {
                a.rounds = 1;
                a.fairness_secs = 0.5;
            }
            "--bench" => {}
            other => {
                eprintln!(
                    "unknown argument {other:?}\nusage: groups [--rounds N] [--only fairness,fairness_per_worker,join_set,spawn_local] [--quick] [--trace DIR]"
                );
                std::process::exit(2);
            }
        }
    }
    a
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

// ---------------------------------------------------------------- fairness

/// The server's side of one connection: the first byte says which kind.
/// `H`: read 64 bytes at a time until EOF; `L`: echo one byte at a time.
macro_rules! serve_connection {
    ($stream:expr, $hot:expr) => {{
        let mut stream = $stream;
        let mut kind = [0u8; 1];
        if stream.read_exact(&mut kind).await.is_err() {
            return;
        }
        if kind[0] == b'H' {
            $hot(async move {
                let mut buf = [0u8; HOT_READ];
                while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
            })
            .await
        } else {
            let mut byte = [0u8; 1];
            while stream.read_exact(&mut byte).await.is_ok() {
                if stream.write_all(&byte).await.is_err() {
                    break;
                }
            }
        }
    }};
}

/// Which server a fairness round runs.
#[derive(Clone, Copy, PartialEq)]
enum Server {
    Pool,
    PoolUnbudgeted,
    Tokio,
}

impl Server {
    fn name(self) -> &'static str {
        match self {
            Server::Pool => "pool",
            Server::PoolUnbudgeted => "pool, no budget",
            Server::Tokio => "tokio",
        }
    }
}

/// Start `server` on a loopback port; returns its address and a guard that
/// stops it when dropped. A pool records its timeline to `trace`, if given,
/// and then also returns a clock marker: the id of a task and the
/// `Instant` its one poll began at, which the timeline holds on its own
/// clock (`explain_pings`).
fn start_server(
    server: Server,
    trace: Option<&Path>,
) -> (SocketAddr, Box<dyn Send>, Option<(u64, Instant)>) {
    let (tx, rx) = std::sync::mpsc::channel();
    match server {
        Server::Pool | Server::PoolUnbudgeted => {
            let mut builder = pool::Builder::new().worker_threads(WORKERS);
            if let Some(path) = trace {
                builder = builder.trace(path);
            }
            let p = builder.build().unwrap();
            let marker = trace.map(|_| {
                let task = p.spawn(async { Instant::now() });
                let id = task
                    .id()
                    .to_string()
                    .parse()
                    .expect("a task id is a number");
                (id, p.block_on(task).expect("the marker task returns"))
            });
            let unbudgeted = server == Server::PoolUnbudgeted;
            p.spawn(async move {
                let listener = pool::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                while let Ok((stream, _)) = listener.accept().await {
                    stream.set_nodelay(true).unwrap();
                    pool::spawn(async move {
                        serve_connection!(stream, |f| async move {
                            if unbudgeted {
                                pool::unconstrained(f).await
                            } else {
                                f.await
                            }
                        })
                    });
                }
            });
            (rx.recv().unwrap(), Box::new(p), marker)
        }
        Server::Tokio => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKERS)
                .enable_all()
                .build()
                .unwrap();
            rt.spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                while let Ok((stream, _)) = listener.accept().await {
                    stream.set_nodelay(true).unwrap();
                    tokio::spawn(async move { serve_connection!(stream, |f| f) });
                }
            });
            (rx.recv().unwrap(), Box::new(rt), None)
        }
    }
}

/// One fairness round with `hot` hot connections: the light round trips'
/// latencies in microseconds, sorted; `None` if a light connection waited
/// `STARVED` for its echo on the pool without a budget (a starved round:
/// with its hot task never yielding, a pool whose other worker sleeps on
/// its condvar has nobody in the I/O driver, `executor/src/sleep/README.md`,
/// "the sleeper in the driver"). On the other servers that is a failure.
/// With `trace`, the pool records its timeline there, and the round's pings
/// are explained against it (`explain_pings`).
fn fairness_round(
    server: Server,
    secs: f64,
    hot: usize,
    trace: Option<&Path>,
) -> Option<(Vec<f64>, f64)> {
    // The pings' clock (the timeline's is matched to it by the marker).
    let t_ref = Instant::now();
    let (addr, guard, marker) = start_server(server, trace);
    let stop = Arc::new(AtomicBool::new(false));
    let hot_start = Instant::now();
    // Each hot writer returns the bytes the server took from it before the
    // stop: a server that starved its hot tasks would look fair to the
    // light ones.
    let hot: Vec<_> = (0..hot)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.write_all(b"H").unwrap();
                let chunk = vec![0u8; 64 * 1024];
                let mut sent = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if s.write_all(&chunk).is_err() {
                        break;
                    }
                    sent += chunk.len() as u64;
                }
                sent
            })
        })
        .collect();
    let mut lights: Vec<TcpStream> = (0..LIGHT_CONNECTIONS)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_nodelay(true).unwrap();
            // A starved light connection ends the round instead of hanging.
            s.set_read_timeout(Some(STARVED)).unwrap();
            s.write_all(b"L").unwrap();
            s
        })
        .collect();
    // Let the hot connection get going.
    std::thread::sleep(Duration::from_millis(100));
    let mut latencies = Vec::new();
    // (send, receive) of each ping, in us from `t_ref`, when traced.
    let mut pings: Vec<(f64, f64)> = Vec::new();
    let us = |t: Instant| t.duration_since(t_ref).as_secs_f64() * 1e6;
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut byte = [7u8; 1];
    let mut starved = false;
    'round: while Instant::now() < end {
        for s in &mut lights {
            let t0 = Instant::now();
            s.write_all(&byte).unwrap();
            if let Err(e) = s.read_exact(&mut byte) {
                assert!(
                    server == Server::PoolUnbudgeted,
                    "{}: a light connection starved {STARVED:?}: {e}",
                    server.name()
                );
                starved = true;
                break 'round;
            }
            let t1 = Instant::now();
            latencies.push(t1.duration_since(t0).as_secs_f64() * 1e6);
            if trace.is_some() {
                pings.push((us(t0), us(t1)));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let hot_secs = hot_start.elapsed().as_secs_f64();
    drop(lights);
    drop(guard); // closes the server's sockets: the hot writers' writes fail
    let hot_count = hot.len();
    let hot_bytes: u64 = hot.into_iter().map(|h| h.join().unwrap()).sum();
    if let (Some(path), Some((task, at))) = (trace, marker) {
        // The pool was dropped with `guard`: its timeline is written.
        explain_pings(path, &pings, hot_count, (task, us(at)));
    }
    latencies.sort_by(f64::total_cmp);
    (!starved).then_some((latencies, hot_bytes as f64 / hot_secs / 1e6))
}

/// The fairness workload with `hot` hot connections.
fn fairness(a: &Args, hot: usize) {
    // With a hot connection on every worker and no budget, nothing would
    // ever let the light ones in: that server runs only with one.
    let servers: &[Server] = if hot < WORKERS {
        &[Server::Pool, Server::Tokio, Server::PoolUnbudgeted]
    } else {
        &[Server::Pool, Server::Tokio]
    };
    let mut p50 = vec![Vec::new(); servers.len()];
    let mut p99 = vec![Vec::new(); servers.len()];
    let mut count = vec![Vec::new(); servers.len()];
    let mut hot_mb_s = vec![Vec::new(); servers.len()];
    let mut starved = vec![0; servers.len()];
    for round in 0..a.rounds {
        for (i, &s) in servers.iter().enumerate() {
            let trace = a
                .trace
                .as_ref()
                .filter(|_| s == Server::Pool)
                .map(|dir| dir.join(format!("fairness-{hot}hot-{round}.json")));
            let Some((l, mb_s)) = fairness_round(s, a.fairness_secs, hot, trace.as_deref()) else {
                starved[i] += 1;
                continue;
            };
            hot_mb_s[i].push(mb_s);
            p50[i].push(percentile(&l, 0.5));
            p99[i].push(percentile(&l, 0.99));
            count[i].push(l.len() as f64);
        }
    }
    println!(
        "{}: {hot} hot connection(s) (read {HOT_READ} B at a time, always ready) + \
         {LIGHT_CONNECTIONS} light ones pinging 1 byte; {WORKERS} workers; {} rounds of {} s, medians",
        if hot == 1 { "fairness" } else { "fairness_per_worker" },
        a.rounds,
        a.fairness_secs
    );
    println!(
        "  {:<16} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "server", "round trips", "p50 us", "p99 us", "p99 ratio", "hot MB/s"
    );
    let tokio_p99 = median(&mut p99[1].clone());
    for (i, s) in servers.iter().enumerate() {
        if starved[i] > 0 {
            println!(
                "  {:<16} starved in {} of {} rounds (a light connection waited {STARVED:?})",
                s.name(),
                starved[i],
                a.rounds
            );
        }
        if p99[i].is_empty() {
            continue;
        }
        let m99 = median(&mut p99[i]);
        println!(
            "  {:<16} {:>12.0} {:>12.1} {:>12.1} {:>9.2}x {:>10.0}",
            s.name(),
            median(&mut count[i]),
            median(&mut p50[i]),
            m99,
            m99 / tokio_p99,
            median(&mut hot_mb_s[i])
        );
    }
}

/// Where a traced round's light pings waited: each ping is matched to the
/// poll of a light task that served it (the last one that began before its
/// echo came back), and counted by what that poll's worker was doing when
/// the client sent the ping. The hot tasks are the `hot` most-polled ones.
/// `marker`: a task whose one poll began at this ping-clock time; the
/// pings are moved onto the timeline's clock by it.
fn explain_pings(path: &Path, pings: &[(f64, f64)], hot: usize, marker: (u64, f64)) {
    let timeline = benches::trace::Timeline::read(path);
    let Some((_, marked)) = timeline
        .polls()
        .find(|(_, s)| s.what == What::Poll(marker.0))
    else {
        println!(
            "  traced {}: the clock marker's poll is not in it",
            path.display()
        );
        return;
    };
    let offset = marker.1 - marked.start;
    let pings: Vec<(f64, f64)> = pings
        .iter()
        .map(|&(s, r)| (s - offset, r - offset))
        .collect();
    let mut counts = std::collections::HashMap::<u64, usize>::new();
    for (_, span) in timeline.polls() {
        if let What::Poll(task) = span.what {
            *counts.entry(task).or_default() += 1;
        }
    }
    let mut by_polls: Vec<(u64, usize)> = counts.into_iter().collect();
    by_polls.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    let hot_tasks: Vec<u64> = by_polls.iter().take(hot).map(|&(t, _)| t).collect();
    // The light polls, by start.
    let mut light: Vec<(f64, usize)> = timeline
        .polls()
        .filter(|(_, s)| !matches!(s.what, What::Poll(t) if hot_tasks.contains(&t)))
        .map(|(w, s)| (s.start, w))
        .collect();
    light.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rtts: Vec<f64> = pings.iter().map(|(s, r)| r - s).collect();
    rtts.sort_by(f64::total_cmp);
    let slow = percentile(&rtts, 0.99);
    const STATES: [&str; 5] = [
        "polling a hot task",
        "polling a light task",
        "asleep",
        "awake between polls",
        "no poll found",
    ];
    let mut by_state: Vec<Vec<f64>> = vec![Vec::new(); STATES.len()];
    for &(send, recv) in &pings {
        // The serving poll began after the send and before the echo was
        // read: the last such poll (an earlier one may have read nothing).
        let first = light.partition_point(|&(t, _)| t < send);
        let last = light.partition_point(|&(t, _)| t <= recv);
        let state = match light[first..last].last() {
            None => 4,
            Some(&(_, worker)) => match timeline.at(worker, send).map(|s| s.what) {
                Some(What::Poll(t)) if hot_tasks.contains(&t) => 0,
                Some(What::Poll(_)) => 1,
                Some(What::Sleep) => 2,
                _ => 3,
            },
        };
        by_state[state].push(recv - send);
    }
    println!(
        "  traced {} ({} pings, round p99 {slow:.1} us):",
        path.display(),
        pings.len()
    );
    println!(
        "    {:<32} {:>8} {:>10} {:>10} {:>12}",
        "serving worker at the send", "pings", "p50 us", "p99 us", ">= round p99"
    );
    for (state, mut v) in STATES.iter().zip(by_state) {
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        let tail = v.iter().filter(|&&x| x >= slow).count();
        println!(
            "    {:<32} {:>8} {:>10.1} {:>10.1} {:>12}",
            state,
            v.len(),
            percentile(&v, 0.5),
            percentile(&v, 0.99),
            tail
        );
    }
}

// ---------------------------------------------------------------- join_set

/// One `join_set` run inside a task: `$set` is the `JoinSet` type, `$sleep`
/// the runtime's sleep; returns milliseconds.
macro_rules! join_set_round {
    ($set:ty, $sleep:path) => {
        async {
            let t0 = Instant::now();
            let mut set = <$set>::new();
            for i in 0..SET_TASKS {
                set.spawn(async move {
                    $sleep(Duration::from_millis(1)).await;
                    i
                });
            }
            let mut sum = 0;
            while let Some(r) = set.join_next().await {
                sum += r.unwrap();
            }
            assert_eq!(sum, SET_TASKS * (SET_TASKS - 1) / 2);
            t0.elapsed().as_secs_f64() * 1e3
        }
    };
}

fn join_set_pool(p: &pool::Pool) -> f64 {
    p.block_on(p.spawn(join_set_round!(pool::JoinSet<u64>, pool::time::sleep)))
        .unwrap()
}

fn join_set_tokio(rt: &tokio::runtime::Runtime) -> f64 {
    rt.block_on(rt.spawn(join_set_round!(
        tokio::task::JoinSet<u64>,
        tokio::time::sleep
    )))
    .unwrap()
}

fn join_set(a: &Args) {
    let p = pool::Builder::new()
        .worker_threads(WORKERS)
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()
        .unwrap();
    // Warm both (timer wheels, allocator).
    join_set_pool(&p);
    join_set_tokio(&rt);
    let reps = 5 * a.rounds;
    let (mut pw, mut tw) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        pw.push(join_set_pool(&p));
        tw.push(join_set_tokio(&rt));
    }
    let (pm, tm) = (median(&mut pw), median(&mut tw));
    println!(
        "join_set: {SET_TASKS} tasks sleeping 1 ms then finishing, spawned into a JoinSet and joined; \
         {WORKERS} workers; {reps} interleaved runs, medians"
    );
    println!("  pool  {pm:>8.2} ms");
    println!("  tokio {tm:>8.2} ms   pool/tokio {:.2}x", pm / tm);
}

// ------------------------------------------------------------- spawn_local

/// Spawn `LOCAL_TASKS` `!Send` tasks with `spawn`, each yielding once, then
/// await them all; returns milliseconds.
macro_rules! local_round {
    ($spawn:expr, $yield:expr) => {{
        let t0 = Instant::now();
        let shared = Rc::new(std::cell::Cell::new(0u64));
        let handles: Vec<_> = (0..LOCAL_TASKS)
            .map(|i| {
                let shared = Rc::clone(&shared);
                $spawn(async move {
                    $yield.await;
                    shared.set(shared.get() + i);
                })
            })
            .collect();
        for h in handles {
            h.await;
        }
        assert_eq!(shared.get(), LOCAL_TASKS * (LOCAL_TASKS - 1) / 2);
        t0.elapsed().as_secs_f64() * 1e3
    }};
}

fn spawn_local(a: &Args) {
    let p = pool::Builder::new()
        .worker_threads(WORKERS)
        .build()
        .unwrap();
    let run_pool = || {
        // The !Send state lives in a local task itself (the spawning task
        // must be Send).
        p.block_on(p.spawn(async {
            pool::spawn_local(async {
                local_round!(
                    |f| {
                        let h = pool::spawn_local(f);
                        async move { h.await.unwrap() }
                    },
                    pool::yield_now()
                )
            })
            .await
            .unwrap()
        }))
        .unwrap()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run_tokio = || {
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            local_round!(
                |f| {
                    let h = tokio::task::spawn_local(f);
                    async move { h.await.unwrap() }
                },
                tokio::task::yield_now()
            )
        })
    };
    let run_smol = || {
        let ex = async_executor::LocalExecutor::new();
        futures_lite::future::block_on(
            ex.run(async { local_round!(|f| ex.spawn(f), futures_lite::future::yield_now()) }),
        )
    };
    run_pool();
    run_tokio();
    run_smol();
    let reps = 5 * a.rounds;
    let (mut pw, mut tw, mut sw) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        pw.push(run_pool());
        tw.push(run_tokio());
        sw.push(run_smol());
    }
    let (pm, tm, sm) = (median(&mut pw), median(&mut tw), median(&mut sw));
    println!(
        "spawn_local: {LOCAL_TASKS} !Send tasks (an Rc each, one yield) spawned then awaited on one \
         thread; {reps} interleaved runs, medians"
    );
    println!("  pool::spawn_local (on a worker of {WORKERS}) {pm:>8.2} ms");
    println!(
        "  tokio LocalSet (current-thread)      {tm:>8.2} ms   pool/tokio {:.2}x",
        pm / tm
    );
    println!(
        "  async-executor LocalExecutor         {sm:>8.2} ms   pool/async-executor {:.2}x",
        pm / sm
    );
}

fn main() {
    let a = args();
    let wanted = |name: &str| a.only.as_ref().is_none_or(|o| o.iter().any(|x| x == name));
    if wanted("join_set") {
        join_set(&a);
    }
    if wanted("spawn_local") {
        spawn_local(&a);
    }
    if wanted("fairness") {
        fairness(&a, 1);
    }
    if wanted("fairness_per_worker") {
        fairness(&a, WORKERS);
    }
}
