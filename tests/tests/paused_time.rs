//! A paused clock on a multi-worker pool (API "Time you can stop"): it
//! jumps to the earliest timer only when the pool is quiet, so sleeps take
//! no real time, none ends early, and nothing that is still running (a
//! task, a blocking closure, I/O in flight) sees a timer fire first.
//!
//! The tests of what holds the clock (a thousand sleeps, blocking closures,
//! busy tasks, the `block_on` thread, loopback I/O, `advance`) live beside
//! the clock, in `executor/src/time/tests.rs`: `cargo test --workspace`
//! runs them with `tokio-compat` on (the driver's sleeper blocks in its
//! tokio runtime), and `.ci/run` once more with pool's own features (it
//! blocks in the driver).

use futures::StreamExt;
use pool::time::{self, Instant};
use pool::Builder;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tests::watchdog;

fn paused(workers: usize) -> pool::Pool {
    Builder::new()
        .worker_threads(workers)
        .start_paused(true)
        .build()
        .unwrap()
}

#[test]
fn timers_fire_in_deadline_order_across_workers() {
    watchdog("paused deadline order", 30, || {
        let p = paused(4);
        let order = p.block_on(async {
            let order = Arc::new(Mutex::new(Vec::new()));
            // Registered in a scrambled order, on tasks spread over workers.
            let handles: Vec<_> = (0..200u64)
                .map(|i| (i * 7919) % 200)
                .map(|k| {
                    let order = order.clone();
                    pool::spawn(async move {
                        time::sleep(Duration::from_secs(1 + k)).await;
                        order.lock().unwrap().push(k);
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            Arc::try_unwrap(order).unwrap().into_inner().unwrap()
        });
        let sorted: Vec<u64> = (0..200).collect();
        assert_eq!(order, sorted, "timers fired out of deadline order");
    });
}

#[test]
fn timeout_and_interval_run_on_the_paused_clock() {
    watchdog("paused timeout and interval", 30, || {
        let p = paused(2);
        p.block_on(async {
            let start = Instant::now();
            let r = time::timeout(Duration::from_secs(30), std::future::pending::<()>()).await;
            assert!(r.is_err());
            assert_eq!(start.elapsed(), Duration::from_secs(30));

            let quick = time::timeout(
                Duration::from_secs(30),
                time::sleep(Duration::from_secs(29)),
            )
            .await;
            assert!(quick.is_ok(), "29 s of sleep inside a 30 s timeout");
            assert_eq!(start.elapsed(), Duration::from_secs(59));

            let t0 = Instant::now();
            let ticks: Vec<Instant> = time::interval(Duration::from_secs(60))
                .take(4)
                .collect()
                .await;
            assert_eq!(ticks[0], t0, "the first tick is at once");
            for w in ticks.windows(2) {
                assert_eq!(w[1] - w[0], Duration::from_secs(60));
            }
            assert_eq!(Instant::now() - t0, Duration::from_secs(180));
        });
    });
}

#[test]
fn a_running_pool_keeps_real_time() {
    watchdog("real time", 30, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        p.block_on(async {
            let real = std::time::Instant::now();
            let start = Instant::now();
            time::sleep(Duration::from_millis(30)).await;
            assert!(real.elapsed() >= Duration::from_millis(30), "not real time");
            let d = start.elapsed();
            assert!(d >= Duration::from_millis(30) && d < Duration::from_secs(5));
        });
    });
}

#[test]
fn pause_then_resume_goes_on_from_where_it_stood() {
    watchdog("pause and resume", 30, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        p.block_on(async {
            time::pause();
            let start = Instant::now();
            time::sleep(Duration::from_secs(7200)).await;
            assert_eq!(start.elapsed(), Duration::from_secs(7200));
            time::resume();
            let real = std::time::Instant::now();
            let at = Instant::now();
            time::sleep(Duration::from_millis(20)).await;
            assert!(
                real.elapsed() >= Duration::from_millis(20),
                "resumed: real time"
            );
            assert!(at.elapsed() >= Duration::from_millis(20));
            assert!(Instant::now() - start >= Duration::from_secs(7200));
        });
    });
}

#[test]
fn misuse_panics_say_what_to_do() {
    let outside = std::panic::catch_unwind(time::pause).unwrap_err();
    let msg = text(&*outside);
    assert!(
        msg.contains("outside a pool") && msg.contains("start_paused"),
        "{msg}"
    );
    let p = Builder::new().worker_threads(1).build().unwrap();
    let running = p.block_on(async { pool::spawn(async { time::resume() }).await.unwrap_err() });
    let msg = text(&*running.into_panic());
    assert!(
        msg.contains("not paused") && msg.contains("pause()"),
        "{msg}"
    );
    let advance = p.block_on(async {
        pool::spawn(time::advance(Duration::from_secs(1)))
            .await
            .unwrap_err()
    });
    let msg = text(&*advance.into_panic());
    assert!(
        msg.contains("advance") && msg.contains("not paused"),
        "{msg}"
    );
}

fn text(payload: &(dyn std::any::Any + Send)) -> String {
    match payload.downcast_ref::<String>() {
        Some(s) => s.clone(),
        None => payload.downcast_ref::<&str>().unwrap().to_string(),
    }
}

#[pool::test(start_paused = true, worker_threads = 4)]
async fn the_test_macro_starts_paused() {
    let real = std::time::Instant::now();
    let start = Instant::now();
    let hours: Vec<_> = (1..=4u64)
        .map(|h| pool::spawn(time::sleep(Duration::from_secs(3600 * h))))
        .collect();
    for h in hours {
        h.await.unwrap();
    }
    assert_eq!(start.elapsed(), Duration::from_secs(4 * 3600));
    assert!(real.elapsed() < Duration::from_secs(5));
}
