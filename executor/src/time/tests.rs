//! The paused clock on a pool whose driver's sleeper blocks in the driver
//! itself (no `tokio-compat`; `tests/tests/paused_time.rs` runs the full
//! set where the workspace turns `tokio-compat` on, and so the sleeper
//! blocks in its tokio runtime). `.ci/run` runs these with the package's
//! own features: `cargo test -p pool --lib time::tests`.
//!
//! And the timer shards (`timers.rs`): a timer registered and fired on
//! one awake worker takes no other thread's lock; far timers fire in
//! deadline order with the near ones, never early, and a cancelled one
//! neither fires nor holds the published deadline back; an entry polled
//! by another waker wakes that one.

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

/// A store of one worker's shard (and the shared one), its clock and the
/// wakers its fires woke, by name.
struct Store {
    timers: super::timers::Timers,
    origin: std::time::Instant,
    woken: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
}

/// A waker that records `name` in `woken` when woken.
struct Named {
    name: &'static str,
    woken: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
}

impl std::task::Wake for Named {
    fn wake(self: std::sync::Arc<Self>) {
        self.woken.lock().unwrap().push(self.name);
    }
}

/// A waker that records `name` in `woken`.
fn named(
    name: &'static str,
    woken: &std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
) -> std::task::Waker {
    std::task::Waker::from(std::sync::Arc::new(Named {
        name,
        woken: std::sync::Arc::clone(woken),
    }))
}

impl Store {
    fn new() -> Store {
        let origin = std::time::Instant::now();
        Store {
            timers: super::timers::Timers::new(1, origin),
            origin,
            woken: Default::default(),
        }
    }

    fn at(&self, ms: u64) -> std::time::Instant {
        self.origin + Duration::from_millis(ms)
    }

    /// Register `name` for `deadline_ms`, from worker 0 at `now_ms`.
    fn insert(&self, name: &'static str, now_ms: u64, deadline_ms: u64) -> super::timers::TimerKey {
        let waker = named(name, &self.woken);
        match self
            .timers
            .insert(0, self.at(now_ms), self.at(deadline_ms), waker)
        {
            super::timers::Inserted::Yes { key, .. } => key,
            super::timers::Inserted::ShutDown => panic!("the store is not shut down"),
        }
    }

    /// Fire worker 0's shard at `now_ms`: the names woken, in order.
    fn fire(&self, now_ms: u64) -> Vec<&'static str> {
        let mut wakers = Vec::new();
        self.timers.fire(0, self.at(now_ms), &mut wakers);
        wakers.into_iter().for_each(std::task::Waker::wake);
        std::mem::take(&mut *self.woken.lock().unwrap())
    }
}

#[test]
fn far_timers_fire_in_deadline_order_with_near_ones_and_never_early() {
    // Registered at 0: 500 ms is near, the others more than `HORIZON`
    // (1 s) ahead, far, registered out of order.
    let store = Store::new();
    store.insert("5s", 0, 5_000);
    store.insert("3s", 0, 3_000);
    store.insert("0.5s", 0, 500);
    store.insert("2s", 0, 2_000);
    store.insert("2.4s", 0, 2_400);
    assert_eq!(
        store.fire(499),
        Vec::<&str>::new(),
        "nothing is due at 499 ms"
    );
    assert_eq!(store.fire(500), ["0.5s"]);
    assert_eq!(
        store.fire(1_999),
        Vec::<&str>::new(),
        "no far timer is early"
    );
    assert_eq!(
        store.fire(2_500),
        ["2s", "2.4s"],
        "far timers in deadline order"
    );
    assert_eq!(store.fire(2_999), Vec::<&str>::new());
    assert_eq!(store.fire(3_000), ["3s"]);
    assert_eq!(store.fire(4_999), Vec::<&str>::new());
    assert_eq!(store.fire(6_000), ["5s"]);
    assert!(store.timers.is_empty(), "every timer fired");
}

