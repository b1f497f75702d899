//! Scenarios for the leak check (`scripts/leak-check` runs this binary under
//! valgrind and requires zero bytes definitely lost). Each also asserts its
//! behaviour, so the file is a normal test too; it has no tight timing, so it
//! passes at valgrind's speed.

use pool::Builder;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use tests::{watchdog, DropCounter};

/// Generous: valgrind runs code many times slower.
const LIMIT_SECS: u64 = 300;

#[test]
fn shutdown_with_pending_queued_and_running_tasks() {
    watchdog("leaks: shutdown with pending tasks", LIMIT_SECS, || {
        let drops = DropCounter::new();
        let p = Builder::new().worker_threads(2).build().unwrap();
        let mut handles = Vec::new();
        for i in 0..200 {
            let t = drops.track();
            handles.push(p.spawn(async move {
                let _t = t;
                if i % 2 == 0 {
                    std::future::pending::<()>().await;
                }
                pool::yield_now().await;
            }));
        }
        let (_keep_tx, rx) = futures::channel::oneshot::channel::<()>();
        let t = drops.track();
        handles.push(p.spawn(async move {
            let _t = t;
            let _ = rx.await;
        }));
        drop(p);
        assert_eq!(drops.drops(), 201);
        for h in handles {
            let _ = pool::block_on(h);
        }
    });
}

#[test]
fn aborted_tasks() {
    watchdog("leaks: aborted tasks", LIMIT_SECS, || {
        let drops = DropCounter::new();
        let p = Builder::new().worker_threads(2).build().unwrap();
        let handles: Vec<_> = (0..100)
            .map(|_| {
                let t = drops.track();
                p.spawn(async move {
                    let _t = t;
                    std::future::pending::<()>().await
                })
            })
            .collect();
        for h in &handles {
            h.abort();
        }
        for h in handles {
            assert!(p.block_on(h).unwrap_err().is_cancelled());
        }
        assert_eq!(drops.drops(), 100);
    });
}

#[test]
fn panicking_tasks_and_closures() {
    watchdog("leaks: panicking tasks", LIMIT_SECS, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        for i in 0..20 {
            let payload = vec![i; 100];
            let err = p
                .block_on(p.spawn(async move {
                    let _owned = payload;
                    panic!("task {i} panics");
                }))
                .unwrap_err();
            assert!(err.is_panic());
            drop(err.into_panic());
            let err = p.block_on(p.spawn_blocking(move || panic!("closure {i} panics")));
            assert!(err.unwrap_err().is_panic());
        }
    });
}

#[test]
fn detached_tasks_and_dropped_handles() {
    watchdog("leaks: detached tasks", LIMIT_SECS, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        let (tx, rx) = mpsc::channel();
        for i in 0..100 {
            let tx = tx.clone();
            drop(p.spawn(async move { tx.send(i).unwrap() }));
        }
        drop(tx);
        assert_eq!(rx.iter().count(), 100);
        // Outputs nobody awaits are dropped with their tasks.
        let outputs = Arc::new(AtomicUsize::new(0));
        for _ in 0..50 {
            let o = outputs.clone();
            drop(p.spawn(async move { Box::new(o.fetch_add(1, Ordering::SeqCst)) }));
        }
    });
}

/// Wakers and join handles kept past the pool's drop: the tasks' headers
/// hold the pool's shares (`executor/src/task/share.rs`), spawned on a
/// worker (from its cache) and from outside. The workers gave their caches
/// back when they left; the wakes after shutdown still reach the pool, and
/// the last header dropped, here on an outside thread, frees it.
#[test]
fn wakers_and_handles_that_outlive_their_pool() {
    watchdog("leaks: wakers past the pool", LIMIT_SECS, || {
        let drops = DropCounter::new();
        let wakers = Arc::new(std::sync::Mutex::new(Vec::new()));
        let p = Builder::new().worker_threads(2).build().unwrap();
        let park = |wakers: Arc<std::sync::Mutex<Vec<std::task::Waker>>>, t| async move {
            let _t = t;
            std::future::poll_fn(|cx| {
                wakers.lock().unwrap().push(cx.waker().clone());
                std::task::Poll::<()>::Pending
            })
            .await
        };
        let mut handles: Vec<_> = (0..50)
            .map(|_| p.spawn(park(wakers.clone(), drops.track())))
            .collect();
        let inside = {
            let (wakers, drops) = (wakers.clone(), drops.clone());
            p.block_on(p.spawn(async move {
                (0..50)
                    .map(|_| pool::spawn(park(wakers.clone(), drops.track())))
                    .collect::<Vec<_>>()
            }))
            .unwrap()
        };
        handles.extend(inside);
        tests::wait_for(
            "every task parked",
            std::time::Duration::from_secs(60),
            || wakers.lock().unwrap().len() == 100,
        );
        drop(p);
        assert_eq!(drops.drops(), 100, "shutdown dropped every future");
        for waker in wakers.lock().unwrap().iter() {
            waker.wake_by_ref();
        }
        for h in handles {
            assert!(pool::block_on(h).unwrap_err().is_cancelled());
        }
        wakers.lock().unwrap().clear();
    });
}

