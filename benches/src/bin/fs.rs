//! `pool::fs` against tokio::fs and std, in one run: each engine of pool's
//! separately (io_uring where the kernel gives one; the batched blocking
//! threads, `Builder::io_uring(false)`).
//!
//! ```text
//! cargo run --release -p benches --bin fs [-- --reps N] [--quick] [--dir PATH]
//! ```
//!
//! | workload | what | figure |
//! |---|---|---|
//! | `read64k` | 2 000 `fs::read` of one 64 KiB file, one after another | us per read |
//! | `walk` | `read_dir` of 10 000 files and each entry's `metadata` | ms per walk |
//! | `pread32` | a 256 MiB file read in 128 KiB positional reads, 32 in flight | ms (GiB/s) |
//! | `random4k` | 4 096 reads of 4 KiB at random offsets of that file, one at a time | us per read |
//! | `write1g` | 1 GiB written over a file of that size in 1 MiB writes, then `sync_all` | ms |
//! | `write1g:writes` | the same run's writes alone (to the last write's end, before `sync_all`): the engine's part, where `sync_all` is the device's | ms |
//! | `meta` | 2 000 `fs::metadata` of one file, one after another | us per call |
//! | `burst` | 2 000 tasks each calling `fs::metadata` at once | ms per burst |
//! | `storm` | 64 tasks reading files and metadata for 1 s beside a 1 ms ticker | the ticker's worst lateness, ms |
//!
//! Every runtime has 2 workers (tokio's multi-thread runtime; pool's
//! `Pool`). tokio has no positional read: its `pread32` is what a tokio
//! user writes, `spawn_blocking` of std's `read_at` per read; its
//! `random4k` is `tokio::fs::File`'s `seek` and `read_exact`. std runs each
//! workload on one thread, one call at a time. The file data is in the page
//! cache (the machine has the memory): these measure the engines, not the
//! device, except `write1g`'s `sync_all`. `--quick` (CI's smoke run) shrinks
//! every size by 16.
//!
//! It prints the CPU and the device behind its directory (a device's speed
//! is not a runtime's), and, after the medians, every figure whose
//! repetitions fell into two speeds (a gap of 1.5x or more between two
//! sorted runs) as two figures: how many runs at each, and each mode's
//! median. Take `--reps 10` or more to see how often a slow mode comes.

use benches::median;
use futures_lite::AsyncWriteExt as _;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn usage(problem: &str) -> ! {
    eprintln!(
        "fs: {problem}\nusage: fs [--reps N] [--quick] [--dir PATH] [--only WORKLOAD,...]\n\
         workloads: {}",
        WORKLOADS.join(", ")
    );
    std::process::exit(2)
}

const WORKLOADS: &[&str] = &[
    "read64k", "walk", "pread32", "random4k", "write1g", "meta", "burst", "storm",
];
const RUNTIMES: &[&str] = &["pool", "pool-blocking", "tokio", "std"];

/// Sizes, divided by 16 with `--quick`.
#[derive(Clone, Copy)]
struct Sizes {
    reads: usize,
    files: usize,
    big: usize,
    randoms: usize,
    write: usize,
    storm: Duration,
}

impl Sizes {
    fn new(quick: bool) -> Sizes {
        let d = if quick { 16 } else { 1 };
        Sizes {
            reads: 2000 / d,
            files: 10_000 / d,
            big: (256 << 20) / d,
            randoms: 4096 / d,
            write: (1 << 30) / d,
            storm: Duration::from_millis(1000 / d as u64),
        }
    }
}

struct Files {
    dir: PathBuf,
    small: PathBuf,
    tree: PathBuf,
    big: PathBuf,
    out: PathBuf,
}

impl Files {
    /// The file write1g overwrites: made (untimed) with `bytes` bytes if
    /// it is not there yet, or has another size.
    fn prepare_out(&self, bytes: usize) {
        use std::io::Write as _;
        if std::fs::metadata(&self.out).is_ok_and(|m| m.len() == bytes as u64) {
            return;
        }
        let mut file = std::fs::File::create(&self.out).unwrap();
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..bytes >> 20 {
            file.write_all(&chunk).unwrap();
        }
        file.sync_all().unwrap();
    }

