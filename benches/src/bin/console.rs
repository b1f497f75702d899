//! The cost of serving tokio-console (`Builder::console`): per task, and in
//! memory under a million short tasks, with a console client attached.
//!
//! ```text
//! cargo run --release -p benches --bin console [-- --reps N --million N]
//! ```
//!
//! 1. **Per task.** Three pools of 2 workers, interleaved, a fresh pool per
//!    repetition: `pool` (no console), `pool+console` (served, nobody
//!    attached) and `pool+client` (served, a console-api client, the one
//!    tokio-console is built on, reading every update). Two workloads:
//!    10 000 spawns from a task, each awaited (spawn_many_local), and 200
//!    tasks yielding 100 times each (20 000 polls). Printed: the medians of
//!    wall and process CPU (which counts the console's own thread, and for
//!    `pool+client` the client's decoding too: it runs in this process),
//!    and the CPU per task or per poll against the pool without a console.
//! 2. **Memory.** One console-attached pool runs 1 000 000 short tasks, at
//!    most 1 000 alive at once; the heap's live bytes (the counting
//!    allocator) after every 100 000 must stay flat: the table keeps the
//!    live tasks and at most 4 096 finished ones. Printed: each reading,
//!    and what the client saw (tasks announced, tasks let go unseen).

use benches::median;
use console_api::instrument::instrument_client::InstrumentClient;
use console_api::instrument::InstrumentRequest;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: benches::alloc::Counting = benches::alloc::Counting;

fn usage(problem: &str) -> ! {
    eprintln!("console: {problem}\nusage: console [--reps N] [--million N]");
    std::process::exit(2)
}

/// A console client on a thread of its own, reading every update until
/// told to stop: what it saw.
struct Client {
    stop: Arc<AtomicBool>,
    seen: Arc<AtomicU64>,
    lost: Arc<AtomicU64>,
    updates: Arc<AtomicU64>,
    thread: JoinHandle<()>,
}

impl Client {
    fn attach(pool: &pool::Pool) -> Client {
        let addr = pool.console_addr().expect("a pool serving the console");
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU64::new(0));
        let lost = Arc::new(AtomicU64::new(0));
        let updates = Arc::new(AtomicU64::new(0));
        let (s, n, l, u) = (stop.clone(), seen.clone(), lost.clone(), updates.clone());
        let (ready, attached) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let mut client = InstrumentClient::connect(format!("http://{addr}"))
                    .await
                    .expect("connect to the console");
                let mut stream = client
                    .watch_updates(InstrumentRequest {})
                    .await
                    .expect("watch updates")
                    .into_inner();
                let _ = ready.send(());
                while !s.load(Ordering::Relaxed) {
                    let next = tokio::time::timeout(Duration::from_millis(100), stream.message());
                    if let Ok(update) = next.await {
                        let update = update
                            .expect("a healthy stream")
                            .expect("the stream goes on");
                        u.fetch_add(1, Ordering::Relaxed);
                        if let Some(t) = update.task_update {
                            n.fetch_add(t.new_tasks.len() as u64, Ordering::Relaxed);
                            l.fetch_add(t.dropped_events, Ordering::Relaxed);
                        }
                    }
                }
            });
        });
        attached
            .recv_timeout(Duration::from_secs(10))
            .expect("the client attached within 10 s");
        Client {
            stop,
            seen,
            lost,
            updates,
            thread,
        }
    }

    fn detach(self) -> (u64, u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the client thread");
        (
            self.seen.load(Ordering::Relaxed),
            self.lost.load(Ordering::Relaxed),
            self.updates.load(Ordering::Relaxed),
        )
    }
}

/// 10 000 spawns from a task, each awaited.
fn spawn_many(pool: &pool::Pool) {
    let sum = pool.block_on(pool.spawn(async {
        let handles: Vec<_> = (0..10_000u64)
            .map(|i| pool::spawn(async move { i }))
            .collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await.unwrap();
        }
        sum
    }));
    assert_eq!(sum.unwrap(), 49_995_000);
}

