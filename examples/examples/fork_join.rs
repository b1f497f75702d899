//! Fork-join on `pool`: a parallel quicksort of 10 million `u64`, each
//! partition spawning one half with `pool::spawn` and sorting the other in
//! place, checked against `sort_unstable` and timed against it.
//!
//! ```text
//! cargo run --release -p examples --example fork_join -- [--len N] [--workers N]
//! ```

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

/// Below this many elements a task sorts its part itself.
const SEQUENTIAL_BELOW: usize = 64 * 1024;

/// A part of the vector being sorted, sent to the task that sorts it.
struct Part {
    ptr: *mut u64,
    len: usize,
}

// SAFETY: a `Part` is the only handle to its elements while its task runs
// (parts are disjoint: see `sort`), so moving it to another thread moves
// exclusive access, as sending a `&mut [u64]` would.
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

/// Split `v` at its median: afterwards every element of `v[..k]` is <= every
/// element of `v[k..]`, for the returned `k = v.len() / 2`. The standard
/// library's selection uses the same branchless block partition as its
/// sort, several times faster than a textbook one on random data.
fn partition(v: &mut [u64]) -> usize {
    let k = v.len() / 2;
    v.select_nth_unstable(k);
    k
}

fn sort(part: Part) -> Pin<Box<dyn Future<Output = ()> + Send>> {
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
        let left = pool::spawn(sort(Part::new(left)));
        sort(Part::new(right)).await;
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

    let mut v = data;
    let t = Instant::now();
    pool.block_on(sort(Part::new(&mut v)));
    let parallel = t.elapsed();

    assert_eq!(
        v, expected,
        "the parallel sort disagrees with sort_unstable"
    );
    println!(
        "sorted {len} u64 correctly on {} workers",
        pool.worker_threads()
    );
    println!(
        "sort_unstable: {:.3} s, pool quicksort: {:.3} s, speed-up {:.2}x",
        sequential.as_secs_f64(),
        parallel.as_secs_f64(),
        sequential.as_secs_f64() / parallel.as_secs_f64()
    );
    Ok(())
}