    fn at(dir: &Path) -> Files {
        Files {
            dir: dir.to_path_buf(),
            small: dir.join("small-64k"),
            tree: dir.join("tree"),
            big: dir.join("big"),
            out: dir.join("out"),
        }
    }

    /// Make the files (once: kept between runs of the same sizes).
    fn make(&self, s: Sizes) {
        std::fs::create_dir_all(&self.tree).unwrap();
        std::fs::write(&self.small, vec![7u8; 64 * 1024]).unwrap();
        let have = std::fs::read_dir(&self.tree).unwrap().count();
        if have != s.files {
            std::fs::remove_dir_all(&self.tree).unwrap();
            std::fs::create_dir_all(&self.tree).unwrap();
            for i in 0..s.files {
                std::fs::write(self.tree.join(format!("f{i:05}")), b"x").unwrap();
            }
        }
        if std::fs::metadata(&self.big).map(|m| m.len() as usize).ok() != Some(s.big) {
            let chunk: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
            let f = std::fs::File::create(&self.big).unwrap();
            for i in 0..s.big / chunk.len() {
                f.write_all_at(&chunk, (i * chunk.len()) as u64).unwrap();
            }
        }
        // Warm the page cache: every runtime reads the same cached data.
        let _ = std::fs::read(&self.big).unwrap();
    }
}

/// Random offsets (4 KiB aligned) in the big file, the same for everyone.
fn offsets(s: Sizes) -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..s.randoms)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % (s.big as u64 / 4096)) * 4096
        })
        .collect()
}

/// One measurement: wall milliseconds (for `storm`, the worst lateness),
/// and for `write1g` also the milliseconds its writes took before its
/// `sync_all` (the `write1g:writes` row).
struct Figure {
    ms: f64,
    writes_ms: Option<f64>,
}

impl From<f64> for Figure {
    fn from(ms: f64) -> Figure {
        Figure {
            ms,
            writes_ms: None,
        }
    }
}

/// The row of write1g's writes alone.
const WRITES_ROW: &str = "write1g:writes";

/// One measurement. The async runtimes run the workload in a task on a
/// worker, as a service's handler runs.
fn measure(runtime: &str, workload: &str, f: &Arc<Files>, s: Sizes) -> Figure {
    if workload == "write1g" {
        // Every run overwrites one file in place, made before the first
        // (untimed): a new file's gigabyte would go into page cache pages
        // the kernel allocates afresh, and on a VM with the balloon's free
        // page reporting most free pages were handed back to the host, so
        // the first touch of each costs a fault in the host: 2.2-2.6 s of
        // the guest's kernel time copying into them
        // (`copy_folio_from_iter_atomic`) where 0.3 s is usual, for any
        // program (`dd` too), depending on which free pages it gets. That
        // is write1g's slow mode, and it is the VM's, not an engine's.
        f.prepare_out(s.write);
    }
    match runtime {
        "pool" | "pool-blocking" => {
            let p = pool::Builder::new()
                .worker_threads(2)
                .io_uring(runtime == "pool")
                .build()
                .unwrap();
            let (w, f) = (workload.to_string(), Arc::clone(f));
            p.block_on(p.spawn(async move {
                // The ring is made at the first operation: not timed.
                pool::fs::metadata(&f.small).await.unwrap();
                pool_workload(&w, &f, s).await
            }))
            .unwrap()
        }
        "tokio" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let (w, f) = (workload.to_string(), Arc::clone(f));
            rt.block_on(rt.spawn(async move {
                tokio::fs::metadata(&f.small).await.unwrap();
                tokio_workload(&w, &f, s).await
            }))
            .unwrap()
        }
        "std" => std_workload(workload, f, s),
        _ => unreachable!(),
    }
}

