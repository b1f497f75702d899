//! The stress suite: hunts lost wakeups the way users hit them. Every round
//! runs under a watchdog that fails the test naming the round.
//!
//! `POOL_STRESS_ROUNDS=N` sets the number of rounds of the ping-pong test
//! (default 1000); the other tests run a third as many. A long soak:
//! `POOL_STRESS_ROUNDS=10000 cargo test --release -p tests --test stress`.

use futures::channel::{mpsc, oneshot};
use futures::{SinkExt, StreamExt};
use pool::{Builder, Pool};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use tests::watchdog;

/// Seconds one round may take before it counts as hung.
const ROUND_LIMIT_SECS: u64 = 10;

fn rounds() -> usize {
    match std::env::var("POOL_STRESS_ROUNDS") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("POOL_STRESS_ROUNDS must be a positive integer, got {v:?}")),
        Err(_) => 1000,
    }
}

/// A small deterministic generator, so a failing round can be replayed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn micros(&mut self, max: u64) -> Duration {
        Duration::from_micros(self.below(max + 1))
    }
}

fn pool(workers: usize) -> Arc<Pool> {
    Arc::new(Builder::new().worker_threads(workers).build().unwrap())
}

#[test]
fn ping_pong_with_random_delays_and_idle_gaps() {
    let n = rounds();
    for workers in [2, 4] {
        let p = pool(workers);
        for round in 0..n {
            let p2 = p.clone();
            let what = format!("ping-pong round {round} of {n} on {workers} workers");
            watchdog(&what, ROUND_LIMIT_SECS, move || {
                let mut rng = Rng::new(round as u64);
                let pairs = 1 + rng.below(3) as usize;
                let exchanges = 1 + rng.below(10) as usize;
                let delay = rng.below(100);
                let sum = p2.block_on(async move {
                    let mut handles = Vec::new();
                    for pair in 0..pairs {
                        let (mut to_echo, mut echo_in) = mpsc::channel::<usize>(1);
                        let (mut to_main, mut main_in) = mpsc::channel::<usize>(1);
                        let mut rng = Rng::new((round * 7 + pair) as u64);
                        handles.push(pool::spawn(async move {
                            while let Some(v) = echo_in.next().await {
                                std::thread::sleep(rng.micros(delay));
                                if to_main.send(v + 1).await.is_err() {
                                    break;
                                }
                            }
                            0
                        }));
                        handles.push(pool::spawn(async move {
                            let mut v = 0;
                            for _ in 0..exchanges {
                                to_echo.send(v).await.unwrap();
                                v = main_in.next().await.unwrap();
                            }
                            v
                        }));
                    }
                    let mut sum = 0;
                    for h in handles {
                        sum += h.await.unwrap();
                    }
                    sum
                });
                assert_eq!(sum, pairs * exchanges, "round {round}");
            });
            // Let the pool go idle (sometimes all the way to sleep).
            std::thread::sleep(Rng::new(round as u64 + 1).micros(300));
        }
    }
}

#[test]
fn injection_from_several_outside_threads_at_once() {
    let n = rounds() / 3;
    let p = pool(2);
    for round in 0..n {
        let p2 = p.clone();
        watchdog(
            &format!("injection round {round} of {n}"),
            ROUND_LIMIT_SECS,
            move || {
                let done = Arc::new(AtomicUsize::new(0));
                let start = Arc::new(Barrier::new(4));
                let threads: Vec<_> = (0..4)
                    .map(|t| {
                        let (p, done, start) = (p2.clone(), done.clone(), start.clone());
                        std::thread::spawn(move || {
                            start.wait();
                            let handles: Vec<_> = (0..50)
                                .map(|i| {
                                    let done = done.clone();
                                    p.spawn(async move {
                                        if i % 7 == 0 {
                                            pool::yield_now().await;
                                        }
                                        done.fetch_add(1, Ordering::SeqCst);
                                        t * 1000 + i
                                    })
                                })
                                .collect();
                            handles
                                .into_iter()
                                .map(|h| pool::block_on(h).unwrap())
                                .sum::<usize>()
                        })
                    })
                    .collect();
                let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
                assert_eq!(done.load(Ordering::SeqCst), 200);
                assert_eq!(total, (0..4).map(|t| t * 50_000 + 1225).sum::<usize>());
            },
        );
        std::thread::sleep(Rng::new(round as u64).micros(500));
    }
}

