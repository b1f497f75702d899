//! Feature `tokio-compat`: tokio-only code inside pool tasks, on the tokio
//! runtime each worker drives itself (no side thread); the pool current in
//! tokio's tasks and on tokio's blocking threads.
//!
//! Its own test binary: it checks that the global pool never starts and
//! counts the process's threads by name.

use pool::Handle;
use std::time::Duration;
use tests::watchdog;
use tower::{Service, ServiceBuilder, ServiceExt};

fn pool_named(name: &str) -> pool::Pool {
    pool_of(2, name)
}

fn pool_of(workers: usize, name: &str) -> pool::Pool {
    pool::Builder::new()
        .worker_threads(workers)
        .thread_name(name)
        .build()
        .unwrap()
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_owned()
}

/// The names of this process's threads that start with `prefix`.
fn threads_named(prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let comm = task.unwrap().path().join("comm");
        if let Ok(name) = std::fs::read_to_string(comm) {
            let name = name.trim().to_owned();
            if name.starts_with(prefix) {
                names.push(name);
            }
        }
    }
    names.sort();
    names
}

#[test]
fn tokio_timers_and_sockets_work_in_pool_tasks() {
    watchdog("tokio-compat: timers and sockets", 30, || {
        let p = pool_named("tcio");
        p.block_on(async {
            let task = pool::spawn(async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                let client = tokio::net::TcpStream::connect(addr);
                let (accepted, client) = futures::join!(listener.accept(), client);
                let (mut server_side, _) = accepted.unwrap();
                let mut client = client.unwrap();
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                client.write_all(b"hi").await.unwrap();
                let mut buf = [0; 2];
                server_side.read_exact(&mut buf).await.unwrap();
                (buf, thread_name())
            });
            let (buf, ran_on) = task.await.unwrap();
            assert_eq!(&buf, b"hi");
            assert!(
                ran_on.starts_with("tcio-"),
                "a pool worker ran it: {ran_on}"
            );
            // The block_on future itself is inside the runtime's context too.
            tokio::time::sleep(Duration::from_millis(1)).await;
        });
    });
}

/// Is `name` the name of a worker of pool `prefix` (`{prefix}-{index}`)?
fn is_worker_of(prefix: &str, name: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|n| n.strip_prefix('-'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[test]
fn tokio_spawn_runs_on_the_worker_that_spawned_it_where_the_pool_is_current() {
    watchdog("tokio-compat: tokio::spawn", 30, || {
        let p = pool_named("tcsp");
        let (spawner, spawned_on, inner_on, workers) = p.block_on(async {
            pool::spawn(async {
                let spawner = thread_name();
                let (here, inner, workers) = tokio::spawn(async {
                    let here = thread_name();
                    // pool::spawn from a tokio task: the user's pool.
                    let inner = pool::spawn(async { thread_name() }).await.unwrap();
                    (here, inner, Handle::current().metrics().workers)
                })
                .await
                .unwrap();
                (spawner, here, inner, workers)
            })
            .await
            .unwrap()
        });
        assert!(is_worker_of("tcsp", &spawned_on), "{spawned_on}");
        assert_eq!(
            spawned_on, spawner,
            "a tokio task runs on the worker whose runtime it was spawned on"
        );
        assert!(is_worker_of("tcsp", &inner_on), "{inner_on}");
        assert_eq!(workers, 2);
        assert!(
            Handle::try_current().is_none(),
            "the global pool never started"
        );
    });
}

#[test]
fn tokio_work_from_outside_threads_spreads_over_the_workers() {
    watchdog("tokio-compat: outside spawns", 30, || {
        let p = pool_named("tcout");
        // A block_on enters the next worker's runtime on every poll: four
        // spawns from four polls in a row land on both workers.
        let ran_on: std::collections::BTreeSet<String> = p.block_on(async {
            let mut spawned = Vec::new();
            for _ in 0..4 {
                spawned.push(tokio::spawn(async { thread_name() }));
                pool::yield_now().await;
            }
            let mut names = std::collections::BTreeSet::new();
            for task in spawned {
                names.insert(task.await.unwrap());
            }
            names
        });
        assert_eq!(ran_on.len(), 2, "both workers ran tokio tasks: {ran_on:?}");
        assert!(
            ran_on.iter().all(|n| is_worker_of("tcout", n)),
            "{ran_on:?}"
        );
    });
}

/// Wakes in both directions while the workers sleep in their runtimes: a
/// tokio timer wakes a tokio task, which spawns a pool task, which sends
/// on a tokio channel to a pool task, on every round. A lost wake hangs.
#[test]
fn wakes_between_tokio_and_pool_tasks_are_never_lost() {
    watchdog("tokio-compat: wakes both ways", 60, || {
        let p = pool_named("tcwk");
        p.block_on(async {
            for round in 0..300u32 {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let receiver = pool::spawn(async move { rx.await.unwrap() });
                let sender = pool::spawn(async move {
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_micros(200)).await;
                        pool::spawn(async move { tx.send(round).unwrap() })
                            .await
                            .unwrap();
                    })
                    .await
                    .unwrap();
                });
                assert_eq!(receiver.await.unwrap(), round);
                sender.await.unwrap();
            }
        });
    });
}

