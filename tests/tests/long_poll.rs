//! Work conservation: a task made runnable just before a long poll (spawned,
//! woken, or yielding) starts on another, idle worker, instead of waiting
//! for the poll to end. Each case fails above `LIMIT`, far below the poll's
//! length and far above timing noise. And the way it gets there: the first
//! task after the pool slept is posted at once (the watcher, parked, rescues
//! nothing), the ones after it wait in the LIFO slot for the watcher.

use pool::Builder;
use std::time::{Duration, Instant};
use tests::{wait_until_asleep, watchdog};

/// The long poll.
const POLL: Duration = Duration::from_millis(200);
/// The most a runnable task may wait while a worker sleeps.
const LIMIT: Duration = Duration::from_millis(20);
/// Long enough, after every worker fell asleep, for the watcher to see it
/// and park: it looks at least every millisecond.
const WATCHER_PARKS: Duration = Duration::from_millis(100);

fn busy(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

#[derive(Clone, Copy, Debug)]
enum Case {
    Spawn,
    Wake,
    Yield,
    /// The spawn and the long poll inside a `block_on` on a worker.
    BlockOnSpawn,
    /// Two children spawned, then the long poll: the first is posted, the
    /// second waits in the LIFO slot for the watcher (the delay is the
    /// second's).
    SpawnTwo,
}

/// Wait until every worker sleeps, then long enough for the watcher to park.
fn wait_until_parked(p: &pool::Pool) {
    wait_until_asleep(p);
    std::thread::sleep(WATCHER_PARKS);
}

/// How long the other task waited, on an idle pool of `workers`.
fn delay(workers: usize, case: Case) -> Duration {
    let p = Builder::new().worker_threads(workers).build().unwrap();
    wait_until_parked(&p);
    let d = match case {
        Case::Spawn => p.block_on(p.spawn(async {
            let made_runnable = Instant::now();
            let child = pool::spawn(async move { made_runnable.elapsed() });
            busy(POLL);
            child.await.unwrap()
        })),
        Case::Wake => {
            let (tx, rx) = futures::channel::oneshot::channel::<Instant>();
            let waiter = p.spawn(async move { rx.await.unwrap().elapsed() });
            wait_until_parked(&p);
            p.block_on(p.spawn(async move {
                tx.send(Instant::now()).unwrap();
                busy(POLL);
            }))
            .unwrap();
            Ok(p.block_on(waiter).unwrap())
        }
        Case::Yield => p.block_on(p.spawn(async {
            let child = pool::spawn(async {
                let yielded = Instant::now();
                pool::yield_now().await;
                yielded.elapsed()
            });
            pool::yield_now().await;
            busy(POLL);
            child.await.unwrap()
        })),
        Case::BlockOnSpawn => p.block_on(p.spawn(async {
            pool::block_on(async {
                let made_runnable = Instant::now();
                let child = pool::spawn(async move { made_runnable.elapsed() });
                busy(POLL);
                child.await.unwrap()
            })
        })),
        Case::SpawnTwo => p.block_on(p.spawn(async {
            let first = pool::spawn(async {});
            let made_runnable = Instant::now();
            let second = pool::spawn(async move { made_runnable.elapsed() });
            busy(POLL);
            first.await.unwrap();
            second.await.unwrap()
        })),
    };
    let d = d.unwrap();
    let rescued = p.metrics().rescued;
    match case {
        Case::Spawn | Case::Wake | Case::BlockOnSpawn => assert_eq!(
            rescued, 0,
            "{case:?}: the first task after the pool slept is posted, not left for the watcher"
        ),
        Case::SpawnTwo => assert_eq!(rescued, 1, "{case:?}: the watcher rescued the second"),
        Case::Yield => {}
    }
    d
}

#[test]
fn a_runnable_task_never_waits_behind_a_long_poll_while_a_worker_sleeps() {
    watchdog("long poll", 60, || {
        for workers in [2, 4] {
            for case in [
                Case::Spawn,
                Case::Wake,
                Case::Yield,
                Case::BlockOnSpawn,
                Case::SpawnTwo,
            ] {
                let d = delay(workers, case);
                assert!(
                    d < LIMIT,
                    "{case:?} on {workers} workers: the task waited {d:?} behind a {POLL:?} poll"
                );
            }
        }
    });
}
