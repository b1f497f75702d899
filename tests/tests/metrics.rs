//! The operator's metrics: each moves as its definition says under a
//! workload that forces it (`Metrics`' gauges and totals, `worker_metrics`,
//! the poll-time histogram).

use std::sync::mpsc;
use std::time::{Duration, Instant};
use tests::{wait_for, wait_until_asleep, watchdog};

const WAIT: Duration = Duration::from_secs(10);

fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Wait until every worker sleeps, by the per-worker counts: then no worker
/// is in a busy period, and the snapshots are exact.
fn wait_until_workers_asleep(pool: &pool::Pool) {
    wait_until_asleep(pool);
    wait_for("every worker asleep by its own counts", WAIT, || {
        pool.worker_metrics()
            .iter()
            .all(|w| w.sleeps == w.wakeups + 1)
    });
}

#[test]
fn alive_tasks_count_spawned_tasks_until_their_futures_are_dropped() {
    watchdog("alive tasks", 30, || {
        let pool = tests::pool(2);
        assert_eq!(pool.metrics().alive_tasks, 0);
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let rx = futures::future::FutureExt::shared(rx);
        let waiting: Vec<_> = (0..10)
            .map(|_| {
                let rx = rx.clone();
                pool.spawn(async move {
                    let _ = rx.await;
                })
            })
            .collect();
        assert_eq!(pool.metrics().alive_tasks, 10);
        // A blocking closure is not a task of the workers.
        let (release, held) = mpsc::channel::<()>();
        let blocking = pool.spawn_blocking(move || held.recv().ok());
        assert_eq!(pool.metrics().alive_tasks, 10);
        // An aborted task is gone once its future is dropped.
        waiting[0].abort();
        wait_for("the aborted task dropped", WAIT, || {
            pool.metrics().alive_tasks == 9
        });
        drop(tx);
        for handle in waiting {
            let _ = pool.block_on(handle);
        }
        assert_eq!(pool.metrics().alive_tasks, 0);
        release.send(()).unwrap();
        pool.block_on(blocking).unwrap();
        assert_eq!(pool.metrics().alive_tasks, 0);
    });
}

#[test]
fn a_held_worker_makes_the_injector_depth_grow() {
    watchdog("injector depth", 30, || {
        let pool = tests::pool(1);
        let (started_tx, started) = mpsc::channel();
        let (release, held) = mpsc::channel::<()>();
        let hog = pool.spawn(async move {
            started_tx.send(()).unwrap();
            held.recv().unwrap();
        });
        started.recv().unwrap();
        assert_eq!(pool.metrics().injector_depth, 0);
        let queued: Vec<_> = (0..5).map(|i| pool.spawn(async move { i })).collect();
        assert_eq!(pool.metrics().injector_depth, 5);
        release.send(()).unwrap();
        pool.block_on(hog).unwrap();
        let sum: i32 = queued.into_iter().map(|h| pool.block_on(h).unwrap()).sum();
        assert_eq!(sum, 10);
        assert_eq!(pool.metrics().injector_depth, 0);
    });
}

#[test]
fn closures_waiting_for_a_blocking_thread_are_the_blocking_queue_depth() {
    watchdog("blocking queue depth", 30, || {
        let pool = pool::Builder::new()
            .worker_threads(1)
            .max_blocking_threads(1)
            .build()
            .unwrap();
        let (started_tx, started) = mpsc::channel();
        let (release, held) = mpsc::channel::<()>();
        let first = pool.spawn_blocking(move || {
            started_tx.send(()).unwrap();
            held.recv().unwrap();
        });
        started.recv().unwrap();
        let waiting: Vec<_> = (0..3).map(|i| pool.spawn_blocking(move || i)).collect();
        let m = pool.metrics();
        assert_eq!((m.blocking_threads, m.blocking_queue_depth), (1, 3));
        release.send(()).unwrap();
        pool.block_on(first).unwrap();
        for h in waiting {
            pool.block_on(h).unwrap();
        }
        assert_eq!(pool.metrics().blocking_queue_depth, 0);
    });
}

#[test]
fn tasks_spawned_in_a_poll_are_its_workers_local_queue_depth() {
    watchdog("local queue depth", 30, || {
        let pool = tests::pool(1);
        let depth = pool
            .block_on(pool.spawn(async {
                let children: Vec<_> = (0..5).map(|i| pool::spawn(async move { i })).collect();
                let depth = pool::Handle::current().worker_metrics()[0].local_queue_depth;
                for child in children {
                    child.await.unwrap();
                }
                depth
            }))
            .unwrap();
        assert_eq!(depth, 5);
        wait_until_workers_asleep(&pool);
        assert_eq!(pool.worker_metrics()[0].local_queue_depth, 0);
    });
}