/// A worker's pool tasks run inside its runtime, as tokio's own tasks do:
/// a `tokio::spawn` is a push onto the runtime's own queue, not a remote
/// schedule (which would show in the runtime's global queue until its next
/// turn, and cost a lock and a write to its eventfd). And a tokio task spawned as the last thing of a
/// busy period (the pool has nothing else to run) still runs at once, not
/// at the runtime's next periodic turn.
#[test]
fn tokio_spawn_from_a_pool_task_is_local_and_runs_at_once() {
    watchdog("tokio-compat: local spawns", 30, || {
        let p = pool_named("tcls");
        let remote_by_round: Vec<usize> = (0..50)
            .map(|_| {
                let remote = p.block_on(p.spawn(async {
                    let metrics = tokio::runtime::Handle::current().metrics();
                    let before = metrics.global_queue_depth();
                    let spawned: Vec<_> = (0..4).map(|_| tokio::spawn(async {})).collect();
                    let after = metrics.global_queue_depth();
                    for task in spawned {
                        task.await.unwrap();
                    }
                    after - before
                }));
                remote.unwrap()
            })
            .collect();
        assert!(
            remote_by_round.iter().all(|&r| r == 0),
            "spawns went through the global queue: {remote_by_round:?}"
        );
        for _ in 0..200 {
            let (tx, rx) = std::sync::mpsc::channel();
            let start = std::time::Instant::now();
            drop(p.spawn(async move {
                drop(tokio::spawn(async move { tx.send(()).unwrap() }));
            }));
            rx.recv_timeout(Duration::from_secs(5))
                .expect("the tokio task spawned last never ran");
            let waited = start.elapsed();
            assert!(
                waited < Duration::from_millis(100),
                "the tokio task spawned last waited {waited:?}"
            );
        }
    });
}

/// Pool tasks that keep a pool's workers busy, each yielding in a loop,
/// until `stop`.
struct Spinners {
    running: std::sync::Arc<std::sync::atomic::AtomicBool>,
    tasks: Vec<pool::JoinHandle<()>>,
}

impl Spinners {
    fn start(p: &pool::Pool, n: usize) -> Spinners {
        let running = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let tasks = (0..n)
            .map(|_| {
                let running = running.clone();
                p.spawn(async move {
                    while running.load(std::sync::atomic::Ordering::Relaxed) {
                        pool::yield_now().await;
                    }
                })
            })
            .collect();
        Spinners { running, tasks }
    }

    fn stop(self, p: &pool::Pool) {
        self.running
            .store(false, std::sync::atomic::Ordering::Relaxed);
        for task in self.tasks {
            p.block_on(task).unwrap();
        }
    }
}

