//! Fork-join on `pool`: a parallel quicksort of 10 million `u64` with
//! `pool::join` (each partition sorts its two halves in a join: no
//! allocation, the second half offered to the other workers), checked
//! against `sort_unstable` and timed against it, and against the same sort
//! written with async tasks (`pool::spawn` one half, await it).
//!
//! ```text
//! cargo run --release -p examples --example fork_join -- [--len N] [--workers N]
//! ```

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

/// Below this many elements a part is sorted sequentially.
const SEQUENTIAL_BELOW: usize = 64 * 1024;

/// Split `v` at its median: afterwards every element of `v[..k]` is <= every
/// element of `v[k..]`, for the returned `k = v.len() / 2`. The standard
/// library's selection uses the same branchless block partition as its
/// sort, several times faster than a textbook one on random data.
fn partition(v: &mut [u64]) -> usize {
    let k = v.len() / 2;
    v.select_nth_unstable(k);
    k
}

/// The quicksort with `pool::join`: both halves borrow from the caller.
fn sort_join(v: &mut [u64]) {
    if v.len() < SEQUENTIAL_BELOW {
        v.sort_unstable();
        return;
    }
    let k = partition(v);
    let (left, right) = v.split_at_mut(k);
    pool::join(|| sort_join(left), || sort_join(right));
}

/// A part of the vector being sorted, sent to the task that sorts it (an
/// async task must own what it touches: it is `'static`).
struct Part {
    ptr: *mut u64,
    len: usize,
}

// SAFETY: a `Part` is the only handle to its elements while its task runs
// (parts are disjoint: see `sort_tasks`), so moving it to another thread
// moves exclusive access, as sending a `&mut [u64]` would.
unsafe impl Send for Part {}

impl Part {
    fn new(slice: &mut [u64]) -> Part {
        Part {
            ptr: slice.as_mut_ptr(),
            len: slice.len(),
        }
    }

    /// # Safety
    ///
    /// The slice this part was made from must still be alive and untouched
    /// by anyone else for as long as the returned slice is used.
    unsafe fn into_slice<'a>(self) -> &'a mut [u64] {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// The same quicksort with async tasks: spawn one half, sort the other,
/// await the spawned one.
fn sort_tasks(part: Part) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        // SAFETY: `part` came from a live `&mut [u64]` that nothing else
        // touches until this future completes: `main` awaits the root, and
        // every task awaits the child it spawns before it returns. Nothing
        // between the spawn and that await can panic (partition and sort
        // index in bounds), so no task returns while its child still runs.
        let v = unsafe { part.into_slice() };
        if v.len() < SEQUENTIAL_BELOW {
            v.sort_unstable();
            return;
        }
        let k = partition(v);
        let (left, right) = v.split_at_mut(k);
        let left = pool::spawn(sort_tasks(Part::new(left)));
        sort_tasks(Part::new(right)).await;
        left.await.expect("a sorting task panicked");
    })
}

fn main() -> std::io::Result<()> {
    let mut len = 10_000_000usize;
    let mut workers = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let value = it
            .next()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0);
        match (a.as_str(), value) {
            ("--len", Some(n)) => len = n,
            ("--workers", Some(n)) => workers = Some(n),
            _ => {
                eprintln!("usage: fork_join [--len N] [--workers N] (positive integers)");
                std::process::exit(2);
            }
        }
    }
    let mut builder = pool::Builder::new();
    if let Some(n) = workers {
        builder = builder.worker_threads(n);
    }
    let pool = builder.build()?;

    // xorshift: the same data every run.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let data: Vec<u64> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect();

    let mut expected = data.clone();
    let t = Instant::now();
    expected.sort_unstable();
    let sequential = t.elapsed();

    let mut v = data.clone();
    let t = Instant::now();
    pool.join(|| sort_join(&mut v), || ());
    let joined = t.elapsed();
    assert_eq!(v, expected, "the join sort disagrees with sort_unstable");

    let mut v = data;
    let t = Instant::now();
    pool.block_on(sort_tasks(Part::new(&mut v)));
    let tasks = t.elapsed();
    assert_eq!(v, expected, "the task sort disagrees with sort_unstable");

    println!(
        "sorted {len} u64 correctly on {} workers",
        pool.worker_threads()
    );
    let speedup = |d: std::time::Duration| sequential.as_secs_f64() / d.as_secs_f64();
    println!(
        "sort_unstable: {:.3} s, pool::join quicksort: {:.3} s (speed-up {:.2}x), \
         async-task quicksort: {:.3} s (speed-up {:.2}x)",
        sequential.as_secs_f64(),
        joined.as_secs_f64(),
        speedup(joined),
        tasks.as_secs_f64(),
        speedup(tasks)
    );
    Ok(())
}
