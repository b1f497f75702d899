//! `pool::time`: never early, rarely late, many timers at once, timeout,
//! interval, cancellation, timers outliving their pool.

use futures::{FutureExt, StreamExt};
use pool::Builder;
use std::time::{Duration, Instant};
use tests::watchdog;

fn pool(workers: usize) -> pool::Pool {
    Builder::new().worker_threads(workers).build().unwrap()
}

#[test]
fn sleep_is_never_early_and_rarely_late() {
    watchdog("sleep lateness", 30, || {
        let p = pool(2);
        let mut lateness: Vec<Duration> = p.block_on(async {
            let mut v = Vec::new();
            for _ in 0..15 {
                let start = Instant::now();
                pool::time::sleep(Duration::from_millis(30)).await;
                let took = start.elapsed();
                assert!(took >= Duration::from_millis(30), "early: {took:?}");
                v.push(took - Duration::from_millis(30));
            }
            v
        });
        lateness.sort();
        let median = lateness[lateness.len() / 2];
        assert!(
            median < Duration::from_millis(5),
            "median lateness {median:?} (all: {lateness:?})"
        );
    });
}

#[test]
fn ten_thousand_concurrent_timers_all_fire_on_time() {
    watchdog("10 000 timers", 60, || {
        let p = pool(2);
        p.block_on(async {
            let start = Instant::now();
            let tasks: Vec<_> = (0..10_000u64)
                .map(|i| {
                    let d = Duration::from_millis(1 + i % 100);
                    pool::spawn(async move {
                        let t0 = Instant::now();
                        pool::time::sleep(d).await;
                        let took = t0.elapsed();
                        assert!(took >= d, "timer {i} early: {took:?} < {d:?}");
                        took - d
                    })
                })
                .collect();
            let mut late = Vec::new();
            for t in tasks {
                late.push(t.await.unwrap());
            }
            late.sort();
            let p99 = late[late.len() * 99 / 100];
            assert!(
                p99 < Duration::from_millis(50),
                "p99 lateness {p99:?} (max {:?})",
                late.last()
            );
            assert!(start.elapsed() < Duration::from_secs(5));
        });
    });
}

#[test]
fn timeout_gives_the_output_or_elapsed() {
    watchdog("timeout", 30, || {
        let p = pool(2);
        p.block_on(async {
            let ok = pool::time::timeout(Duration::from_secs(5), async { 42 }).await;
            assert_eq!(ok, Ok(42));
            let start = Instant::now();
            let err = pool::time::timeout(
                Duration::from_millis(20),
                pool::time::sleep(Duration::from_secs(60)),
            )
            .await
            .unwrap_err();
            assert!(start.elapsed() >= Duration::from_millis(20));
            assert_eq!(err.to_string(), "deadline has elapsed");
        });
    });
}

#[test]
fn interval_ticks_at_once_then_every_period() {
    watchdog("interval", 30, || {
        let p = pool(2);
        p.block_on(async {
            let start = pool::time::Instant::now();
            let ticks: Vec<pool::time::Instant> = pool::time::interval(Duration::from_millis(10))
                .take(5)
                .collect()
                .await;
            assert!(
                ticks[0] - start < Duration::from_millis(5),
                "first tick late"
            );
            for w in ticks.windows(2) {
                assert_eq!(w[1] - w[0], Duration::from_millis(10));
            }
            assert!(start.elapsed() >= Duration::from_millis(40));
        });
    });
}

#[test]
#[should_panic(expected = "the period must be longer than zero")]
fn a_zero_interval_is_a_clear_panic() {
    let _ = pool::time::interval(Duration::ZERO);
}

#[test]
fn a_dropped_sleep_is_cancelled_and_an_earlier_one_still_fires() {
    watchdog("cancel", 30, || {
        let p = pool(1);
        p.block_on(async {
            // The only worker sleeps in the driver until the long timer...
            let long = pool::spawn(pool::time::sleep(Duration::from_secs(3600)));
            pool::time::sleep(Duration::from_millis(20)).await;
            // ...and a shorter one inserted later must unpark it.
            let start = Instant::now();
            pool::spawn(pool::time::sleep(Duration::from_millis(20)))
                .await
                .unwrap();
            let took = start.elapsed();
            assert!(took < Duration::from_secs(1), "took {took:?}");
            long.abort();
            assert!(long.await.unwrap_err().is_cancelled());
        });
    });
}

#[test]
fn a_timer_outliving_its_pool_completes_at_once() {
    watchdog("outliving timer", 30, || {
        let p = pool(2);
        // Made while the pool is current, so it is that pool's timer.
        let sleep = p.block_on(
            std::future::ready(()).map(|()| pool::time::sleep(Duration::from_secs(3600))),
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            pool::block_on(sleep);
            tx.send(()).unwrap();
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(p);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("a timer pending when its pool was dropped never completed");
        waiter.join().unwrap();
    });
}