/// As on tokio's own workers (its LIFO slot), a tokio task that a pool
/// task spawns runs before that pool task is polled again, even while the
/// worker stays busy with pool tasks: code that hands work to a spawned
/// task and yields (sqlx returns a pooled connection this way) sees it
/// done. One worker, so no other worker runs either task.
#[test]
fn a_tokio_task_spawned_by_a_pool_task_runs_before_its_next_poll() {
    watchdog("tokio-compat: a spawned tokio task runs first", 30, || {
        let p = pool_of(1, "tcsn");
        // Pool tasks that keep the worker busy the whole time.
        let spinners = Spinners::start(&p, 4);
        let late = p.block_on(p.spawn(async {
            let mut late = 0;
            for _ in 0..1000 {
                let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                let flag = ran.clone();
                drop(tokio::spawn(async move {
                    flag.store(true, std::sync::atomic::Ordering::Relaxed);
                }));
                pool::yield_now().await;
                if !ran.load(std::sync::atomic::Ordering::Relaxed) {
                    late += 1;
                }
            }
            late
        }));
        spinners.stop(&p);
        assert_eq!(
            late.unwrap(),
            0,
            "of 1000 tokio tasks spawned by a pool task, this many had not run when it was polled again"
        );
    });
}

/// Tokio tasks stay on the runtime they were spawned on, so a worker
/// whose pool tasks spawn many long-lived ones (a burst of WebSocket
/// upgrades) would carry them all: once its runtime has more than its
/// share alive, its pool tasks spawn on another worker's runtime. Here
/// every spawn comes from pool tasks pinned to one worker (`spawn_local`).
#[test]
fn long_lived_tokio_tasks_spread_over_the_runtimes() {
    watchdog("tokio-compat: placement", 30, || {
        const TASKS: usize = 40;
        let p = pool_named("tcbal");
        // The spawner and what it spawns are pinned to one worker.
        let names = p.block_on(p.spawn(async { pool::spawn_local(spawner()).await }));

        async fn spawner() -> Vec<String> {
            let (release, released) = tokio::sync::watch::channel(false);
            let mut started = Vec::new();
            for _ in 0..TASKS {
                let mut released = released.clone();
                let (tx, rx) = tokio::sync::oneshot::channel();
                started.push(rx);
                // Each pool task, on this worker, spawns one tokio task
                // that lives until the end.
                drop(pool::spawn_local(async move {
                    drop(tokio::spawn(async move {
                        tx.send(thread_name()).unwrap();
                        let _ = released.wait_for(|r| *r).await;
                    }));
                }));
                pool::yield_now().await;
            }
            let mut names = Vec::new();
            for rx in started {
                names.push(rx.await.unwrap());
            }
            release.send(true).unwrap();
            names
        }
        let names = names.unwrap().unwrap();
        let on = |w: &str| names.iter().filter(|n| n.as_str() == w).count();
        let (a, b) = (on("tcbal-0"), on("tcbal-1"));
        assert_eq!(a + b, TASKS, "ran on the workers: {names:?}");
        assert!(
            a >= TASKS / 4 && b >= TASKS / 4,
            "tokio tasks by worker: {a} and {b}"
        );
    });
}

/// What the README says does not carry over: inside a pool task (inside
/// its worker's runtime) tokio refuses to block the worker, with its own
/// words, instead of hanging it.
#[test]
fn blocking_the_worker_through_tokio_panics_in_a_pool_task() {
    watchdog("tokio-compat: blocking through tokio", 30, || {
        let p = pool_named("tcbp");
        let messages = p.block_on(p.spawn(async {
            let message = |payload: Box<dyn std::any::Any + Send>| {
                payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            };
            let in_place = std::panic::catch_unwind(|| tokio::task::block_in_place(|| ()));
            let block_on =
                std::panic::catch_unwind(|| tokio::runtime::Handle::current().block_on(async {}));
            (in_place.map_err(message), block_on.map_err(message))
        }));
        let (in_place, block_on) = messages.unwrap();
        assert!(
            in_place
                .as_ref()
                .unwrap_err()
                .contains("multi-threaded runtime"),
            "{in_place:?}"
        );
        assert!(
            block_on.as_ref().unwrap_err().contains("within a runtime"),
            "{block_on:?}"
        );
    });
}