#[test]
fn queued_blocking_closures_cancelled_at_shutdown() {
    watchdog("leaks: queued blocking closures", LIMIT_SECS, || {
        let p = Builder::new()
            .worker_threads(1)
            .max_blocking_threads(1)
            .build()
            .unwrap();
        let (tx, rx) = mpsc::channel::<()>();
        let busy = p.spawn_blocking(move || {
            let _ = rx.recv();
        });
        let queued: Vec<_> = (0..10)
            .map(|i| p.spawn_blocking(move || vec![i; 10]))
            .collect();
        drop(tx);
        drop(p);
        let _ = pool::block_on(busy);
        for h in queued {
            let _ = pool::block_on(h);
        }
    });
}

#[test]
fn block_on_and_pools_in_a_loop() {
    watchdog("leaks: pool churn", LIMIT_SECS, || {
        for i in 0..10 {
            let p = Builder::new().worker_threads(1 + i % 3).build().unwrap();
            let v = p.block_on(async move {
                let inner = pool::spawn(async move { pool::block_on(async move { i * 2 }) });
                inner.await.unwrap()
            });
            assert_eq!(v, i * 2);
            drop(p.spawn(std::future::pending::<()>()));
        }
    });
}

/// Counts its drop (through the field), then panics.
struct Bomb {
    _tracked: tests::Tracked,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("a destructor panics (on purpose)");
    }
}

#[test]
fn destructors_and_hooks_that_panic() {
    watchdog("leaks: panicking destructors", LIMIT_SECS, || {
        // Silence the deliberate panics (only those).
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let on_purpose = info
                .payload()
                .downcast_ref::<&str>()
                .is_some_and(|s| s.contains("(on purpose)"));
            if !on_purpose {
                default_hook(info);
            }
        }));
        let drops = DropCounter::new();
        let p = Builder::new()
            .worker_threads(2)
            .on_thread_start(|| panic!("a start hook panics (on purpose)"))
            .on_thread_stop(|| panic!("a stop hook panics (on purpose)"))
            .build()
            .unwrap();
        // Detached outputs, and an unread blocking output, that panic when
        // dropped.
        for _ in 0..20 {
            let t = drops.track();
            drop(p.spawn(async move { Bomb { _tracked: t } }));
        }
        let t = drops.track();
        let blocking = p.spawn_blocking(move || Bomb { _tracked: t });
        // Pending futures that panic when dropped: aborted, or left for the
        // shutdown.
        let pending: Vec<_> = (0..20)
            .map(|_| {
                let b = Bomb {
                    _tracked: drops.track(),
                };
                p.spawn(async move {
                    let _b = b;
                    std::future::pending::<()>().await
                })
            })
            .collect();
        for h in &pending[..10] {
            h.abort();
        }
        while !blocking.is_finished() {
            std::thread::yield_now();
        }
        drop(blocking);
        drop(p);
        assert_eq!(drops.drops(), 41, "every value dropped once");
        for h in pending {
            assert!(pool::block_on(h).unwrap_err().is_panic());
        }
    });
}

