//! `join` and `scope`: values, nesting, real parallelism, one worker, calls
//! from outside any pool, from async tasks and from blocking threads,
//! panics, many spawns and borrowed chunks.

use pool::Builder;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use tests::watchdog;

fn pool(workers: usize) -> pool::Pool {
    Builder::new().worker_threads(workers).build().unwrap()
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = pool::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

#[test]
fn join_returns_both_values_and_nests() {
    watchdog("join_fib", 60, || {
        let p = pool(2);
        assert_eq!(p.join(|| 1, || "two"), (1, "two"));
        assert_eq!(p.join(|| fib(25), || fib(20)), (75_025, 6_765));
    });
}

#[test]
fn both_halves_run_in_parallel_on_two_workers() {
    watchdog("join_parallel", 30, || {
        // Each half waits for the other at a barrier: only two threads
        // running them at once can finish.
        let p = pool(2);
        let barrier = Barrier::new(2);
        let (a, b) = p.join(|| barrier.wait().is_leader(), || barrier.wait().is_leader());
        assert!(a != b, "exactly one leader");
        assert_eq!(
            p.metrics().jobs,
            1,
            "the second half was stolen and run from the deque"
        );
    });
}

#[test]
fn a_one_worker_pool_runs_joins_and_scopes_alone() {
    watchdog("join_one_worker", 60, || {
        let p = pool(1);
        assert_eq!(p.join(|| fib(20), || fib(15)), (6_765, 610));
        let count = AtomicUsize::new(0);
        p.scope(|s| {
            for _ in 0..100 {
                s.spawn(|_| {
                    count.fetch_add(1, Ordering::Relaxed);
                });
            }
        });
        assert_eq!(count.into_inner(), 100);
    });
}

#[test]
fn calls_from_outside_any_pool_use_the_global_pool() {
    watchdog("join_global", 60, || {
        assert_eq!(pool::join(|| fib(15), || 2), (610, 2));
        let mut v = vec![0u32; 64];
        pool::scope(|s| {
            for (i, x) in v.iter_mut().enumerate() {
                s.spawn(move |_| *x = i as u32);
            }
        });
        assert!(v.iter().enumerate().all(|(i, x)| *x == i as u32));
    });
}

#[test]
fn join_inside_an_async_task_blocks_only_that_task() {
    watchdog("join_in_task", 60, || {
        let p = pool(2);
        let out = p.block_on(p.spawn(async {
            let other = pool::spawn(async { 5 });
            let (a, b) = pool::join(|| fib(18), || fib(17));
            (a + b, other.await.unwrap())
        }));
        assert_eq!(out.unwrap(), (4_181, 5));
        // From `Pool::block_on` on a plain thread too.
        assert_eq!(p.block_on(async { pool::join(|| 1, || 2) }), (1, 2));
    });
}

#[test]
fn a_join_waiting_for_its_stolen_half_keeps_running_tasks() {
    watchdog("join_helps", 30, || {
        // One worker joins; its second half is stolen by the other, which
        // then waits for a task: the joiner, waiting, must run that task.
        let p = pool(2);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let started = AtomicBool::new(false);
        let ran = p.block_on(p.spawn(async move {
            let started = &started;
            pool::join(
                || {
                    // Let the other worker steal the second half first.
                    while !started.load(Ordering::SeqCst) {
                        std::hint::spin_loop();
                    }
                    drop(pool::spawn(async move { tx.send(()).unwrap() }));
                },
                move || {
                    started.store(true, Ordering::SeqCst);
                    rx.recv().unwrap();
                },
            );
            true
        }));
        assert!(ran.unwrap());
    });
}

#[test]
fn join_inside_spawn_blocking_runs_on_that_pool() {
    watchdog("join_in_blocking", 30, || {
        let p = pool(2);
        let h = p.spawn_blocking(|| {
            pool::join(
                || std::thread::current().name().unwrap_or("").to_string(),
                || std::thread::current().name().unwrap_or("").to_string(),
            )
        });
        let (a, b) = p.block_on(h).unwrap();
        for name in [a, b] {
            assert!(name.starts_with("pool-worker-"), "ran on {name:?}");
        }
    });
}

#[test]
fn a_panic_in_either_half_is_resumed_after_both_finished() {
    watchdog("join_panics", 30, || {
        let p = pool(2);
        for first_panics in [true, false] {
            let other_finished = AtomicBool::new(false);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let slow = || {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    other_finished.store(true, Ordering::SeqCst);
                };
                if first_panics {
                    p.join(|| panic!("a panics"), slow);
                } else {
                    p.join(slow, || panic!("b panics"));
                }
            }));
            let payload = result.expect_err("the panic is resumed");
            let msg = payload.downcast_ref::<&str>().copied().unwrap_or("");
            assert_eq!(msg, if first_panics { "a panics" } else { "b panics" });
            assert!(
                other_finished.load(Ordering::SeqCst),
                "the other half finished first"
            );
        }
        // Both panic: `a`'s wins.
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            p.join(|| panic!("a"), || panic!("b"))
        }))
        .unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"a"));
        // The pool goes on.
        assert_eq!(p.join(|| 1, || 2), (1, 2));
    });
}