#[test]
fn tokio_spawn_blocking_threads_are_named_and_see_the_pool() {
    watchdog("tokio-compat: spawn_blocking", 30, || {
        let p = pool_named("tcbl");
        let (name, workers, from_pool_blocking) = p.block_on(async {
            let (name, workers) = tokio::task::spawn_blocking(|| {
                (thread_name(), Handle::current().metrics().workers)
            })
            .await
            .unwrap();
            // pool's own blocking threads have tokio's context too.
            let from_pool_blocking =
                pool::spawn_blocking(|| tokio::runtime::Handle::try_current().is_ok())
                    .await
                    .unwrap();
            (name, workers, from_pool_blocking)
        });
        assert_eq!(name, "tcbl-tokio-blocking");
        assert_eq!(workers, 2);
        assert!(from_pool_blocking);
    });
}

#[test]
fn towers_timeout_layer_fires_inside_a_pool_task() {
    watchdog("tokio-compat: tower timeout", 30, || {
        let p = pool_named("tctw");
        p.block_on(async {
            pool::spawn(async {
                let mut svc = ServiceBuilder::new()
                    .timeout(Duration::from_millis(20))
                    .service_fn(|slow: bool| async move {
                        if slow {
                            pool::time::sleep(Duration::from_secs(5)).await;
                        }
                        Ok::<_, std::convert::Infallible>("done")
                    });
                assert_eq!(
                    svc.ready().await.unwrap().call(false).await.unwrap(),
                    "done"
                );
                let err = svc.ready().await.unwrap().call(true).await.unwrap_err();
                assert!(
                    err.is::<tower::timeout::error::Elapsed>(),
                    "the timeout fired: {err}"
                );
            })
            .await
            .unwrap();
        });
    });
}

#[test]
fn no_tokio_thread_of_its_own_and_tokio_tasks_dropped_with_the_pool() {
    watchdog("tokio-compat: threads", 30, || {
        let p = pool_named("tcth");
        tests::wait_for("the workers are named", Duration::from_secs(5), || {
            threads_named("tcth-") == ["tcth-0", "tcth-1", "tcth-watcher"]
        });
        // A tokio task left pending is dropped with its worker's runtime.
        let dropped = tests::DropCounter::default();
        let tracked = dropped.track();
        p.block_on(async move {
            tokio::spawn(async move {
                let _tracked = tracked;
                std::future::pending::<()>().await;
            });
        });
        drop(p);
        // Joined threads: a thread's /proc entry can outlive its join by a
        // moment (the join returns when the kernel clears its tid, before
        // it reaps the thread), so give the listing a moment to catch up.
        // A thread the pool did not join would still be listed.
        tests::wait_for("every thread joined", Duration::from_secs(2), || {
            threads_named("tcth").is_empty()
        });
        tests::wait_for(
            "the pending tokio task is dropped with the runtime",
            Duration::from_secs(5),
            || dropped.drops() == 1,
        );
    });
}

/// tokio's blocking threads follow the pool's budget: with
/// `max_blocking_threads(2)` on two workers, each worker's runtime runs one
/// `spawn_blocking` closure at a time, so never more than two at once.
#[test]
fn tokio_blocking_threads_stay_within_the_pools_budget() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    watchdog("tokio-compat: blocking budget", 30, || {
        let p = pool::Builder::new()
            .worker_threads(2)
            .max_blocking_threads(2)
            .thread_name("tcbb")
            .build()
            .unwrap();
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        p.block_on(async {
            let mut closures = Vec::new();
            for _ in 0..8 {
                let (now, most) = (now.clone(), most.clone());
                closures.push(tokio::task::spawn_blocking(move || {
                    let running = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(running, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    now.fetch_sub(1, Ordering::SeqCst);
                }));
                // The next spawn from the next poll: the other runtime.
                pool::yield_now().await;
            }
            for c in closures {
                c.await.unwrap();
            }
        });
        let most = most.load(Ordering::SeqCst);
        assert!((1..=2).contains(&most), "{most} closures ran at once");
    });
}