/// 200 tasks yielding 100 times each.
fn yield_many(pool: &pool::Pool) {
    pool.block_on(async {
        let handles: Vec<_> = (0..200)
            .map(|_| {
                pool::spawn(async {
                    for _ in 0..100 {
                        pool::yield_now().await;
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
    });
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Plain,
    Console,
    Client,
}

const VARIANTS: [(Variant, &str); 3] = [
    (Variant::Plain, "pool"),
    (Variant::Console, "pool+console"),
    (Variant::Client, "pool+client"),
];

/// One repetition of `work` on a fresh pool of `variant`: wall and CPU.
fn sample(variant: Variant, work: fn(&pool::Pool)) -> (f64, f64) {
    let mut b = pool::Builder::new().worker_threads(2);
    if variant != Variant::Plain {
        b = b.console("127.0.0.1:0");
    }
    let pool = b.build().unwrap();
    let client = (variant == Variant::Client).then(|| Client::attach(&pool));
    // Warm: threads started, the client's first update read.
    work(&pool);
    std::thread::sleep(Duration::from_millis(20));
    let cpu = benches::process_cpu_time();
    let start = Instant::now();
    work(&pool);
    let wall = start.elapsed();
    let cpu = benches::process_cpu_time() - cpu;
    if let Some(c) = client {
        c.detach();
    }
    (wall.as_secs_f64() * 1e3, cpu.as_secs_f64() * 1e3)
}

fn per_task(reps: usize) {
    for (name, work, units) in [
        ("spawn_many_local", spawn_many as fn(&pool::Pool), 10_000.0),
        ("yield_many", yield_many, 20_000.0),
    ] {
        let mut walls = vec![Vec::new(); 3];
        let mut cpus = vec![Vec::new(); 3];
        for rep in 0..reps {
            // A, B, C, then C, B, A, ...
            let order: Vec<usize> = if rep % 2 == 0 {
                vec![0, 1, 2]
            } else {
                vec![2, 1, 0]
            };
            for i in order {
                let (w, c) = sample(VARIANTS[i].0, work);
                walls[i].push(w);
                cpus[i].push(c);
            }
        }
        let base_cpu = median(&mut cpus[0].clone());
        println!("{name} ({units} tasks or polls, {reps} reps, medians):");
        for (i, (_, label)) in VARIANTS.iter().enumerate() {
            let wall = median(&mut walls[i]);
            let cpu = median(&mut cpus[i]);
            println!(
                "  {label:<13} wall {wall:7.2} ms  CPU {cpu:7.2} ms  CPU per unit {:6.0} ns  (+{:.0} ns, {:.2}x)",
                cpu * 1e6 / units,
                (cpu - base_cpu) * 1e6 / units,
                cpu / base_cpu
            );
        }
    }
}

fn memory(tasks: u64) {
    let pool = pool::Builder::new()
        .worker_threads(2)
        .console("127.0.0.1:0")
        .build()
        .unwrap();
    let client = Client::attach(&pool);
    println!("memory: {tasks} short tasks, at most 1 000 alive, a client attached:");
    let step = (tasks / 10).max(1000);
    let mut readings = Vec::new();
    let mut done = 0;
    let start = Instant::now();
    while done < tasks {
        pool.block_on(async {
            let mut ran = 0;
            while ran < step {
                let handles: Vec<_> = (0..1000).map(|_| pool::spawn(async {})).collect();
                for h in handles {
                    h.await.unwrap();
                }
                ran += 1000;
            }
        });
        done += step;
        let live = benches::alloc::live_bytes();
        readings.push(live);
        println!(
            "  after {done:>8} tasks ({:5.1} s): {:8.2} MiB live",
            start.elapsed().as_secs_f64(),
            live as f64 / (1 << 20) as f64
        );
    }
    // Let a publish or two pass, then read what the client saw.
    std::thread::sleep(Duration::from_millis(2500));
    let (seen, lost, updates) = client.detach();
    let mib = |b: isize| b as f64 / (1 << 20) as f64;
    let (min, max) = (
        readings.iter().min().unwrap(),
        readings.iter().max().unwrap(),
    );
    println!(
        "  live heap over the run: {:.2}-{:.2} MiB; the client saw {seen} tasks in {updates} updates, {lost} let go unseen",
        mib(*min),
        mib(*max)
    );
}

fn main() {
    benches::alloc::start_counting();
    let mut reps = 7;
    let mut million = 1_000_000;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--reps" => reps = benches::args::positive(&mut it, "--reps", usage) as usize,
            "--million" => million = benches::args::positive(&mut it, "--million", usage),
            "--quick" => {
                reps = 1;
                million = 20_000;
            }
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    per_task(reps);
    memory(million);
}
