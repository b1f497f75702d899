//! Fork-join side by side: `pool::join` / `pool::scope` against rayon's
//! and chili's (a heartbeat scheduler, the Rust port of Spice), on the four
//! shapes of a cross-runtime suite, in one run.
//!
//! ```text
//! cargo run --release -p benches --bin forkjoin [-- --reps N] [--workers N] [--quick] [--only fib,...]
//! ```
//!
//! | workload | what | pool | rayon | chili |
//! |---|---|---|---|---|
//! | `fib` | fib(30), a fork per call | `join` | `join` | `chili::Scope::join` |
//! | `skynet` | 10-way fan-out, 6 levels (10^6 leaves), summing leaf numbers | `scope` | `scope` | nested `join`s over the ten |
//! | `nqueens` | 11 queens, a fork per valid queen | `scope` | `scope` | nested `join`s over the valid columns |
//! | `matmul` | 512x512 f32, divide and conquer down to 32x32 | `join` of quadrants | `join` | `chili::Scope::join` |
//!
//! Each library gets `--workers` threads (2 by default) made once; every
//! repetition runs each workload on each library in turn (a different one
//! first each time), 20 ms after the previous run, so that the last
//! library's threads have stopped spinning. Results are checked against a sequential run. It
//! prints medians in ms and the ratios to rayon and to chili (below 1: pool
//! takes less time). `--quick` (CI's smoke run) shrinks every size.

use benches::median;
use std::time::Instant;

const WORKLOADS: &[&str] = &["fib", "skynet", "nqueens", "matmul"];
const LIBS: &[&str] = &["pool", "rayon", "chili"];

fn usage(problem: &str) -> ! {
    eprintln!(
        "forkjoin: {problem}\nusage: forkjoin [--reps N] [--workers N] [--quick] [--only WORKLOAD,...]\n\
         workloads: {}",
        WORKLOADS.join(", ")
    );
    std::process::exit(2)
}

/// The sizes of one run.
#[derive(Clone, Copy)]
struct Sizes {
    fib: u64,
    skynet_depth: u32,
    queens: usize,
    matrix: usize,
}

impl Sizes {
    fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                fib: 20,
                skynet_depth: 4,
                queens: 8,
                matrix: 128,
            }
        } else {
            Sizes {
                fib: 30,
                skynet_depth: 6,
                queens: 11,
                matrix: 512,
            }
        }
    }
}

// ---- fib ----

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

fn fib_pool(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = pool::join(|| fib_pool(n - 1), || fib_pool(n - 2));
    a + b
}

fn fib_rayon(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1), || fib_rayon(n - 2));
    a + b
}

fn fib_chili(s: &mut chili::Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| fib_chili(s, n - 1), |s| fib_chili(s, n - 2));
    a + b
}

// ---- skynet: node `num` at `level` has ten children 10*num .. 10*num+9;
// a leaf returns its number; every node the sum of its children. ----

fn skynet_seq(num: u64, level: u32) -> u64 {
    if level == 0 {
        return num;
    }
    (0..10).map(|i| skynet_seq(num * 10 + i, level - 1)).sum()
}

fn skynet_pool(num: u64, level: u32) -> u64 {
    if level == 0 {
        return num;
    }
    let mut sums = [0u64; 10];
    pool::scope(|s| {
        for (i, sum) in sums.iter_mut().enumerate() {
            s.spawn(move |_| *sum = skynet_pool(num * 10 + i as u64, level - 1));
        }
    });
    sums.iter().sum()
}

fn skynet_rayon(num: u64, level: u32) -> u64 {
    if level == 0 {
        return num;
    }
    let mut sums = [0u64; 10];
    rayon::scope(|s| {
        for (i, sum) in sums.iter_mut().enumerate() {
            s.spawn(move |_| *sum = skynet_rayon(num * 10 + i as u64, level - 1));
        }
    });
    sums.iter().sum()
}

/// chili has `join` only: children `lo..hi` of `num` split in halves.
fn skynet_chili(s: &mut chili::Scope<'_>, num: u64, level: u32) -> u64 {
    if level == 0 {
        return num;
    }
    children_chili(s, num, level, 0, 10)
}

