//! The load signal (`Metrics::schedule_delay`, `Metrics::queued_tasks`,
//! `Handle::schedule_delay`): it rises when tasks wait for a worker, shows a
//! worker stuck in a long poll while the poll lasts, and falls to zero once
//! the pool is idle. The bounds are lower bounds a slower machine only
//! exceeds, or exact zeros of an idle pool.

use pool::Builder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tests::{wait_for, wait_until_asleep, watchdog};

/// Spin for `d` without leaving the poll.
fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn the_delay_rises_while_tasks_wait_their_turn_and_is_zero_when_idle() {
    watchdog("schedule_delay under a queue", 60, || {
        let p = Builder::new().worker_threads(1).build().unwrap();
        let handle = p.handle();
        // 40 tasks that each poll for 250 us and yield, 20 times: on one
        // worker, a yielded task waits for the 39 others, near 10 ms.
        let tasks: Vec<_> = (0..40)
            .map(|_| {
                p.spawn(async {
                    for _ in 0..20 {
                        spin(Duration::from_micros(250));
                        pool::yield_now().await;
                    }
                })
            })
            .collect();
        let (mut max_delay, mut max_queued, mut cheap_max) = (Duration::ZERO, 0, Duration::ZERO);
        while !tasks.iter().all(|t| t.is_finished()) {
            let m = p.metrics();
            max_delay = max_delay.max(m.schedule_delay);
            max_queued = max_queued.max(m.queued_tasks);
            cheap_max = cheap_max.max(handle.schedule_delay());
            std::thread::sleep(Duration::from_millis(2));
        }
        for t in tasks {
            p.block_on(t).unwrap();
        }
        assert!(
            max_delay >= Duration::from_millis(3),
            "40 tasks queued on one worker, each polling 250 us: the delay read at most {max_delay:?}"
        );
        assert!(cheap_max >= Duration::from_millis(3), "{cheap_max:?}");
        assert!(max_queued >= 20, "queued_tasks read at most {max_queued}");
        // Idle: nothing queued, and after 100 ms without a run, no delay.
        wait_until_asleep(&p);
        std::thread::sleep(Duration::from_millis(150));
        let m = p.metrics();
        assert_eq!(m.queued_tasks, 0);
        assert_eq!(m.schedule_delay, Duration::ZERO, "an idle pool");
        assert_eq!(handle.schedule_delay(), Duration::ZERO);
    });
}

#[test]
fn a_worker_stuck_in_a_poll_shows_a_rising_delay_while_it_lasts() {
    watchdog("schedule_delay of a stuck worker", 60, || {
        let p = Builder::new().worker_threads(1).build().unwrap();
        let handle = p.handle();
        let stuck = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stuck);
        let blocker = p.spawn(async move {
            flag.store(true, Ordering::SeqCst);
            // A blocking call inside a task: the worker is gone for 400 ms.
            std::thread::sleep(Duration::from_millis(400));
        });
        wait_for("the blocker's poll", Duration::from_secs(10), || {
            stuck.load(Ordering::SeqCst)
        });
        // The first read asks for a sample; the next wake takes it.
        handle.schedule_delay();
        let waiting: Vec<_> = (0..5).map(|_| p.spawn(async {})).collect();
        std::thread::sleep(Duration::from_millis(150));
        let m = p.metrics();
        assert!(
            m.schedule_delay >= Duration::from_millis(100),
            "five tasks have waited 150 ms behind a stuck worker: the delay read {:?}",
            m.schedule_delay
        );
        assert!(m.queued_tasks >= 5, "{}", m.queued_tasks);
        p.block_on(blocker).unwrap();
        for t in waiting {
            p.block_on(t).unwrap();
        }
    });
}