/// A busy worker still polls its runtime's reactor and timers while tokio
/// tasks are alive (a turn every 8 searches, `WorkerRuntime::turn`): a
/// tokio task's `tokio::time::sleep` ends on time although the worker
/// never runs out of pool tasks. One worker, so no idle one takes the turn
/// instead.
#[test]
fn tokio_timers_fire_while_the_worker_stays_busy_with_pool_tasks() {
    watchdog("tokio-compat: tokio timers on a busy worker", 30, || {
        let p = pool_of(1, "tcbz");
        let spinners = Spinners::start(&p, 4);
        let took = p.block_on(p.spawn(async move {
            let started = std::time::Instant::now();
            let sleeper = tokio::spawn(async {
                for _ in 0..10 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
            sleeper.await.unwrap();
            started.elapsed()
        }));
        spinners.stop(&p);
        let took = took.unwrap();
        assert!(
            took >= Duration::from_millis(50) && took < Duration::from_millis(1000),
            "ten 5 ms tokio sleeps on a busy worker took {took:?}"
        );
    });
}

/// The pool's own timers fire while its workers sleep in their tokio
/// runtimes (the driver's sleeper has its runtime watch the pool's next
/// deadline), also a timer that is due by the time its worker sleeps, and
/// none early.
#[test]
fn pool_timers_fire_while_the_workers_sleep_in_their_runtimes() {
    watchdog("tokio-compat: pool timers", 30, || {
        let p = pool_named("tctm");
        for _ in 0..20 {
            let started = std::time::Instant::now();
            p.block_on(async {
                let long = pool::spawn(async {
                    pool::time::sleep(Duration::from_millis(20)).await;
                });
                let short = pool::spawn(async {
                    for _ in 0..5 {
                        pool::time::sleep(Duration::from_millis(3)).await;
                    }
                });
                long.await.unwrap();
                short.await.unwrap();
            });
            assert!(
                started.elapsed() >= Duration::from_millis(20),
                "a timer fired early"
            );
        }
    });
}

/// The write system calls (`syscw` of `/proc/self/task/*/io`: `write` and
/// its kin, not `send`) made so far by this process's threads whose names
/// start with `prefix`.
fn write_calls_of(prefix: &str) -> u64 {
    let mut calls = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let task = task.unwrap().path();
        let Ok(comm) = std::fs::read_to_string(task.join("comm")) else {
            continue;
        };
        if !comm.trim().starts_with(prefix) {
            continue;
        }
        let io = std::fs::read_to_string(task.join("io")).expect("/proc/self/task/*/io");
        calls += io
            .lines()
            .find_map(|l| l.strip_prefix("syscw:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .expect("a syscw line");
    }
    calls
}

/// A tokio task that awaits a pool socket is woken by the worker's driver
/// poll while the worker is idle (searching, or back from a sleep): the
/// wake is made inside the worker's runtime, a push onto its own queue, not
/// a remote schedule with a write to the runtime's eventfd. Counted by the
/// pool's threads' `write` calls over 200 echoes (a socket's write is a
/// `send`, not counted): one per echo when the wakes are remote (197-200
/// in most runs, never under 10), 0-2 when they are not.
#[test]
fn a_tokio_task_woken_by_a_pool_socket_costs_no_eventfd_write() {
    use futures::{AsyncReadExt, AsyncWriteExt};
    use std::io::{Read, Write};
    const ECHOES: u64 = 200;
    watchdog("tokio-compat: a socket's wake of a tokio task", 30, || {
        let p = pool_of(1, "tcew");
        let listener = p
            .block_on(pool::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || std::net::TcpStream::connect(addr).unwrap());
        // The echo task tells when it ends (its socket closed).
        let (ended, echo_ended) = std::sync::mpsc::channel();
        p.block_on(p.spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            drop(tokio::spawn(async move {
                let mut byte = [0u8; 1];
                while stream.read_exact(&mut byte).await.is_ok() {
                    stream.write_all(&byte).await.unwrap();
                }
                ended.send(()).unwrap();
            }));
        }))
        .unwrap();
        let mut client = client.join().unwrap();
        client.set_nodelay(true).unwrap();
        let mut byte = [0u8; 1];
        // Warm up: the task runs and waits on its socket.
        client.write_all(b"w").unwrap();
        client.read_exact(&mut byte).unwrap();
        let before = write_calls_of("tcew");
        for i in 0..ECHOES {
            client.write_all(&[i as u8]).unwrap();
            client.read_exact(&mut byte).unwrap();
            assert_eq!(byte[0], i as u8);
        }
        let writes = write_calls_of("tcew") - before;
        drop(client);
        echo_ended
            .recv_timeout(Duration::from_secs(5))
            .expect("the echo task ends when its client hangs up");
        assert!(
            writes < ECHOES / 20,
            "the worker made {writes} write calls for {ECHOES} echoes: \
             its wakes of the tokio task wrote to the runtime's eventfd"
        );
    });
}

/// `axum::serve` in `#[pool::main]`: an accept loop in a `block_on` on a
/// plain thread, `tokio::spawn` for every connection. A burst of
/// connections, all waiting in the backlog when the loop first polls,
/// spreads over both workers' runtimes, not all onto the one that poll
/// entered (the poll runs on a tokio budget of 4 operations: `accept`
/// yields after every 4 connections, and the next poll enters the runtime
/// with the fewest tokio tasks).
#[test]
fn a_burst_accepted_in_one_block_on_spreads_over_the_workers() {
    watchdog("tokio-compat: accept burst", 30, || {
        const CONNECTIONS: usize = 32;
        let p = pool_named("tcacc");
        let names = p.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            // Every connection waits in the backlog before the first accept.
            let clients: Vec<std::net::TcpStream> = (0..CONNECTIONS)
                .map(|_| std::net::TcpStream::connect(addr).unwrap())
                .collect();
            let (release, released) = tokio::sync::watch::channel(false);
            let mut started = Vec::new();
            for _ in 0..CONNECTIONS {
                let (socket, _) = listener.accept().await.unwrap();
                let (tx, rx) = tokio::sync::oneshot::channel();
                let mut released = released.clone();
                started.push(rx);
                // A connection's task: alive until the end, as a client's.
                drop(tokio::spawn(async move {
                    let _socket = socket;
                    tx.send(thread_name()).unwrap();
                    let _ = released.wait_for(|r| *r).await;
                }));
            }
            let mut names = Vec::new();
            for rx in started {
                names.push(rx.await.unwrap());
            }
            release.send(true).unwrap();
            drop(clients);
            names
        });
        let on = |w: &str| names.iter().filter(|n| n.as_str() == w).count();
        let (a, b) = (on("tcacc-0"), on("tcacc-1"));
        assert_eq!(a + b, CONNECTIONS, "ran on the workers: {names:?}");
        // 40-60%: 13 to 19 of 32.
        assert!(
            (13..=19).contains(&a),
            "connections by worker: {a} and {b} (a burst accepted in one poll lands on one runtime)"
        );
    });
}