fn children_chili(s: &mut chili::Scope<'_>, num: u64, level: u32, lo: u64, hi: u64) -> u64 {
    if hi - lo == 1 {
        return skynet_chili(s, num * 10 + lo, level - 1);
    }
    let mid = (lo + hi) / 2;
    let (a, b) = s.join(
        |s| children_chili(s, num, level, lo, mid),
        |s| children_chili(s, num, level, mid, hi),
    );
    a + b
}

// ---- nqueens: count the placements; a fork per valid queen ----

/// The columns of row `row` where a queen attacks nobody placed in
/// `placed` (one column per row so far).
fn valid(placed: &[usize], n: usize) -> impl Iterator<Item = usize> + '_ {
    let row = placed.len();
    (0..n).filter(move |&col| {
        placed
            .iter()
            .enumerate()
            .all(|(r, &c)| c != col && row - r != col.abs_diff(c))
    })
}

fn with(placed: &[usize], col: usize) -> Vec<usize> {
    let mut next = Vec::with_capacity(placed.len() + 1);
    next.extend_from_slice(placed);
    next.push(col);
    next
}

fn queens_seq(placed: &[usize], n: usize) -> u64 {
    if placed.len() == n {
        return 1;
    }
    valid(placed, n)
        .map(|c| queens_seq(&with(placed, c), n))
        .sum()
}

fn queens_pool(placed: &[usize], n: usize) -> u64 {
    if placed.len() == n {
        return 1;
    }
    let cols: Vec<usize> = valid(placed, n).collect();
    let mut counts = vec![0u64; cols.len()];
    pool::scope(|s| {
        for (&col, count) in cols.iter().zip(counts.iter_mut()) {
            s.spawn(move |_| *count = queens_pool(&with(placed, col), n));
        }
    });
    counts.iter().sum()
}

fn queens_rayon(placed: &[usize], n: usize) -> u64 {
    if placed.len() == n {
        return 1;
    }
    let cols: Vec<usize> = valid(placed, n).collect();
    let mut counts = vec![0u64; cols.len()];
    rayon::scope(|s| {
        for (&col, count) in cols.iter().zip(counts.iter_mut()) {
            s.spawn(move |_| *count = queens_rayon(&with(placed, col), n));
        }
    });
    counts.iter().sum()
}

fn queens_chili(s: &mut chili::Scope<'_>, placed: &[usize], n: usize) -> u64 {
    if placed.len() == n {
        return 1;
    }
    let cols: Vec<usize> = valid(placed, n).collect();
    columns_chili(s, placed, n, &cols)
}

fn columns_chili(s: &mut chili::Scope<'_>, placed: &[usize], n: usize, cols: &[usize]) -> u64 {
    match cols {
        [] => 0,
        [col] => queens_chili(s, &with(placed, *col), n),
        _ => {
            let (left, right) = cols.split_at(cols.len() / 2);
            let (a, b) = s.join(
                |s| columns_chili(s, placed, n, left),
                |s| columns_chili(s, placed, n, right),
            );
            a + b
        }
    }
}

// ---- matmul: C += A * B on square power-of-two views of one row-major
// buffer each, by quadrants (the four of C in parallel, each the two
// products into it one after the other), down to LEAF x LEAF ----

const LEAF: usize = 32;

/// A square block of a row-major matrix: its top-left element's offset,
/// its size, and the whole matrix's row length.
#[derive(Clone, Copy)]
struct Block {
    at: usize,
    size: usize,
    stride: usize,
}

impl Block {
    fn quadrant(self, row: usize, col: usize) -> Block {
        let half = self.size / 2;
        Block {
            at: self.at + row * half * self.stride + col * half,
            size: half,
            stride: self.stride,
        }
    }
}

/// The output matrix, shared by the four quadrant jobs: each writes only
/// its own quadrant.
#[derive(Clone, Copy)]
struct Out(*mut f32);

// SAFETY: the jobs that share it write disjoint quadrants (`mul`).
unsafe impl Send for Out {}
// SAFETY: as above.
unsafe impl Sync for Out {}

fn leaf(a: &[f32], b: &[f32], c: Out, (ab, bb, cb): (Block, Block, Block)) {
    for i in 0..cb.size {
        for k in 0..cb.size {
            let x = a[ab.at + i * ab.stride + k];
            let row = bb.at + k * bb.stride;
            for j in 0..cb.size {
                // SAFETY: `cb` lies inside the output matrix, and only this
                // job writes it (the quadrants of a level are disjoint).
                unsafe { *c.0.add(cb.at + i * cb.stride + j) += x * b[row + j] };
            }
        }
    }
}