#[test]
fn a_15_ms_poll_lands_in_a_bucket_above_10_ms() {
    watchdog("poll-time histogram", 30, || {
        // A worker descheduled in the middle of an empty poll (CI runs the
        // tests side by side on 2 vCPUs) makes that poll long too: seen
        // once, an empty poll in the 16-32 ms bucket. Such a run cannot say
        // which long poll was the 15 ms one, so it is tried again, up to 3
        // times; the last try is asserted whatever it saw.
        const TRIES: usize = 3;
        for attempt in 1..=TRIES {
            let pool = pool::Builder::new()
                .worker_threads(2)
                .poll_time_histogram(true)
                .build()
                .unwrap();
            pool.block_on(pool.spawn(async { spin(Duration::from_millis(15)) }))
                .unwrap();
            for _ in 0..100 {
                pool.block_on(pool.spawn(async {})).unwrap();
            }
            wait_until_workers_asleep(&pool);
            let histogram = pool.poll_time_histogram();
            let long_polls: u64 = histogram
                .buckets
                .iter()
                .filter(|b| b.le > Duration::from_millis(10))
                .map(|b| b.count)
                .sum();
            if long_polls > 1 && attempt < TRIES {
                continue;
            }
            check_one_long_poll(&pool, &histogram);
            return;
        }
    });
}

/// The histogram of `a_15_ms_poll_lands_in_a_bucket_above_10_ms`: one
/// poll above 10 ms, in a bucket of 15 ms or more, and most polls short.
fn check_one_long_poll(pool: &pool::Pool, histogram: &pool::Histogram) {
    assert_eq!(histogram.total(), pool.metrics().polls);
    let long: Vec<_> = histogram
        .buckets
        .iter()
        .filter(|b| b.count > 0 && b.le > Duration::from_millis(10))
        .collect();
    assert_eq!(long.len(), 1, "{histogram:?}");
    assert_eq!(long[0].count, 1, "{histogram:?}");
    assert!(long[0].le >= Duration::from_millis(15), "{histogram:?}");
    // Empty polls are short: most land below 1 ms.
    let short: u64 = histogram
        .buckets
        .iter()
        .filter(|b| b.le <= Duration::from_millis(1))
        .map(|b| b.count)
        .sum();
    assert!(short >= 50, "{histogram:?}");
}

#[test]
fn without_the_builder_flag_the_histogram_stays_empty() {
    watchdog("histogram off", 30, || {
        let pool = tests::pool(2);
        for _ in 0..10 {
            pool.block_on(pool.spawn(async {})).unwrap();
        }
        let histogram = pool.poll_time_histogram();
        assert_eq!(histogram.buckets.len(), 22);
        assert_eq!(histogram.total(), 0);
        assert!(pool.metrics().polls >= 10);
    });
}

#[test]
fn per_worker_figures_add_up_to_the_pools_in_a_quiescent_pool() {
    watchdog("per-worker sums", 60, || {
        let pool = tests::pool(2);
        let handles: Vec<_> = (0..200)
            .map(|_| pool.spawn(async { spin(Duration::from_micros(50)) }))
            .collect();
        for h in handles {
            pool.block_on(h).unwrap();
        }
        wait_until_workers_asleep(&pool);
        let m = pool.metrics();
        let workers = pool.worker_metrics();
        assert_eq!(workers.len(), 2);
        assert_eq!(workers.iter().map(|w| w.polls).sum::<u64>(), m.polls);
        assert_eq!(workers.iter().map(|w| w.busy).sum::<Duration>(), m.busy);
        assert_eq!(workers.iter().map(|w| w.steals).sum::<u64>(), m.steals);
        assert_eq!(workers.iter().map(|w| w.sleeps).sum::<u64>(), m.sleeps);
        // 200 polls of 50 us: at least 10 ms of busy time in all.
        assert!(m.busy >= Duration::from_millis(10), "{m:?}");
        for w in &workers {
            assert_eq!(w.local_queue_depth, 0);
            assert!(w.sleeps >= 1, "{w:?}");
        }
    });
}

#[test]
fn busy_time_counts_a_poll_under_way_and_stays_below_wall_times_workers() {
    watchdog("busy time", 60, || {
        let built = Instant::now();
        let pool = tests::pool(2);
        wait_until_workers_asleep(&pool);
        assert!(pool.metrics().busy < Duration::from_millis(5));
        let (started_tx, started) = mpsc::channel();
        let long = pool.spawn(async move {
            started_tx.send(()).unwrap();
            spin(Duration::from_millis(300));
        });
        started.recv().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // The poll has not ended, yet its time so far counts.
        let during = pool.metrics().busy;
        assert!(
            during >= Duration::from_millis(90),
            "busy {during:?} after 100 ms"
        );
        pool.block_on(long).unwrap();
        wait_until_workers_asleep(&pool);
        let after = pool.metrics().busy;
        assert!(after >= Duration::from_millis(290), "busy {after:?}");
        assert!(after >= during);
        let limit = built.elapsed() * 2;
        assert!(
            after <= limit,
            "busy {after:?} above wall x workers {limit:?}"
        );
        // Asleep, it stays put. (To within tokio's own bookkeeping
        // (`tokio-compat`): a worker asleep in its runtime is counted asleep
        // by the pool a few microseconds before tokio's scheduler has added
        // its last busy period, 10 us at most on this machine. Counting the
        // sleep itself as busy would add 100 ms here.)
        std::thread::sleep(Duration::from_millis(50));
        let asleep = pool.metrics().busy;
        assert!(
            asleep >= after && asleep - after < Duration::from_millis(1),
            "busy went from {after:?} to {asleep:?} while every worker slept"
        );
    });
}

