//! The paused clock on a pool whose driver's sleeper blocks in the driver
//! itself (no `tokio-compat`; `tests/tests/paused_time.rs` runs the full
//! set where the workspace turns `tokio-compat` on, and so the sleeper
//! blocks in its tokio runtime). `.ci/run` runs these with the package's
//! own features: `cargo test -p pool --lib time::tests`.
//!
//! And the timer shards (`timers.rs`): a timer registered and fired on
//! one awake worker takes no other thread's lock.

use super::{sleep, timeout};
use crate::builder::Builder;
use crate::free_fns::{spawn, spawn_local};
use crate::scheduler::coop::yield_now;
use crate::time::instant::advance;
use crate::time::instant::Instant;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;

/// Run `f` on a thread of its own; fail if it takes longer than `secs`.
pub(crate) fn watchdog(what: &str, secs: u64, f: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let t = std::thread::spawn(move || {
        f();
        let _ = done.send(());
    });
    match finished.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => t.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(t.join().unwrap_err())
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: not done after {secs} s"),
    }
}

/// Busy for `d` of real time.
fn spin(d: Duration) {
    let real = std::time::Instant::now();
    while real.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn paused(workers: usize) -> crate::pool::Pool {
    Builder::new()
        .worker_threads(workers)
        .start_paused(true)
        .build()
        .unwrap()
}

#[test]
fn a_thousand_paused_sleeps_take_no_real_time_and_none_is_early() {
    watchdog("a thousand paused sleeps", 30, || {
        let p = paused(4);
        let real = std::time::Instant::now();
        p.block_on(async {
            let start = Instant::now();
            let handles: Vec<_> = (0..1000u64)
                .map(|i| {
                    crate::free_fns::spawn(async move {
                        let d = Duration::from_millis(3_600 * (i + 1));
                        let before = Instant::now();
                        sleep(d).await;
                        assert!(before.elapsed() >= d, "sleep {i} ended early");
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            assert!(start.elapsed() >= Duration::from_secs(3600));
        });
        assert!(
            real.elapsed() < Duration::from_secs(5),
            "{:?}",
            real.elapsed()
        );
    });
}

#[test]
fn blocking_closures_busy_tasks_and_the_block_on_thread_hold_the_clock() {
    watchdog("holds", 30, || {
        let p = paused(2);
        p.block_on(async {
            let start = Instant::now();
            let timer = crate::free_fns::spawn(sleep(Duration::from_secs(60)));
            let blocking = crate::free_fns::spawn_blocking(|| {
                std::thread::sleep(Duration::from_millis(100));
                Instant::now()
            });
            assert_eq!(blocking.await.unwrap(), start, "a blocking closure");
            let busy = crate::free_fns::spawn(async {
                spin(Duration::from_millis(50));
                Instant::now()
            });
            assert_eq!(busy.await.unwrap(), start, "a busy task");
            // This future, busy on the block_on thread.
            spin(Duration::from_millis(50));
            assert_eq!(Instant::now(), start, "the block_on thread");
            timer.await.unwrap();
            assert_eq!(start.elapsed(), Duration::from_secs(60));
        });
    });
}

#[test]
fn loopback_io_completes_inside_paused_timeouts() {
    watchdog("loopback in paused timeouts", 60, || {
        let p = paused(2);
        p.block_on(async {
            use futures::{AsyncReadExt, AsyncWriteExt};
            let listener = crate::net::tcp::TcpListener::bind("127.0.0.1:0")
                .await
                .unwrap();
            let addr = listener.local_addr().unwrap();
            let server = crate::free_fns::spawn(async move {
                loop {
                    let (mut s, _) = listener.accept().await.unwrap();
                    crate::free_fns::spawn(async move {
                        let mut buf = [0u8; 4];
                        while s.read_exact(&mut buf).await.is_ok() {
                            s.write_all(&buf).await.unwrap();
                        }
                    });
                }
            });
            for i in 0..100u32 {
                let round_trip = async {
                    let mut c = crate::net::tcp::TcpStream::connect(addr).await.unwrap();
                    c.write_all(&i.to_le_bytes()).await.unwrap();
                    let mut back = [0u8; 4];
                    c.read_exact(&mut back).await.unwrap();
                    u32::from_le_bytes(back)
                };
                let r = timeout(Duration::from_secs(1), round_trip).await;
                assert_eq!(r, Ok(i), "round trip {i} timed out on the paused clock");
            }
            server.abort();
        });
    });
}

#[test]
fn advance_moves_by_exactly_what_it_is_told() {
    watchdog("advance", 30, || {
        let p = paused(2);
        p.block_on(async {
            let start = Instant::now();
            let seven = sleep(Duration::from_secs(7));
            let task = crate::free_fns::spawn(async move {
                seven.await;
                Instant::now()
            });
            advance(Duration::from_secs(10)).await;
            assert_eq!(start.elapsed(), Duration::from_secs(10));
            assert_eq!(task.await.unwrap() - start, Duration::from_secs(10));
        });
    });
}

#[test]
fn a_nested_block_on_of_the_same_pool_lets_the_clock_jump() {
    watchdog("nested block_on on a paused pool", 30, || {
        let p = std::sync::Arc::new(paused(2));
        let inner = p.clone();
        p.block_on(async move {
            let start = Instant::now();
            // The outer future waits in the inner block_on: the thread
            // sleeps once, and the clock must still jump.
            inner.block_on(sleep(Duration::from_secs(60)));
            assert_eq!(start.elapsed(), Duration::from_secs(60));
        });
    });
}

/// On a 2-worker pool, a `spawn_local` task that sleeps 100 times
/// beside one that keeps its worker awake: the lock acquisitions of
/// timer shards by another thread than the shard's, meanwhile.
fn foreign_locks_of_worker_local_sleeps() -> u64 {
    let p = Builder::new().worker_threads(2).build().unwrap();
    p.block_on(async {
        spawn(async {
            let driver = crate::context::current::enabled_driver();
            let (awake, sleeper) = {
                let done = Rc::new(Cell::new(false));
                let awake = {
                    let done = Rc::clone(&done);
                    spawn_local(async move {
                        while !done.get() {
                            yield_now().await;
                        }
                    })
                };
                (
                    awake,
                    spawn_local(async move {
                        let before = driver.timer_foreign_locks();
                        for _ in 0..100 {
                            sleep(Duration::from_millis(1)).await;
                        }
                        let after = driver.timer_foreign_locks();
                        done.set(true);
                        after - before
                    }),
                )
            };
            let foreign = sleeper.await.unwrap();
            awake.await.unwrap();
            foreign
        })
        .await
        .unwrap()
    })
}

#[test]
fn a_timer_registered_and_fired_on_one_awake_worker_takes_no_other_threads_lock() {
    watchdog("worker-local sleeps", 60, || {
        // A shard is taken from elsewhere only for a worker that is
        // asleep, or awake but `SLACK` (10 ms) late firing it: on a
        // loaded machine a preempted worker can be, so up to three
        // runs. One store that the workers and the driver's sleeper all
        // lock is foreign to all but one, and fails every run.
        let mut runs = Vec::new();
        for _ in 0..3 {
            let foreign = foreign_locks_of_worker_local_sleeps();
            if foreign == 0 {
                return;
            }
            runs.push(foreign);
        }
        panic!(
            "100 sleeps registered and fired on one awake worker took timer locks \
             from other threads in every run: {runs:?} (a worker's timers must stay \
             in its own shard, fired by itself)"
        );
    });
}