#[test]
fn a_cancelled_far_timer_never_fires_and_its_slot_serves_another() {
    let store = Store::new();
    let first = store.insert("2s", 0, 2_000);
    store.insert("10s", 0, 10_000);
    store.timers.remove(|| 0, first);
    // The cancelled deadline may still hold the published earliest back;
    // a fire there finds nothing and moves it on.
    assert_eq!(
        store.fire(2_000),
        Vec::<&str>::new(),
        "a cancelled far timer fired"
    );
    assert_eq!(
        store.timers.park_until(),
        Some(store.at(10_000) + Duration::from_millis(10)),
        "after a fire at the cancelled deadline, the sleeper waits for the next \
         timer (plus the owner's slack), not for the cancelled one"
    );
    // 2.2 s and 2.5 s move near at the fire of 2.2 s; 2.5 s keeps its key,
    // whose far slot a new far timer then takes.
    let a = store.insert("2.2s", 1_000, 2_200);
    let b = store.insert("2.5s", 1_000, 2_500);
    assert_eq!(store.fire(2_200), ["2.2s"]);
    let c = store.insert("4s", 2_200, 4_000);
    store.timers.remove(|| 0, b);
    store.timers.remove(|| 0, a);
    assert_eq!(
        store.fire(3_000),
        Vec::<&str>::new(),
        "2.5 s was cancelled after it moved near"
    );
    assert_eq!(
        store.fire(4_000),
        ["4s"],
        "a cancel by a moved timer's key took another timer"
    );
    store.timers.remove(|| 0, c);
    assert_eq!(store.fire(20_000), ["10s"]);
}

#[test]
fn a_paused_jump_goes_to_the_earliest_live_far_deadline() {
    let store = Store::new();
    let clock = super::pool_clock::PoolClock::new(true);
    let start = clock.now();
    let ms = |n: u64| start + Duration::from_millis(n);
    let waker = |name| named(name, &store.woken);
    let early = match store.timers.insert(0, start, ms(3_000), waker("3s")) {
        super::timers::Inserted::Yes { key, .. } => key,
        super::timers::Inserted::ShutDown => unreachable!(),
    };
    store.timers.insert(0, start, ms(7_000), waker("7s"));
    store.timers.remove(|| 0, early);
    let mut wakers = Vec::new();
    assert!(store.timers.jump_if_quiet(&clock, &|| true, &mut wakers));
    assert_eq!(
        clock.now(),
        ms(7_000),
        "a quiet paused pool jumps to its earliest timer, not to a cancelled one's deadline"
    );
    wakers.into_iter().for_each(std::task::Waker::wake);
    assert_eq!(*store.woken.lock().unwrap(), ["7s"]);
}

#[test]
fn a_sleep_polled_by_another_waker_wakes_that_one() {
    watchdog("a sleep polled by two wakers", 10, || {
        let p = Builder::new().worker_threads(1).build().unwrap();
        let woken: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>> = Default::default();
        let waker = |name| named(name, &woken);
        let (first, second) = (waker("first"), waker("second"));
        let handle = p.handle();
        let entered = handle.enter();
        let mut sleep = Box::pin(super::sleep(Duration::from_millis(20)));
        drop(entered);
        let poll = |w: &std::task::Waker, s: &mut std::pin::Pin<Box<super::Sleep>>| {
            s.as_mut().poll(&mut std::task::Context::from_waker(w))
        };
        use std::future::Future;
        assert!(poll(&first, &mut sleep).is_pending());
        assert!(
            poll(&first, &mut sleep).is_pending(),
            "the same waker again"
        );
        assert!(poll(&second, &mut sleep).is_pending());
        let real = std::time::Instant::now();
        while woken.lock().unwrap().is_empty() {
            assert!(
                real.elapsed() < Duration::from_secs(5),
                "the sleep never woke a waker"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            *woken.lock().unwrap(),
            ["second"],
            "the fire woke the first poll's waker"
        );
        assert!(
            poll(&second, &mut sleep).is_ready(),
            "a fired sleep is ready"
        );
        drop(p);
    });
}

#[test]
fn a_pass_over_far_timers_gives_back_the_slots_above_the_last_live_one() {
    // A burst of far timers, all cancelled but the first and one due
    // soon: the pass at 2 s keeps the slab up to the first.
    let store = Store::new();
    store.insert("10s", 0, 10_000);
    store.insert("2s", 0, 2_000);
    let burst: Vec<_> = (0..1_000)
        .map(|i| store.insert("burst", 0, 5_000 + i))
        .collect();
    assert_eq!(store.timers.far_slots(0), 1_002);
    for key in burst {
        store.timers.remove(|| 0, key);
    }
    assert_eq!(store.fire(2_000), ["2s"]);
    assert_eq!(
        store.timers.far_slots(0),
        1,
        "the pass kept the cancelled burst's slots above the last live far timer"
    );
    // The freed slots are not handed out again past the end.
    let again = store.insert("3s", 2_000, 3_000);
    assert_eq!(store.timers.far_slots(0), 2);
    store.timers.remove(|| 0, again);
    assert_eq!(store.fire(20_000), ["10s"]);
}