#[test]
fn block_on_from_several_threads_at_once() {
    let n = rounds() / 3;
    let p = pool(2);
    for round in 0..n {
        let p2 = p.clone();
        watchdog(
            &format!("block_on round {round} of {n}"),
            ROUND_LIMIT_SECS,
            move || {
                let start = Arc::new(Barrier::new(4));
                let threads: Vec<_> = (0..4u64)
                    .map(|t| {
                        let (p, start) = (p2.clone(), start.clone());
                        std::thread::spawn(move || {
                            let (tx, rx) = oneshot::channel::<u64>();
                            // Another plain thread completes the future, racing the
                            // block_on going to sleep; a task on the pool waits too.
                            let delay = Rng::new(round as u64 * 4 + t).micros(200);
                            let sender = std::thread::spawn(move || {
                                std::thread::sleep(delay);
                                tx.send(t).unwrap();
                            });
                            start.wait();
                            let v = p.block_on(async move {
                                let task = pool::spawn(async move { rx.await.unwrap() * 2 });
                                task.await.unwrap()
                            });
                            sender.join().unwrap();
                            v
                        })
                    })
                    .collect();
                let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
                assert_eq!(total, 2 * (1 + 2 + 3));
            },
        );
    }
}

#[test]
fn pools_created_and_dropped_with_work_in_flight() {
    let n = rounds() / 3;
    for round in 0..n {
        watchdog(
            &format!("pool churn round {round} of {n}"),
            ROUND_LIMIT_SECS,
            move || {
                let mut rng = Rng::new(round as u64);
                let p = Builder::new()
                    .worker_threads(1 + rng.below(4) as usize)
                    .build()
                    .unwrap();
                let finished = Arc::new(AtomicUsize::new(0));
                let (mut tx, mut rx) = mpsc::channel::<usize>(4);
                let f = finished.clone();
                let consumer = p.spawn(async move {
                    while let Some(v) = rx.next().await {
                        f.fetch_add(v, Ordering::SeqCst);
                    }
                });
                for i in 0..rng.below(20) as usize {
                    let mut tx = tx.clone();
                    drop(p.spawn(async move {
                        let _ = tx.send(i).await;
                    }));
                }
                // Some tasks stay pending for ever; the pool must still drop.
                drop(p.spawn(std::future::pending::<()>()));
                if rng.below(2) == 0 {
                    let _ = p.block_on(tx.send(1));
                }
                std::thread::sleep(rng.micros(200));
                drop(p);
                // Every handle of the dead pool resolves.
                let _ = pool::block_on(consumer);
                tx.close_channel();
            },
        );
    }
}

/// TCP ping-pong through the pool's own driver, with idle gaps: between
/// rounds every worker falls asleep (one in the driver), and the next round
/// must wake it both by I/O (the server's read) and by spawns (the client's
/// task, injected from this thread). A third as many rounds as ping-pong.
#[test]
fn tcp_ping_pong_with_idle_gaps_wakes_the_driver_sleeper() {
    use futures::{AsyncReadExt, AsyncWriteExt};
    let n = rounds() / 3;
    for workers in [1, 2] {
        let p = pool(workers);
        let addr = p.block_on(async {
            let listener = pool::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            drop(pool::spawn(async move {
                loop {
                    let (mut s, _) = listener.accept().await.unwrap();
                    drop(pool::spawn(async move {
                        let mut buf = [0u8; 8];
                        while s.read_exact(&mut buf).await.is_ok() {
                            if s.write_all(&buf).await.is_err() {
                                return;
                            }
                        }
                    }));
                }
            }));
            addr
        });
        let mut rng = Rng::new(workers as u64);
        for round in 0..n {
            let gap = rng.micros(300);
            let p2 = p.clone();
            let what = format!("tcp ping-pong round {round} of {n} on {workers} workers");
            watchdog(&what, ROUND_LIMIT_SECS, move || {
                std::thread::sleep(gap);
                let client = p2.spawn(async move {
                    let mut s = pool::net::TcpStream::connect(addr).await.unwrap();
                    for i in 0..4u64 {
                        s.write_all(&i.to_le_bytes()).await.unwrap();
                        let mut back = [0u8; 8];
                        s.read_exact(&mut back).await.unwrap();
                        assert_eq!(u64::from_le_bytes(back), i);
                    }
                });
                p2.block_on(client).unwrap();
            });
        }
    }
}