/// A 1 ms ticker until `for_` after `start`: its worst lateness.
async fn worst_lateness<F: std::future::Future>(
    start: Instant,
    for_: Duration,
    sleep: impl Fn(Duration) -> F,
) -> Duration {
    let mut worst = Duration::ZERO;
    while start.elapsed() < for_ {
        let tick = Instant::now();
        sleep(Duration::from_millis(1)).await;
        worst = worst.max(tick.elapsed().saturating_sub(Duration::from_millis(1)));
    }
    worst
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

async fn pool_workload(workload: &str, f: &Files, s: Sizes) -> Figure {
    let t = Instant::now();
    match workload {
        "meta" => {
            for _ in 0..s.reads {
                pool::fs::metadata(&f.small).await.unwrap();
            }
        }
        "burst" => {
            let calls: Vec<_> = (0..s.reads)
                .map(|_| pool::spawn(pool::fs::metadata(f.small.clone())))
                .collect();
            for call in calls {
                call.await.unwrap().unwrap();
            }
        }
        "read64k" => {
            for _ in 0..s.reads {
                assert_eq!(pool::fs::read(&f.small).await.unwrap().len(), 64 * 1024);
            }
        }
        "walk" => {
            let mut n = 0;
            let mut rd = pool::fs::read_dir(&f.tree).await.unwrap();
            while let Some(e) = rd.next_entry().await.unwrap() {
                n += e.metadata().await.unwrap().len();
            }
            assert_eq!(n as usize, s.files);
        }
        "pread32" => {
            let file = Arc::new(pool::fs::File::open(&f.big).await.unwrap());
            let tasks: Vec<_> = (0..32)
                .map(|k| {
                    let file = file.clone();
                    pool::spawn(async move {
                        let mut buf = vec![0u8; 128 << 10];
                        let mut off = k * (128 << 10);
                        while off < s.big {
                            let (n, b) = file.read_at(buf, off as u64).await;
                            assert_eq!(n.unwrap(), 128 << 10);
                            buf = b;
                            off += 32 * (128 << 10);
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        }
        "random4k" => {
            let file = pool::fs::File::open(&f.big).await.unwrap();
            let mut buf = vec![0u8; 4096];
            for off in offsets(s) {
                let (n, b) = file.read_at(buf, off).await;
                assert_eq!(n.unwrap(), 4096);
                buf = b;
            }
        }
        "write1g" => {
            let mut file = pool::fs::OpenOptions::new()
                .write(true)
                .open(&f.out)
                .await
                .unwrap();
            let chunk = vec![3u8; 1 << 20];
            for _ in 0..s.write >> 20 {
                file.write_all(&chunk).await.unwrap();
            }
            file.flush().await.unwrap();
            let writes_ms = Some(ms(t));
            file.sync_all().await.unwrap();
            return Figure {
                ms: ms(t),
                writes_ms,
            };
        }
        "storm" => {
            let stop = Arc::new(AtomicBool::new(false));
            let stormers: Vec<_> = (0..64)
                .map(|i| {
                    let (stop, small, tree) = (stop.clone(), f.small.clone(), f.tree.clone());
                    pool::spawn(async move {
                        while !stop.load(Ordering::Relaxed) {
                            pool::fs::read(&small).await.unwrap();
                            let name = format!("f{:05}", i % 16);
                            pool::fs::metadata(tree.join(name)).await.unwrap();
                        }
                    })
                })
                .collect();
            let worst = worst_lateness(t, s.storm, pool::time::sleep).await;
            stop.store(true, Ordering::Relaxed);
            for s in stormers {
                s.await.unwrap();
            }
            return (worst.as_secs_f64() * 1e3).into();
        }
        _ => unreachable!(),
    }
    ms(t).into()
}

async fn tokio_workload(workload: &str, f: &Files, s: Sizes) -> Figure {
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
    let t = Instant::now();
    match workload {
        "meta" => {
            for _ in 0..s.reads {
                tokio::fs::metadata(&f.small).await.unwrap();
            }
        }
        "burst" => {
            let calls: Vec<_> = (0..s.reads)
                .map(|_| tokio::spawn(tokio::fs::metadata(f.small.clone())))
                .collect();
            for call in calls {
                call.await.unwrap().unwrap();
            }
        }
        "read64k" => {
            for _ in 0..s.reads {
                assert_eq!(tokio::fs::read(&f.small).await.unwrap().len(), 64 * 1024);
            }
        }
        "walk" => {
            let mut n = 0;
            let mut rd = tokio::fs::read_dir(&f.tree).await.unwrap();
            while let Some(e) = rd.next_entry().await.unwrap() {
                n += e.metadata().await.unwrap().len();
            }
            assert_eq!(n as usize, s.files);
        }
        "pread32" => {
            let file = Arc::new(std::fs::File::open(&f.big).unwrap());
            let tasks: Vec<_> = (0..32)
                .map(|k| {
                    let file = file.clone();
                    tokio::spawn(async move {
                        let mut buf = vec![0u8; 128 << 10];
                        let mut off = k * (128 << 10);
                        while off < s.big {
                            let file = file.clone();
                            buf = tokio::task::spawn_blocking(move || {
                                assert_eq!(file.read_at(&mut buf, off as u64).unwrap(), 128 << 10);
                                buf
                            })
                            .await
                            .unwrap();
                            off += 32 * (128 << 10);
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        }
        "random4k" => {
            let mut file = tokio::fs::File::open(&f.big).await.unwrap();
            let mut buf = vec![0u8; 4096];
            for off in offsets(s) {
                file.seek(std::io::SeekFrom::Start(off)).await.unwrap();
                file.read_exact(&mut buf).await.unwrap();
            }
        }
        "write1g" => {
            let mut file = tokio::fs::OpenOptions::new()
                .write(true)
                .open(&f.out)
                .await
                .unwrap();
            let chunk = vec![3u8; 1 << 20];
            for _ in 0..s.write >> 20 {
                file.write_all(&chunk).await.unwrap();
            }
            file.flush().await.unwrap();
            let writes_ms = Some(ms(t));
            file.sync_all().await.unwrap();
            return Figure {
                ms: ms(t),
                writes_ms,
            };
        }
        "storm" => {
            let stop = Arc::new(AtomicBool::new(false));
            let stormers: Vec<_> = (0..64)
                .map(|i| {
                    let (stop, small, tree) = (stop.clone(), f.small.clone(), f.tree.clone());
                    tokio::spawn(async move {
                        while !stop.load(Ordering::Relaxed) {
                            tokio::fs::read(&small).await.unwrap();
                            let name = format!("f{:05}", i % 16);
                            tokio::fs::metadata(tree.join(name)).await.unwrap();
                        }
                    })
                })
                .collect();
            let worst = worst_lateness(t, s.storm, tokio::time::sleep).await;
            stop.store(true, Ordering::Relaxed);
            for s in stormers {
                s.await.unwrap();
            }
            return (worst.as_secs_f64() * 1e3).into();
        }
        _ => unreachable!(),
    }
    ms(t).into()
}

fn std_workload(workload: &str, f: &Files, s: Sizes) -> Figure {
    use std::io::Write;
    let t = Instant::now();
    match workload {
        "meta" | "burst" => {
            for _ in 0..s.reads {
                std::fs::metadata(&f.small).unwrap();
            }
        }
        "read64k" => {
            for _ in 0..s.reads {
                assert_eq!(std::fs::read(&f.small).unwrap().len(), 64 * 1024);
            }
        }
        "walk" => {
            let mut n = 0;
            for e in std::fs::read_dir(&f.tree).unwrap() {
                n += e.unwrap().metadata().unwrap().len();
            }
            assert_eq!(n as usize, s.files);
        }
        "pread32" => {
            let file = std::fs::File::open(&f.big).unwrap();
            let mut buf = vec![0u8; 128 << 10];
            for off in (0..s.big).step_by(128 << 10) {
                assert_eq!(file.read_at(&mut buf, off as u64).unwrap(), 128 << 10);
            }
        }
        "random4k" => {
            let file = std::fs::File::open(&f.big).unwrap();
            let mut buf = vec![0u8; 4096];
            for off in offsets(s) {
                file.read_exact_at(&mut buf, off).unwrap();
            }
        }
        "write1g" => {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .open(&f.out)
                .unwrap();
            let chunk = vec![3u8; 1 << 20];
            for _ in 0..s.write >> 20 {
                file.write_all(&chunk).unwrap();
            }
            let writes_ms = Some(ms(t));
            file.sync_all().unwrap();
            return Figure {
                ms: ms(t),
                writes_ms,
            };
        }
        "storm" => return f64::NAN.into(), // no timers on a thread of std's
        _ => unreachable!(),
    }
    ms(t).into()
}

fn main() {
    let mut reps = 5;
    let mut quick = false;
    let mut dir = std::env::temp_dir().join("pool-fs-bench");
    let mut only: Vec<String> = WORKLOADS.iter().map(|w| w.to_string()).collect();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--reps" => reps = benches::args::positive(&mut it, "--reps", usage) as usize,
            "--quick" => quick = true,
            "--dir" => {
                dir = it
                    .next()
                    .map(PathBuf::from)
                    .unwrap_or_else(|| usage("--dir takes a path"))
            }
            "--only" => only = benches::args::names(&mut it, "--only", WORKLOADS, usage),
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    let s = Sizes::new(quick);
    let files = Arc::new(Files::at(&dir.join(if quick { "quick" } else { "full" })));
    std::fs::create_dir_all(&files.dir).unwrap();
    files.make(s);
    let engine = {
        let p = pool::Builder::new().worker_threads(1).build().unwrap();
        p.block_on(pool::fs::metadata(&files.small)).unwrap();
        p.metrics().fs_engine
    };
    println!(
        "fs: {} reps{}, pool's engine here: {engine:?} (pool-blocking: Builder::io_uring(false))",
        reps,
        if quick { ", --quick sizes" } else { "" }
    );
    // What the figures depend on besides the runtimes: a device's speed
    // is not a runtime's (BENCHMARKS gives the table per machine).
    println!("CPU: {}", benches::cpu_model());
    println!(
        "directory: {} on {}",
        files.dir.display(),
        device_of(&files.dir)
    );
    let mut samples = std::collections::HashMap::<(String, &str), Vec<f64>>::new();
    for rep in 0..reps {
        for w in &only {
            // A different runtime first each rep.
            for k in 0..RUNTIMES.len() {
                let r = RUNTIMES[(k + rep) % RUNTIMES.len()];
                let v = measure(r, w, &files, s);
                samples.entry((w.clone(), r)).or_default().push(v.ms);
                if let Some(writes) = v.writes_ms {
                    samples
                        .entry((WRITES_ROW.to_string(), r))
                        .or_default()
                        .push(writes);
                }
            }
        }
    }
    let _ = std::fs::remove_file(&files.out);
    let rows: Vec<String> = only
        .iter()
        .flat_map(|w| {
            let writes = (w == "write1g").then(|| WRITES_ROW.to_string());
            std::iter::once(w.clone()).chain(writes)
        })
        .collect();
    println!(
        "\n{:<14} {:>12} {:>14} {:>12} {:>12}   {:>10} {:>15} {:>10}",
        "workload",
        "pool",
        "pool-blocking",
        "tokio",
        "std",
        "tokio/pool",
        "tokio/blocking",
        "pool/std"
    );
    for w in &rows {
        let mut med = |r: &'static str| median(samples.get_mut(&(w.clone(), r)).unwrap());
        let (p, b, t, st) = (med("pool"), med("pool-blocking"), med("tokio"), med("std"));
        let unit = if w == "storm" { "ms late" } else { "ms" };
        println!(
            "{w:<14} {p:>12.2} {b:>14.2} {t:>12.2} {st:>12.2}   {:>9.2}x {:>14.2}x {:>9.2}x  ({unit}, medians)",
            t / p,
            t / b,
            p / st
        );
    }
    println!(
        "\ntokio/pool: tokio's time over pool's (above 1: pool is faster); for storm, the \
         ticker's worst lateness (lower is better)."
    );
    // A median ratio can hide one repetition where the default engine
    // trailed the blocking one: the worst repetition of each row (the two
    // engines of one repetition ran one after the other).
    let worst: Vec<String> = rows
        .iter()
        .filter_map(|w| {
            let ring = &samples[&(w.clone(), "pool")];
            let blocking = &samples[&(w.clone(), "pool-blocking")];
            ring.iter()
                .zip(blocking)
                .map(|(p, b)| p / b)
                .enumerate()
                .filter(|(_, r)| !r.is_nan())
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(rep, r)| format!("{w} {r:.2}x (rep {rep})"))
        })
        .collect();
    println!(
        "worst repetition, pool / pool-blocking: {}",
        worst.join(", ")
    );
    // A median hides a figure with two speeds (a device's write-back
    // throttling, say): show each mode that the repetitions fell into.
    let mut two_modes = Vec::new();
    for w in &rows {
        for r in RUNTIMES {
            let runs = &samples[&(w.clone(), *r)];
            if let Some((fast, slow)) = modes(runs) {
                // Which repetitions were slow: the same ones for every
                // runtime point at the device, not at a runtime.
                let slow_reps: Vec<String> = runs
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| slow.contains(v))
                    .map(|(rep, _)| rep.to_string())
                    .collect();
                two_modes.push(format!(
                    "  {w} {r}: {} of {} runs at {:.2} ms, {} at {:.2} ms (medians of each \
                     mode; slow in repetition {})",
                    fast.len(),
                    fast.len() + slow.len(),
                    median(&mut fast.clone()),
                    slow.len(),
                    median(&mut slow.clone()),
                    slow_reps.join(", "),
                ));
            }
        }
    }
    if two_modes.is_empty() {
        println!("no figure fell into two speeds (a gap of {MODE_GAP}x or more between runs)");
    } else {
        println!("figures with two speeds (a gap of {MODE_GAP}x or more between runs):");
        for line in two_modes {
            println!("{line}");
        }
    }
}

/// Two sorted runs this far apart are two speeds, not noise: write1g's
/// two modes on one machine were 0.8-0.9 s and 1.9-2.4 s.
const MODE_GAP: f64 = 1.5;

/// The samples split in two at their widest gap between neighbours, if
/// that gap is `MODE_GAP` or more: (the fast runs, the slow ones).
fn modes(samples: &[f64]) -> Option<(Vec<f64>, Vec<f64>)> {
    // std has no storm figure (NaN): no speeds at all.
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    let (at, gap) = sorted
        .windows(2)
        .enumerate()
        .map(|(i, pair)| (i + 1, pair[1] / pair[0].max(f64::MIN_POSITIVE)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if gap < MODE_GAP {
        return None;
    }
    let slow = sorted.split_off(at);
    Some((sorted, slow))
}

/// The file system and block device that hold `dir`, in words: its type
/// (`/proc/self/mountinfo`), the device and its disk, whether the kernel
/// calls it rotational, and its I/O scheduler (`/sys/dev/block`).
fn device_of(dir: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else {
        return "an unreadable directory".to_string();
    };
    let dev = meta.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let numbers = format!("{major}:{minor}");
    let fs_type = std::fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                let mut fields = l.split(' ');
                (fields.nth(2) == Some(numbers.as_str()))
                    .then(|| l.split(" - ").nth(1)?.split(' ').next().map(str::to_string))
                    .flatten()
            })
        })
        .unwrap_or_else(|| "an unknown file system".to_string());
    let Ok(link) = std::fs::read_link(format!("/sys/dev/block/{numbers}")) else {
        return format!("{fs_type} (device {numbers}, not a block device)");
    };
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let device = name(&link).unwrap_or_default();
    // A partition's link ends in `disk/partition`.
    let disk = link
        .parent()
        .and_then(name)
        .filter(|d| Path::new("/sys/block").join(d).exists())
        .unwrap_or_else(|| device.clone());
    let queue = |f: &str| {
        std::fs::read_to_string(format!("/sys/block/{disk}/queue/{f}"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let model = std::fs::read_to_string(format!("/sys/block/{disk}/device/model"))
        .map(|m| format!(", model {}", m.trim()))
        .unwrap_or_default();
    let rotational = match queue("rotational").as_str() {
        "0" => "not rotational",
        "1" => "rotational (or a virtual disk that says so)",
        _ => "rotational: unknown",
    };
    // The scheduler in use is the bracketed one: `none [mq-deadline] kyber`.
    let schedulers = queue("scheduler");
    let scheduler = schedulers
        .split_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .map_or(schedulers.as_str(), |(used, _)| used);
    format!("{fs_type} on /dev/{device} (disk {disk}{model}, {rotational}, scheduler {scheduler})")
}