#[test]
fn a_panic_in_a_scope_spawn_is_resumed_after_every_spawn_finished() {
    watchdog("scope_panics", 30, || {
        let p = pool(2);
        let finished = AtomicUsize::new(0);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            p.scope(|s| {
                s.spawn(|_| panic!("a spawn panics"));
                for _ in 0..10 {
                    s.spawn(|_| {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                        finished.fetch_add(1, Ordering::SeqCst);
                    });
                }
            })
        }));
        assert_eq!(
            finished.load(Ordering::SeqCst),
            10,
            "the others finished first"
        );
        let payload = result.expect_err("the spawn's panic is resumed");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"a spawn panics"));
        // A panic of the scope's own closure, with spawns still running.
        let finished = AtomicUsize::new(0);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            p.scope(|s| {
                s.spawn(|_| {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    finished.fetch_add(1, Ordering::SeqCst);
                });
                panic!("the scope panics");
            })
        }));
        assert_eq!(finished.load(Ordering::SeqCst), 1);
        let payload = result.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"the scope panics"));
    });
}

#[test]
fn ten_thousand_scope_spawns_and_nested_spawns() {
    watchdog("scope_many", 60, || {
        let p = pool(2);
        let count = AtomicUsize::new(0);
        p.scope(|s| {
            for _ in 0..10_000 {
                s.spawn(|s| {
                    count.fetch_add(1, Ordering::Relaxed);
                    s.spawn(|_| {
                        count.fetch_add(1, Ordering::Relaxed);
                    });
                });
            }
        });
        assert_eq!(count.into_inner(), 20_000);
    });
}

#[test]
fn scope_spawns_borrow_a_mut_chunk_each() {
    watchdog("scope_chunks", 30, || {
        let p = pool(2);
        let mut data: Vec<u64> = (0..100_000).collect();
        p.scope(|s| {
            for chunk in data.chunks_mut(1_000) {
                s.spawn(move |_| chunk.iter_mut().for_each(|x| *x *= 3));
            }
        });
        assert!(data.iter().enumerate().all(|(i, x)| *x == 3 * i as u64));
    });
}

/// `deep(n, at)`: `n` nested joins through `$join`, returning `n`; the
/// innermost call stores the address of one of its locals in `at`.
macro_rules! deep {
    ($name:ident, $join:path) => {
        fn $name(n: u32, at: &AtomicUsize) -> u32 {
            let local = 0u8;
            if n == 0 {
                let addr = std::hint::black_box(&local) as *const u8 as usize;
                at.store(addr, Ordering::Relaxed);
                return 0;
            }
            let (a, b) = $join(|| $name(n - 1, at), || 1);
            a + b
        }
    };
}
deep!(deep_pool, pool::join);
deep!(deep_rayon, rayon::join);

