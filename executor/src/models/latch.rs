//! `CoreLatch`: a `set` racing each step of the owner's sleep (UNSET, SLEEPY,
//! SLEEPING): the owner always wakes, or never sleeps.

use crate::sleep::latch::ThreadLatch;
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::AtomicUsize;

#[test]
fn set_racing_the_owners_sleep_always_wakes_it() {
    static N: AtomicUsize = AtomicUsize::new(0);
    super::model("latch_set_vs_sleep", &N, || {
        let latch = Arc::new(ThreadLatch::new());
        let setter = {
            let latch = latch.clone();
            thread::spawn(move || latch.set())
        };
        // The owner goes through get_sleepy, the lock, fall_asleep and the
        // condvar; the set may land before, between or after any of them.
        latch.wait();
        assert!(latch.latch.probe());
        setter.join().unwrap();
    });
}

#[test]
fn a_reused_latch_never_loses_an_event_when_reset_before_the_check() {
    // The way `block_on` reuses its latch: reset, then look at the state
    // (poll), then wait. Two events, each published before its set.
    static N: AtomicUsize = AtomicUsize::new(0);
    super::model("latch_reuse", &N, || {
        let latch = Arc::new(ThreadLatch::new());
        let events = Arc::new(crate::sync::AtomicUsize::new(0));
        let setter = {
            let (latch, events) = (latch.clone(), events.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    events.fetch_add(1, crate::sync::Ordering::Release);
                    latch.set();
                }
            })
        };
        loop {
            latch.latch.reset();
            if events.load(crate::sync::Ordering::Acquire) == 2 {
                break;
            }
            latch.wait();
        }
        setter.join().unwrap();
    });
}