/// The live-task dump reads task headers through the registry's wakers
/// (`task::header_of`, unsafe) while tasks are spawned, polled, finished
/// and aborted on the workers; a traced pool with a stall handler records
/// and writes its timeline meanwhile. Under valgrind, a header read after
/// its task was freed is an error that fails the check.
#[test]
fn dumps_during_churn_in_a_traced_pool_with_a_stall_handler() {
    watchdog("leaks: dump during churn", LIMIT_SECS, || {
        let path =
            std::env::temp_dir().join(format!("pool-leaks-trace-{}.json", std::process::id()));
        let pool = Builder::new()
            .worker_threads(2)
            .trace(&path)
            .on_stall(std::time::Duration::from_millis(1), |stall| {
                assert!(stall.worker < 2);
            })
            .build()
            .unwrap();
        let handle = pool.handle();
        let dumps = Arc::new(AtomicUsize::new(0));
        let dumped = dumps.clone();
        let spawner = std::thread::spawn(move || {
            let mut kept = Vec::new();
            for i in 0..2_000u32 {
                if i == 1_000 {
                    // Halfway, wait for a dump: under valgrind the spawner
                    // could otherwise finish before the first one.
                    while dumped.load(Ordering::SeqCst) == 0 {
                        std::thread::yield_now();
                    }
                }
                if i % 16 == 0 {
                    // Let the dumping thread in between spawns.
                    std::thread::yield_now();
                }
                let h = handle.spawn(async move {
                    for _ in 0..(i % 4) {
                        pool::yield_now().await;
                    }
                    i
                });
                if i % 5 == 0 {
                    let pending = handle.spawn(std::future::pending::<()>());
                    pending.abort();
                    kept.push(pending);
                }
                drop(h);
            }
            kept
        });
        while !spawner.is_finished() {
            let tasks = pool.tasks();
            let mut ids: Vec<_> = tasks.iter().map(|t| t.id).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), tasks.len(), "a task listed twice");
            assert!(tasks
                .iter()
                .all(|t| t.polls < 1_000 && t.spawned_at.line() > 0));
            let _ = pool::TaskDump(&tasks).to_string();
            dumps.fetch_add(1, Ordering::SeqCst);
        }
        for aborted in spawner.join().unwrap() {
            assert!(pool.block_on(aborted).unwrap_err().is_cancelled());
        }
        assert!(
            dumps.load(Ordering::SeqCst) > 0,
            "the dump never ran during the churn"
        );
        tests::wait_for(
            "every task done",
            std::time::Duration::from_secs(120),
            || pool.tasks().is_empty(),
        );
        drop(pool);
        let json = std::fs::read_to_string(&path).unwrap();
        assert!(json.contains("\"name\":\"poll\""));
        std::fs::remove_file(&path).unwrap();
    });
}

#[test]
fn os_surface_types_pending_at_shutdown_and_dropped() {
    use futures::{AsyncReadExt, AsyncWriteExt};
    use pool::net::{UnixDatagram, UnixListener, UnixStream};
    use pool::process::Command;
    use pool::signal::unix::{signal, SignalKind};
    watchdog(
        "leaks: signals, Unix sockets, Async, processes",
        LIMIT_SECS,
        || {
            let path = std::env::temp_dir().join(format!("pool-leaks-{}.sock", std::process::id()));
            let _ = std::fs::remove_file(&path);
            for round in 0..3 {
                let p = Builder::new().worker_threads(2).build().unwrap();
                let drops = DropCounter::new();
                p.block_on(async {
                    // Used to the end: a Unix echo, a datagram, a process with
                    // pipes, a lookup, an Async pipe.
                    let listener = UnixListener::bind(&path).unwrap();
                    let server = pool::spawn(async move {
                        let (mut conn, _) = listener.accept().await.unwrap();
                        let mut buf = [0u8; 4];
                        conn.read_exact(&mut buf).await.unwrap();
                        conn.write_all(&buf).await.unwrap();
                    });
                    let mut client = UnixStream::connect(&path).await.unwrap();
                    client.write_all(b"ping").await.unwrap();
                    let mut back = [0u8; 4];
                    client.read_exact(&mut back).await.unwrap();
                    server.await.unwrap();
                    let _ = std::fs::remove_file(&path);
                    let (a, b) = UnixDatagram::pair().unwrap();
                    a.send(b"x").await.unwrap();
                    b.recv(&mut back).await.unwrap();
                    let out = Command::new("echo").arg("hi").output().await.unwrap();
                    assert_eq!(out.stdout, b"hi\n");
                    let _ = pool::net::lookup_host("localhost:1").await.unwrap().count();
                    let (r, w) = std::os::unix::net::UnixStream::pair().unwrap();
                    let r = pool::io::Async::new(r).unwrap();
                    let mut w = pool::io::Async::new(w).unwrap();
                    w.write_all(b"y").await.unwrap();
                    let mut one = [0u8; 1];
                    (&r).read_exact(&mut one).await.unwrap();
                    // Left pending when the pool goes: a Signal, a Child (killed
                    // on drop), a Unix read, an Async read.
                    let t = drops.track();
                    let mut sig = signal(SignalKind::from_raw(45)).unwrap();
                    let mut child = Command::new("sleep")
                        .arg("30")
                        .kill_on_drop(true)
                        .spawn()
                        .unwrap();
                    let (mut s1, _s2) = UnixStream::pair().unwrap();
                    let r2 = r;
                    drop(pool::spawn(async move {
                        let _t = t;
                        let (mut buf1, mut buf2) = ([0u8; 1], [0u8; 1]);
                        let mut r2 = &r2;
                        let _ = futures::join!(
                            sig.recv(),
                            child.wait(),
                            s1.read(&mut buf1),
                            r2.read(&mut buf2)
                        );
                    }));
                    pool::yield_now().await;
                });
                drop(p);
                assert_eq!(
                    drops.drops(),
                    1,
                    "round {round}: the pending task was dropped with its pool"
                );
            }
        },
    );
}

