//! The hand-over of a worker's timers to the driver's sleeper
//! (`time/deadlines.rs`), with the real `Deadlines`: a worker's own timers
//! are its own to fire while it is awake, so the sleeper waits for them
//! only `slack` late; once the worker goes idle, the sleeper must wait no
//! longer than their deadline, or be unparked.
//!
//! The worker registers a timer (its shard's earliest deadline, then the
//! insert's check) and goes idle (`leave`) while the sleeper records its
//! wait (`park_until`). Whatever the interleaving, either one of the
//! worker's checks unparked the sleeper, or the wait the sleeper recorded
//! ends by the deadline.
//!
//! Teeth (`scripts/loom`): `POOL_LOOM_TOOTH=leave_reads_first` has `leave`
//! read the sleeper's wait before it marks the shard unattended, and loom
//! must find the sleeper waiting the slack past the deadline.
//!
//! A timer of the shared shard (the threads that are not workers: nobody
//! attends it) is handed over by its insert alone.

use crate::sync::{AtomicBool, Ordering};
use crate::time::deadlines::Deadlines;
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::AtomicUsize;

const SLACK: u64 = 10;
const DEADLINE: u64 = 100;

/// Run `register` (on the worker's or another thread) against a sleeper
/// that parks meanwhile; the sleeper's wait if nobody unparked it.
fn sleeper_wait(register: fn(&Deadlines) -> bool) -> Option<Option<u64>> {
    let deadlines = Arc::new(Deadlines::new(2, SLACK));
    // Shard 0 is a worker's, awake; shard 1 the shared one.
    let unparked = Arc::new(AtomicBool::new(false));
    let registrar = {
        let deadlines = Arc::clone(&deadlines);
        let unparked = Arc::clone(&unparked);
        thread::spawn(move || {
            if register(&deadlines) {
                unparked.store(true, Ordering::Relaxed);
            }
        })
    };
    let wait = deadlines.park_until();
    registrar.join().unwrap();
    (!unparked.load(Ordering::Relaxed)).then_some(wait)
}

/// Explore `register` against the sleeper's park: either it unparked the
/// sleeper, or the sleeper's recorded wait ends by `DEADLINE`.
fn explore(name: &'static str, explored: &'static AtomicUsize, register: fn(&Deadlines) -> bool) {
    super::model(name, explored, move || {
        explored.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(wait) = sleeper_wait(register) {
            assert!(
                wait.is_some_and(|until| until <= DEADLINE),
                "{name}: a timer at {DEADLINE}, nobody unparked the sleeper, and it \
                 waits until {wait:?}"
            );
        }
    });
}

#[test]
fn a_timer_of_a_worker_that_goes_idle_is_waited_for_no_later_than_its_deadline() {
    static EXPLORED: AtomicUsize = AtomicUsize::new(0);
    explore("deadlines (a worker going idle)", &EXPLORED, |deadlines| {
        // The insert, under the shard's lock, then its check.
        assert!(deadlines.set_earliest(0, DEADLINE));
        let by_insert = deadlines.inserted(0, DEADLINE);
        // The worker runs out of work.
        deadlines.leave(0) | by_insert
    });
}

#[test]
fn a_timer_of_the_shared_shard_is_waited_for_no_later_than_its_deadline() {
    static EXPLORED: AtomicUsize = AtomicUsize::new(0);
    explore("deadlines (the shared shard)", &EXPLORED, |deadlines| {
        assert!(deadlines.set_earliest(1, DEADLINE));
        deadlines.inserted(1, DEADLINE)
    });
}
