//! The packed counters: concurrent updates of one field never disturb the
//! others.

use crate::sleep::counters::{AtomicCounters, JobsEventCounter};
use crate::sync::Ordering;
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::AtomicUsize;

#[test]
fn concurrent_thread_counts_and_jec_never_corrupt_a_neighbour() {
    static N: AtomicUsize = AtomicUsize::new(0);
    super::model("counters_fields", &N, || {
        let c = Arc::new(AtomicCounters::new());
        // Worker A goes idle and falls asleep; its waker takes it off.
        let a = {
            let c = c.clone();
            thread::spawn(move || {
                c.add_inactive_thread();
                loop {
                    let now = c.load(Ordering::SeqCst);
                    if c.try_add_sleeping_thread(now) {
                        break;
                    }
                }
                c.sub_sleeping_thread();
                c.sub_inactive_thread();
            })
        };
        // Worker B goes idle and back, twice.
        let b = {
            let c = c.clone();
            thread::spawn(move || {
                for _ in 0..2 {
                    c.add_inactive_thread();
                    c.sub_inactive_thread();
                }
            })
        };
        // Posters and sleepy workers flip the JEC.
        c.increment_jobs_event_counter_if(JobsEventCounter::is_sleepy);
        c.increment_jobs_event_counter_if(JobsEventCounter::is_active);
        c.increment_jobs_event_counter_if(JobsEventCounter::is_sleepy);
        a.join().unwrap();
        b.join().unwrap();
        let end = c.load(Ordering::SeqCst);
        assert_eq!(end.sleeping_threads(), 0, "{end:?}");
        assert_eq!(end.inactive_threads(), 0, "{end:?}");
        // Three flips from 0, each made by this thread in order: 1, 2, 3.
        assert!(end.jobs_counter().is_active(), "{end:?}");
    });
}