#[test]
fn scope_spawns_in_worker_blocks_and_boxes_then_pools_dropped() {
    watchdog("leaks: scope spawns in job blocks", LIMIT_SECS, || {
        // Small closures are made in blocks of their worker's cache and kept
        // by the worker that ran them; large ones are boxed; spawns from a
        // thread outside the pool run as tasks. Each pool's workers free
        // their caches when they exit.
        for _ in 0..3 {
            let p = Builder::new().worker_threads(2).build().unwrap();
            let small = AtomicUsize::new(0);
            let large = AtomicUsize::new(0);
            p.scope(|s| {
                for i in 0..2_000usize {
                    let (small, large) = (&small, &large);
                    s.spawn(move |s| {
                        small.fetch_add(i % 2, Ordering::Relaxed);
                        let payload = [i as u64; 16];
                        s.spawn(move |_| {
                            large
                                .fetch_add(payload.iter().sum::<u64>() as usize, Ordering::Relaxed);
                        });
                    });
                }
            });
            assert_eq!(small.load(Ordering::Relaxed), 1_000);
            assert_eq!(
                large.load(Ordering::Relaxed),
                (0..2_000usize).map(|i| 16 * i).sum::<usize>()
            );
            let outside = AtomicUsize::new(0);
            p.scope(|s| {
                // From a plain thread: made in a fresh block, run in a task.
                std::thread::scope(|t| {
                    t.spawn(|| {
                        for _ in 0..100 {
                            s.spawn(|_| {
                                outside.fetch_add(1, Ordering::Relaxed);
                            });
                        }
                    });
                });
            });
            assert_eq!(outside.load(Ordering::Relaxed), 100);
            drop(p);
        }
    });
}

#[test]
fn seeded_pools_dropped_with_pending_sleeping_local_found_and_queued_work() {
    watchdog("leaks: seeded pools", LIMIT_SECS, || {
        for seed in 0..5 {
            let drops = DropCounter::new();
            let p = Builder::new().seed(seed).worker_threads(3).build().unwrap();
            let (_never, rx) = futures::channel::oneshot::channel::<()>();
            let rx = Arc::new(std::sync::Mutex::new(Some(rx)));
            for i in 0..60 {
                let t = drops.track();
                let rx = Arc::clone(&rx);
                drop(p.spawn(async move {
                    let _t = t;
                    match i % 3 {
                        // Waits for ever (one of them on the channel).
                        0 => {
                            let rx = rx.lock().unwrap().take();
                            match rx {
                                Some(rx) => drop(rx.await),
                                None => std::future::pending::<()>().await,
                            }
                        }
                        // Sleeps past the pool's life.
                        1 => pool::time::sleep(std::time::Duration::from_secs(3600)).await,
                        // Yields for ever: runnable, queued or held by a
                        // worker's search when the run returns.
                        _ => loop {
                            pool::yield_now().await;
                        },
                    }
                }));
            }
            // A local task that waits for ever, and a blocking closure that
            // is queued and never run.
            let local = drops.track();
            let queued = drops.track();
            p.block_on(async move {
                drop(pool::spawn(async move {
                    drop(pool::spawn_local(async move {
                        let _t = local;
                        std::future::pending::<()>().await;
                    }));
                }));
                for _ in 0..20 {
                    pool::yield_now().await;
                }
            });
            drop(p.spawn_blocking(move || drop(queued)));
            drop(p);
            assert_eq!(
                drops.drops(),
                62,
                "seed {seed}: every future dropped with its pool"
            );
        }
    });
}
