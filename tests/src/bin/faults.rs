//! Faults the OS injects: a blocking thread that cannot be started, one
//! scenario per process run (the address-space limit it sets must not
//! reach other tests; `tests/tests/faults.rs` runs each in its own child).
//! Prints `ok: SCENARIO` when every check held.
//!
//! The fault is a soft `RLIMIT_AS` just above the address space in use, so
//! the next thread's stack (2 MiB) cannot be mapped: unlike `RLIMIT_NPROC`,
//! it also binds root. The limit is lifted again right after the spawn.
//!
//! ```text
//! faults blocking_no_thread|blocking_queued
//! ```

use pool::Builder;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

/// Address space in use now, in bytes (`VmSize`).
fn address_space() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmSize in /proc/self/status");
    kib * 1024
}

/// Run `f` while no new thread stack fits in the address space. The pool's
/// workers are asleep first, so none frees address space (a malloc heap
/// released) between the measure and the spawn.
fn without_room_for_a_thread<T>(p: &pool::Pool, f: impl FnOnce() -> T) -> T {
    tests::wait_until_asleep(p);
    tests::set_soft_limit(libc::RLIMIT_AS, Some(address_space() + 512 * 1024));
    let out = f();
    tests::set_soft_limit(libc::RLIMIT_AS, None);
    out
}

/// Counts its drops.
struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn main() {
    let scenario = std::env::args().nth(1).expect("a scenario name");
    let p = Builder::new().worker_threads(1).build().unwrap();
    p.block_on(p.spawn(async {})).unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    match scenario.as_str() {
        "blocking_no_thread" => {
            // No blocking thread is alive and none can start: the closure
            // is cancelled (dropped once, never run), not left waiting.
            let ran = Arc::new(AtomicBool::new(false));
            let (r, t) = (ran.clone(), Tracked(drops.clone()));
            let h = without_room_for_a_thread(&p, || {
                p.spawn_blocking(move || {
                    let _t = t;
                    r.store(true, Ordering::SeqCst);
                    1
                })
            });
            let out = p.block_on(h);
            assert!(
                !ran.load(Ordering::SeqCst),
                "the closure ran: the address-space limit did not stop the thread, \
                 so this scenario tested nothing"
            );
            assert!(
                matches!(&out, Err(e) if e.is_cancelled()),
                "expected a cancelled handle, got {out:?}"
            );
            assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped once");
            assert_eq!(p.metrics().blocking_threads, 0);
            // The pool goes on: the next closure gets a thread.
            assert_eq!(p.block_on(p.spawn_blocking(|| 2)).unwrap(), 2);
        }
        "blocking_queued" => {
            // One blocking thread is busy; a second cannot start: the new
            // closure waits for the busy thread and runs on it.
            let (tx, rx) = mpsc::channel::<u32>();
            let (started_tx, started_rx) = mpsc::channel::<()>();
            let first = p.spawn_blocking(move || {
                started_tx.send(()).unwrap();
                rx.recv().unwrap()
            });
            // Running its closure: the thread's own start-up (its signal
            // stack, mapped by std) is done before the limit is set.
            started_rx.recv().unwrap();
            let t = Tracked(drops.clone());
            let (second, threads) = without_room_for_a_thread(&p, || {
                let h = p.spawn_blocking(move || {
                    let _t = t;
                    2
                });
                (h, p.metrics().blocking_threads)
            });
            assert_eq!(
                threads, 1,
                "a second blocking thread started: the address-space limit did not stop it, \
                 so this scenario tested nothing"
            );
            tx.send(1).unwrap();
            assert_eq!(p.block_on(first).unwrap(), 1);
            assert_eq!(p.block_on(second).unwrap(), 2, "the queued closure ran");
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        }
        other => panic!("unknown scenario {other:?}"),
    }
    drop(p);
    println!("ok: {scenario}");
}