/// A `block_on` future on a plain thread is polled as `#[tokio::main]`'s
/// body is, inside a runtime (the budget of
/// `a_burst_accepted_in_one_block_on_spreads_over_the_workers` comes with
/// it): tokio's `block_in_place` runs its closure there, a
/// tokio resource that yields for the budget is polled again at once, and
/// blocking on a tokio runtime is refused with tokio's words, not hung.
#[test]
fn a_block_on_future_on_a_plain_thread_is_inside_a_runtime_as_tokios_main() {
    watchdog("tokio-compat: block_on as tokio's main", 30, || {
        let p = pool_named("tcmain");
        let (in_place, nested) = p.block_on(async {
            let in_place = tokio::task::block_in_place(|| 7);
            // A channel drained far past one operation a poll.
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            for i in 0..1000 {
                tx.send(i).unwrap();
            }
            drop(tx);
            let mut sum = 0;
            while let Some(i) = rx.recv().await {
                sum += i;
            }
            assert_eq!(sum, 999 * 1000 / 2);
            let nested =
                std::panic::catch_unwind(|| tokio::runtime::Handle::current().block_on(async {}));
            (in_place, nested.is_err())
        });
        assert_eq!(in_place, 7);
        assert!(nested, "a tokio block_on inside the pool's is refused");
        // A block_on nested in a pool block_on's future is polled too.
        let inner = p.block_on(async { p.block_on(async { 5 }) });
        assert_eq!(inner, 5);
    });
}