/// Stack bytes per level of `deep`: how far its innermost local moves
/// between depths 1 and 101.
fn stack_per_level(deep: fn(u32, &AtomicUsize) -> u32) -> usize {
    let bottom = |depth| {
        let at = AtomicUsize::new(0);
        assert_eq!(deep(depth, &at), depth);
        at.into_inner()
    };
    bottom(1).abs_diff(bottom(101)) / 100
}

#[test]
fn nested_joins_take_no_more_stack_than_rayons() {
    watchdog("join_deep", 60, || {
        let p = pool(1);
        let r = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let ours = p.join(|| stack_per_level(deep_pool), || ()).0;
        let rayons = r.install(|| stack_per_level(deep_rayon));
        eprintln!("stack per nested join: pool {ours} B, rayon {rayons} B");
        assert!(
            ours <= rayons + rayons / 4,
            "a nested join takes {ours} bytes of stack, rayon's {rayons}"
        );
        // As deep as rayon's default (2 MiB) worker stack holds with room to
        // spare, up to 10 000 levels: ours must hold it too. (10 000 levels
        // take about 2 MB in a release build, for both.)
        const DEFAULT_STACK: usize = 2 << 20;
        let depth = (DEFAULT_STACK * 3 / 4 / rayons).min(10_000) as u32;
        eprintln!("nested joins run {depth} deep on both");
        let at = AtomicUsize::new(0);
        assert_eq!(p.join(|| deep_pool(depth, &at), || 0), (depth, 0));
        assert_eq!(r.install(|| deep_rayon(depth, &at)), depth);
    });
}

#[test]
fn a_task_woken_from_outside_runs_while_the_only_worker_is_in_a_long_join() {
    watchdog("join_task_latency", 60, || {
        // The only worker recurses through joins for a long time, popping
        // every second half back inline (no search for work); a task woken
        // from outside meanwhile must run before the recursion ends, not
        // after it.
        fn busy_tree(depth: u32) -> u64 {
            if depth == 0 {
                return (0..20_000u64).fold(0, |s, x| s.wrapping_add(std::hint::black_box(x)));
            }
            let (a, b) = pool::join(|| busy_tree(depth - 1), || busy_tree(depth - 1));
            a.wrapping_add(b)
        }
        let p = pool(1);
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let ran_at = p.spawn(async move {
            rx.await.unwrap();
            std::time::Instant::now()
        });
        let sender = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            tx.send(()).unwrap();
        });
        let ended_at = p.join(
            || {
                let mut rounds = 0;
                let start = std::time::Instant::now();
                while start.elapsed() < std::time::Duration::from_millis(200) {
                    std::hint::black_box(busy_tree(12));
                    rounds += 1;
                }
                (rounds, std::time::Instant::now())
            },
            || (),
        );
        sender.join().unwrap();
        let ran_at = p.block_on(ran_at).unwrap();
        assert!(
            ran_at < ended_at.0 .1,
            "the woken task waited for the whole recursion ({} rounds)",
            ended_at.0 .0
        );
    });
}