#[test]
fn busy_time_goes_on_through_a_block_on_inside_a_task() {
    watchdog("busy time around a nested block_on", 60, || {
        let pool = tests::pool(1);
        wait_until_workers_asleep(&pool);
        let before = pool.metrics().busy;
        pool.block_on(pool.spawn(async {
            spin(Duration::from_millis(40));
            // Waits inside the poll, running nothing: idle meanwhile.
            let (tx, rx) = futures::channel::oneshot::channel();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                tx.send(()).unwrap();
            });
            pool::block_on(rx).unwrap();
            spin(Duration::from_millis(40));
        }))
        .unwrap();
        wait_until_workers_asleep(&pool);
        let busy = pool.metrics().busy - before;
        assert!(
            busy >= Duration::from_millis(75),
            "busy {busy:?}: a spin lost"
        );
        assert!(
            busy < Duration::from_millis(170),
            "busy {busy:?}: the idle wait counted"
        );
    });
}

#[test]
fn polls_that_spend_the_budget_are_forced_yields() {
    watchdog("forced yields", 30, || {
        let pool = tests::pool(1);
        pool.block_on(pool.spawn(async {
            for _ in 0..10 {
                pool::consume_budget().await;
            }
        }))
        .unwrap();
        assert_eq!(pool.metrics().forced_yields, 0);
        pool.block_on(pool.spawn(async {
            for _ in 0..1_000 {
                pool::consume_budget().await;
            }
        }))
        .unwrap();
        // 1 000 units at 128 a poll: 7 polls end with the budget spent.
        assert_eq!(pool.metrics().forced_yields, 7);
    });
}

#[test]
fn readiness_the_driver_delivers_counts_as_io_events() {
    watchdog("io events", 30, || {
        let pool = tests::pool(2);
        assert_eq!(pool.metrics().io_events, 0);
        let echoed = pool.block_on(async {
            use futures::{AsyncReadExt, AsyncWriteExt};
            let listener = pool::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = pool::spawn(async move {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = [0; 4];
                for _ in 0..10 {
                    s.read_exact(&mut buf).await.unwrap();
                    s.write_all(&buf).await.unwrap();
                }
            });
            let mut c = pool::net::TcpStream::connect(addr).await.unwrap();
            let mut buf = [0; 4];
            for i in 0..10u32 {
                c.write_all(&i.to_le_bytes()).await.unwrap();
                c.read_exact(&mut buf).await.unwrap();
                assert_eq!(u32::from_le_bytes(buf), i);
            }
            server.await.unwrap();
            10
        });
        assert_eq!(echoed, 10);
        let events = pool.metrics().io_events;
        assert!(events >= 10, "{events} events for 10 round trips");
    });
}

#[test]
fn each_worker_counts_its_own_sleeps_and_wakeups() {
    watchdog("per-worker sleeps", 30, || {
        let pool = tests::pool(2);
        wait_until_workers_asleep(&pool);
        let before = pool.worker_metrics();
        for _ in 0..20 {
            pool.block_on(pool.spawn(async {})).unwrap();
            wait_until_workers_asleep(&pool);
        }
        let after = pool.worker_metrics();
        let woke: u64 = after
            .iter()
            .zip(&before)
            .map(|(a, b)| a.wakeups - b.wakeups)
            .sum();
        assert!(
            woke >= 20,
            "20 spawns on a sleeping pool woke workers {woke} times"
        );
        for w in &after {
            assert_eq!(w.sleeps, w.wakeups + 1, "{w:?}");
        }
    });
}

#[test]
fn tokio_tasks_a_worker_runs_while_idle_in_the_pools_sense_are_its_busy_time() {
    watchdog("busy time of tokio's tasks", 60, || {
        let pool = tests::pool(1);
        wait_until_workers_asleep(&pool);
        let before = pool.metrics().busy;
        let (done_tx, done) = mpsc::channel();
        // The pool task ends at once; the tokio task it spawned runs on the
        // worker's runtime afterwards, while the worker searches idle or
        // sleeps in that runtime: not a busy period of the pool's own.
        pool.block_on(pool.spawn(async move {
            tokio::spawn(async move {
                spin(Duration::from_millis(100));
                done_tx.send(()).unwrap();
            });
        }))
        .unwrap();
        done.recv_timeout(WAIT).expect("the tokio task ran");
        // Counted while the worker still sleeps in its runtime.
        wait_for("tokio's 100 ms counted as busy", WAIT, || {
            pool.metrics().busy - before >= Duration::from_millis(90)
        });
        let workers = pool.worker_metrics();
        assert!(
            workers[0].busy - before >= Duration::from_millis(90),
            "{workers:?}"
        );
        // tokio's tasks are the runtime's own, not the pool's.
        assert_eq!(pool.metrics().spawned, 1);
    });
}