/// How to run two closures in parallel, for `mul`.
trait Fork: Sync {
    fn fork(&self, a: &(dyn Fn() + Sync), b: &(dyn Fn() + Sync));
}

struct PoolFork;
impl Fork for PoolFork {
    fn fork(&self, a: &(dyn Fn() + Sync), b: &(dyn Fn() + Sync)) {
        pool::join(a, b);
    }
}

struct RayonFork;
impl Fork for RayonFork {
    fn fork(&self, a: &(dyn Fn() + Sync), b: &(dyn Fn() + Sync)) {
        rayon::join(a, b);
    }
}

struct SeqFork;
impl Fork for SeqFork {
    fn fork(&self, a: &(dyn Fn() + Sync), b: &(dyn Fn() + Sync)) {
        a();
        b();
    }
}

fn mul<F: Fork>(f: &F, a: &[f32], b: &[f32], c: Out, blocks: (Block, Block, Block)) {
    let (ab, bb, cb) = blocks;
    if cb.size <= LEAF {
        return leaf(a, b, c, blocks);
    }
    let quadrant = |i: usize, j: usize| {
        // C_ij += A_i0 * B_0j + A_i1 * B_1j, one after the other.
        for k in 0..2 {
            mul(
                f,
                a,
                b,
                c,
                (ab.quadrant(i, k), bb.quadrant(k, j), cb.quadrant(i, j)),
            );
        }
    };
    f.fork(&|| f.fork(&|| quadrant(0, 0), &|| quadrant(0, 1)), &|| {
        f.fork(&|| quadrant(1, 0), &|| quadrant(1, 1))
    });
}

fn mul_chili(
    s: &mut chili::Scope<'_>,
    a: &[f32],
    b: &[f32],
    c: Out,
    blocks: (Block, Block, Block),
) {
    let (ab, bb, cb) = blocks;
    if cb.size <= LEAF {
        return leaf(a, b, c, blocks);
    }
    let quadrant = |s: &mut chili::Scope<'_>, i: usize, j: usize| {
        for k in 0..2 {
            mul_chili(
                s,
                a,
                b,
                c,
                (ab.quadrant(i, k), bb.quadrant(k, j), cb.quadrant(i, j)),
            );
        }
    };
    s.join(
        |s| {
            s.join(|s| quadrant(s, 0, 0), |s| quadrant(s, 0, 1));
        },
        |s| {
            s.join(|s| quadrant(s, 1, 0), |s| quadrant(s, 1, 1));
        },
    );
}

struct Matrices {
    a: Vec<f32>,
    b: Vec<f32>,
    n: usize,
}

impl Matrices {
    fn new(n: usize) -> Matrices {
        let fill = |seed: u32| {
            (0..n * n)
                .map(|i| ((i as u32 ^ seed) % 7) as f32 - 3.0)
                .collect()
        };
        Matrices {
            a: fill(0x5a),
            b: fill(0xa5),
            n,
        }
    }

    fn whole(&self) -> (Block, Block, Block) {
        let b = Block {
            at: 0,
            size: self.n,
            stride: self.n,
        };
        (b, b, b)
    }

    /// C = A * B by `run`, and a checksum of C.
    fn product(&self, run: impl FnOnce(Out)) -> f64 {
        let mut c = vec![0f32; self.n * self.n];
        run(Out(c.as_mut_ptr()));
        c.iter().map(|&x| f64::from(x)).sum()
    }
}

/// The libraries, each with its threads made once.
struct Libs {
    pool: pool::Pool,
    rayon: rayon::ThreadPool,
    chili: chili::ThreadPool,
}