#[test]
fn a_scope_spawn_from_a_thread_outside_the_pool_still_runs_before_scope_returns() {
    watchdog("scope_spawn_outside", 30, || {
        let p = pool(2);
        let count = AtomicUsize::new(0);
        p.scope(|s| {
            // A plain thread spawns onto the scope: its closures go into
            // the pool as tasks, and the scope still waits for them.
            std::thread::scope(|t| {
                t.spawn(|| {
                    for _ in 0..100 {
                        s.spawn(|_| {
                            std::thread::sleep(std::time::Duration::from_micros(100));
                            count.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                });
            });
        });
        assert_eq!(count.into_inner(), 100);
    });
}

#[test]
fn join_on_a_pool_that_shut_down_panics_with_a_clear_message() {
    watchdog("join_after_shutdown", 30, || {
        // A blocking closure outlives its pool's shutdown, then joins on
        // that pool: nothing can run the work, so join panics and says why.
        let p = pool(1);
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (out_tx, out_rx) = std::sync::mpsc::channel::<String>();
        drop(p.spawn_blocking(move || {
            go_rx.recv().unwrap();
            let err = std::panic::catch_unwind(|| pool::join(|| 1, || 2)).unwrap_err();
            let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
            out_tx.send(msg).unwrap();
        }));
        std::thread::sleep(std::time::Duration::from_millis(20));
        p.shutdown_timeout(std::time::Duration::ZERO);
        go_tx.send(()).unwrap();
        let msg = out_rx.recv().unwrap();
        assert!(
            msg.contains("shut down before the work could start"),
            "{msg}"
        );
    });
}

/// A binary tree of joins `depth` deep whose leaves each spin `leaf` and
/// record the thread that ran them.
fn tree(
    depth: u32,
    leaf: std::time::Duration,
    ran_on: &std::sync::Mutex<Vec<std::thread::ThreadId>>,
) -> u64 {
    if depth == 0 {
        let start = std::time::Instant::now();
        while start.elapsed() < leaf {
            std::hint::spin_loop();
        }
        ran_on.lock().unwrap().push(std::thread::current().id());
        return 1;
    }
    let (a, b) = pool::join(
        || tree(depth - 1, leaf, ran_on),
        || tree(depth - 1, leaf, ran_on),
    );
    a + b
}

#[test]
fn a_recursion_under_one_outer_join_spreads_onto_an_idle_worker() {
    watchdog("join_lazy_spread", 60, || {
        // The outer join's second half is nothing: the other worker takes
        // it (or not) and is idle again at once. Every fork of the tree is
        // an inner join, which offers its second half only when an idle
        // worker asks for one: were those never offered, one thread would
        // run every leaf.
        let p = pool(2);
        let ran_on = std::sync::Mutex::new(Vec::new());
        let leaf = std::time::Duration::from_micros(200);
        let (leaves, ()) = p.join(|| tree(8, leaf, &ran_on), || ());
        assert_eq!(leaves, 256);
        let ran_on = ran_on.into_inner().unwrap();
        let threads: std::collections::HashSet<_> = ran_on.iter().collect();
        assert_eq!(
            threads.len(),
            2,
            "both workers ran leaves of the tree (the idle one asked for work)"
        );
    });
}

/// `f` under `levels` more `join`s of this worker's stack.
fn under_joins<R: Send>(levels: usize, f: &(dyn Fn() -> R + Sync)) -> R {
    if levels == 0 {
        f()
    } else {
        pool::join(|| under_joins(levels - 1, f), || ()).0
    }
}

#[test]
fn a_panic_in_a_nested_join_that_nobody_took_is_resumed_after_both_halves() {
    watchdog("join_nested_panics", 30, || {
        // One worker: nobody asks for work, so the inner joins' second
        // halves are never offered and run inline. At depth 1 the join is
        // plain (two calls); at depth 8 it links its half (`LINK_EVERY`).
        let p = pool(1);
        for levels in [0, 7] {
            let b_ran = AtomicBool::new(false);
            let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                p.join(
                    || {
                        under_joins(levels, &|| {
                            pool::join(|| panic!("inner a"), || b_ran.store(true, Ordering::SeqCst))
                        })
                    },
                    || (),
                )
            }))
            .unwrap_err();
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"inner a"));
            assert!(
                b_ran.load(Ordering::SeqCst),
                "b ran before a's panic was resumed ({levels} levels under)"
            );
            let a_ran = AtomicBool::new(false);
            let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                p.join(
                    || {
                        under_joins(levels, &|| {
                            pool::join(|| a_ran.store(true, Ordering::SeqCst), || panic!("inner b"))
                        })
                    },
                    || (),
                )
            }))
            .unwrap_err();
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"inner b"));
            assert!(a_ran.load(Ordering::SeqCst));
            // Both panic: `a`'s wins.
            let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                p.join(
                    || under_joins(levels, &|| pool::join(|| panic!("a"), || panic!("b"))),
                    || (),
                )
            }))
            .unwrap_err();
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"a"));
            assert_eq!(
                p.join(|| under_joins(levels, &|| pool::join(|| 1, || 2)), || 3),
                ((1, 2), 3)
            );
        }
    });
}