/// One run of `workload` on `lib`: its result (checked against the
/// sequential one) and the wall time in ms.
fn run(libs: &Libs, lib: &str, workload: &str, s: Sizes, m: &Matrices) -> (f64, f64) {
    // The other libraries' threads, which spin for a while after their own
    // run (rayon's and pool's both do), are asleep by the time this one
    // starts: on 2 CPUs they would otherwise take its time.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let start = Instant::now();
    let result = match (workload, lib) {
        ("fib", "pool") => libs.pool.join(|| fib_pool(s.fib), || ()).0 as f64,
        ("fib", "rayon") => libs.rayon.install(|| fib_rayon(s.fib)) as f64,
        ("fib", "chili") => fib_chili(&mut libs.chili.scope(), s.fib) as f64,
        ("fib", _) => fib_seq(s.fib) as f64,
        ("skynet", "pool") => libs.pool.join(|| skynet_pool(0, s.skynet_depth), || ()).0 as f64,
        ("skynet", "rayon") => libs.rayon.install(|| skynet_rayon(0, s.skynet_depth)) as f64,
        ("skynet", "chili") => skynet_chili(&mut libs.chili.scope(), 0, s.skynet_depth) as f64,
        ("skynet", _) => skynet_seq(0, s.skynet_depth) as f64,
        ("nqueens", "pool") => libs.pool.join(|| queens_pool(&[], s.queens), || ()).0 as f64,
        ("nqueens", "rayon") => libs.rayon.install(|| queens_rayon(&[], s.queens)) as f64,
        ("nqueens", "chili") => queens_chili(&mut libs.chili.scope(), &[], s.queens) as f64,
        ("nqueens", _) => queens_seq(&[], s.queens) as f64,
        ("matmul", "pool") => m.product(|c| {
            libs.pool
                .join(|| mul(&PoolFork, &m.a, &m.b, c, m.whole()), || ());
        }),
        ("matmul", "rayon") => m.product(|c| {
            libs.rayon
                .install(|| mul(&RayonFork, &m.a, &m.b, c, m.whole()))
        }),
        ("matmul", "chili") => {
            m.product(|c| mul_chili(&mut libs.chili.scope(), &m.a, &m.b, c, m.whole()))
        }
        ("matmul", _) => m.product(|c| mul(&SeqFork, &m.a, &m.b, c, m.whole())),
        _ => unreachable!(),
    };
    (result, start.elapsed().as_secs_f64() * 1e3)
}

fn main() {
    let mut reps = 11;
    let mut workers = 2;
    let mut quick = false;
    let mut only: Vec<String> = WORKLOADS.iter().map(|w| w.to_string()).collect();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--reps" => reps = benches::args::positive(&mut it, "--reps", usage) as usize,
            "--workers" => workers = benches::args::positive(&mut it, "--workers", usage) as usize,
            "--quick" => quick = true,
            "--only" => only = benches::args::names(&mut it, "--only", WORKLOADS, usage),
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    let s = Sizes::new(quick);
    let m = Matrices::new(s.matrix);
    let libs = Libs {
        pool: pool::Builder::new()
            .worker_threads(workers)
            .build()
            .unwrap(),
        rayon: rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .build()
            .unwrap(),
        chili: chili::ThreadPool::with_config(chili::Config {
            thread_count: std::num::NonZeroUsize::new(workers),
            ..Default::default()
        }),
    };
    println!(
        "forkjoin: {workers} workers, {reps} reps{}; CPU {}",
        if quick { ", --quick sizes" } else { "" },
        benches::cpu_model()
    );
    let mut times = std::collections::HashMap::<(&str, &str), Vec<f64>>::new();
    for w in &only {
        let w: &str = WORKLOADS.iter().find(|x| **x == w.as_str()).unwrap();
        let (expected, seq_ms) = run(&libs, "seq", w, s, &m);
        times.entry((w, "seq")).or_default().push(seq_ms);
        for rep in 0..reps {
            for k in 0..LIBS.len() {
                let lib = LIBS[(k + rep) % LIBS.len()];
                let (got, ms) = run(&libs, lib, w, s, &m);
                assert_eq!(got, expected, "{w} on {lib}: a wrong result");
                times.entry((w, lib)).or_default().push(ms);
            }
        }
    }
    println!(
        "\n{:<8} {:>9} {:>9} {:>9} {:>9}   {:>11} {:>11}",
        "workload", "seq", "pool", "rayon", "chili", "pool/rayon", "pool/chili"
    );
    for w in &only {
        let w: &str = WORKLOADS.iter().find(|x| **x == w.as_str()).unwrap();
        let mut med = |lib| median(times.get_mut(&(w, lib)).unwrap());
        let (sq, p, r, c) = (med("seq"), med("pool"), med("rayon"), med("chili"));
        println!(
            "{w:<8} {sq:>9.2} {p:>9.2} {r:>9.2} {c:>9.2}   {:>10.2}x {:>10.2}x  (ms, medians; seq is one run)",
            p / r,
            p / c
        );
    }
}
