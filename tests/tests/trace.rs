//! Seeing inside: task ids, the live-task dump, the stall detector and the
//! timeline (`executor/src/inspect/`). Each test asserts what a pool without
//! the feature, or with it broken, gets wrong.

use pool::{Builder, Stall, TaskState};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tests::{wait_for, wait_until_asleep, watchdog};

/// Poll until `cond` holds for the pool's dump, or fail naming `what`.
fn wait_for_dump(pool: &pool::Pool, what: &str, cond: impl Fn(&[pool::TaskInfo]) -> bool) {
    wait_for(what, Duration::from_secs(10), || cond(&pool.tasks()));
}

#[test]
fn ids_are_unique_and_known_inside_the_task() {
    watchdog("ids", 60, || {
        assert_eq!(pool::task_id(), None, "no task outside the pool");
        let pool = Builder::new().worker_threads(2).build().unwrap();
        let handle = pool.handle();
        // From two outside threads and from inside tasks at once.
        let outside: Vec<_> = (0..2)
            .map(|_| {
                let handle = handle.clone();
                std::thread::spawn(move || {
                    (0..500)
                        .map(|_| handle.spawn(async { pool::task_id() }))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let inside = pool.block_on(pool.spawn(async {
            let hs: Vec<_> = (0..500)
                .map(|_| pool::spawn(async { pool::task_id() }))
                .collect();
            (pool::task_id(), hs)
        }));
        let (parent, inner) = inside.unwrap();
        assert!(parent.is_some());
        let mut all = vec![];
        for t in outside {
            all.extend(t.join().unwrap());
        }
        all.extend(inner);
        let mut seen = HashSet::new();
        for h in all {
            let id = h.id();
            assert!(seen.insert(id), "task id {id} handed out twice");
            assert_eq!(
                pool.block_on(h).unwrap(),
                Some(id),
                "inside, task_id() is the handle's id"
            );
        }
        assert!(!seen.contains(&parent.unwrap()));
        // A second pool never reuses an id either.
        let other = Builder::new().worker_threads(1).build().unwrap();
        let h = other.spawn(async {});
        assert!(!seen.contains(&h.id()));
        // A block_on inside a task runs other tasks on that worker, and puts
        // the outer id back after them.
        let one = Builder::new().worker_threads(1).build().unwrap();
        let (outer, before, after, inner_id) = one
            .block_on(one.spawn(async {
                let before = pool::task_id();
                let child = pool::spawn(async { pool::task_id() });
                let child_id = child.id();
                let seen_inside = pool::block_on(child).unwrap();
                assert_eq!(seen_inside, Some(child_id));
                (before, before, pool::task_id(), child_id)
            }))
            .unwrap();
        assert_eq!(
            before, after,
            "the outer task's id is restored after a nested poll"
        );
        assert_ne!(outer, Some(inner_id));
        assert_eq!(
            format!("{}", inner_id),
            format!("{inner_id:?}")
                .trim_start_matches("TaskId(")
                .trim_end_matches(')')
        );
    });
}

/// Sets its flag when dropped.
struct ReleaseOnDrop(Arc<AtomicBool>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[test]
fn dump_lists_idle_scheduled_and_running_tasks_with_their_spawn_lines() {
    watchdog("dump", 60, || {
        let release = Arc::new(AtomicBool::new(false));
        let pool = Builder::new().worker_threads(1).build().unwrap();
        // Declared after the pool, so dropped before it: a failed assertion
        // releases the busy task, and the pool's drop does not wait for it.
        let _release_on_drop = ReleaseOnDrop(release.clone());
        let idle = pool.spawn(std::future::pending::<()>());
        let idle_line = line!() - 1;
        wait_until_asleep(&pool);
        let r = release.clone();
        let busy = pool.spawn(async move {
            while !r.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
        });
        let busy_line = line!() - 5;
        wait_for_dump(&pool, "the busy task is running", |tasks| {
            tasks
                .iter()
                .any(|t| t.id == busy.id() && t.state == TaskState::Running { worker: 0 })
        });
        // The only worker is busy: a task spawned now waits in the queue.
        let queued = pool.spawn(async {});
        let queued_line = line!() - 1;
        std::thread::sleep(Duration::from_millis(40));
        let tasks = pool.tasks();
        assert_eq!(tasks.len(), 3, "{}", pool::TaskDump(&tasks));
        let find = |id| tasks.iter().find(|t| t.id == id).expect("listed");
        let (i, b, q) = (find(idle.id()), find(busy.id()), find(queued.id()));
        assert_eq!(i.state, TaskState::Idle);
        assert_eq!(b.state, TaskState::Running { worker: 0 });
        assert_eq!(q.state, TaskState::Scheduled);
        for (t, line) in [(i, idle_line), (b, busy_line), (q, queued_line)] {
            assert_eq!(t.spawned_at.file(), file!(), "the user's own file");
            assert_eq!(t.spawned_at.line(), line, "the user's own spawn line");
        }
        assert_eq!((i.polls, b.polls, q.polls), (1, 1, 0));
        assert!(i.age >= Duration::from_millis(30), "age {:?}", i.age);
        assert!(i.age < Duration::from_secs(30));
        let text = pool::TaskDump(&tasks).to_string();
        assert!(
            text.starts_with("3 live tasks (1 running, 1 scheduled, 1 idle)"),
            "{text}"
        );
        let first_task_line = text.lines().nth(1).unwrap();
        assert!(
            first_task_line.contains("running on worker 0"),
            "running first: {text}"
        );
        assert!(text.contains(&format!("{}:{idle_line}", file!())), "{text}");

        // Finished and aborted tasks are forgotten.
        release.store(true, Ordering::Release);
        pool.block_on(busy).unwrap();
        pool.block_on(queued).unwrap();
        idle.abort();
        assert!(pool.block_on(idle).unwrap_err().is_cancelled());
        assert!(pool.tasks().is_empty(), "{}", pool::TaskDump(&pool.tasks()));
        // Blocking closures are not tasks of the workers.
        let blocking = pool.spawn_blocking(|| std::thread::sleep(Duration::from_millis(50)));
        assert!(pool.tasks().is_empty());
        pool.block_on(blocking).unwrap();
    });
}

#[test]
fn finished_tasks_waiting_for_their_removal_batch_are_not_listed() {
    watchdog("removal batch", 60, || {
        // Tasks spawned from outside land in outside shards; finishing them
        // on a worker defers their removal (owned.rs): the dump must skip
        // them all the same.
        let pool = Builder::new().worker_threads(2).build().unwrap();
        let hold = Arc::new(AtomicBool::new(false));
        let h = hold.clone();
        let keeper = pool.spawn(async move {
            // Keeps a worker from going idle (and flushing) for a while.
            let until = Instant::now() + Duration::from_millis(100);
            while !h.load(Ordering::Acquire) && Instant::now() < until {
                pool::yield_now().await;
            }
        });
        let done: Vec<_> = (0..10).map(|_| pool.spawn(async {})).collect();
        for d in done {
            pool.block_on(d).unwrap();
        }
        let listed: Vec<_> = pool.tasks().into_iter().map(|t| t.id).collect();
        assert!(listed.len() <= 1, "only the keeper may be live: {listed:?}");
        hold.store(true, Ordering::Release);
        pool.block_on(keeper).unwrap();
    });
}

/// Stall reports, each with the name of the thread that made it.
type Reports = Arc<Mutex<Vec<(Stall, String)>>>;

/// A pool whose stall reports are collected.
fn stall_pool(threshold: Duration) -> (pool::Pool, Reports) {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let r = reports.clone();
    let pool = Builder::new()
        .worker_threads(2)
        .thread_name("stallpool")
        .on_stall(threshold, move |stall| {
            let thread = std::thread::current().name().unwrap_or("").to_string();
            r.lock().unwrap().push((stall.clone(), thread));
        })
        .build()
        .unwrap();
    (pool, reports)
}

#[test]
fn one_long_poll_gives_exactly_one_stall_report_and_short_polls_none() {
    watchdog("stall", 60, || {
        let (pool, reports) = stall_pool(Duration::from_millis(50));
        // Many short polls: no report.
        let short: Vec<_> = (0..2_000)
            .map(|_| pool.spawn(async { pool::yield_now().await }))
            .collect();
        for h in short {
            pool.block_on(h).unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
        assert!(reports.lock().unwrap().is_empty(), "short polls reported");

        // A long poll spawned while every worker sleeps (the watcher is
        // parked, and only the woken worker's unpark gets it looking).
        wait_until_asleep(&pool);
        let start = Instant::now();
        let hog = pool.spawn(async { std::thread::sleep(Duration::from_millis(300)) });
        let hog_line = line!() - 1;
        let hog_id = hog.id();
        pool.block_on(hog).unwrap();
        let took = start.elapsed();
        std::thread::sleep(Duration::from_millis(20));
        let got = reports.lock().unwrap().clone();
        assert_eq!(got.len(), 1, "one report for one long poll: {got:?}");
        let (stall, thread) = &got[0];
        assert_eq!(stall.task, hog_id);
        assert_eq!(stall.spawned_at.line(), hog_line);
        assert_eq!(stall.spawned_at.file(), file!());
        assert!(stall.worker < 2);
        assert!(
            stall.running_for >= Duration::from_millis(50),
            "{:?}",
            stall.running_for
        );
        assert!(
            stall.running_for < took,
            "{:?} within {took:?}",
            stall.running_for
        );
        assert_eq!(thread, "stallpool-watcher", "reported off the workers");
        assert_eq!(pool.metrics().stalls, 1);
    });
}

#[test]
fn a_panicking_stall_handler_does_not_stop_the_reports() {
    watchdog("stall handler panics", 60, || {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let c = calls.clone();
        let pool = Builder::new()
            .worker_threads(1)
            .on_stall(Duration::from_millis(20), move |stall| {
                c.lock().unwrap().push(stall.task);
                panic!("handler bug");
            })
            .build()
            .unwrap();
        let mut ids = vec![];
        for n in 1..=2 {
            // The poll lasts until its own report (at most 5 s), not a
            // fixed time: the watcher runs the panic hook of the report
            // before (a backtrace, under RUST_BACKTRACE=1 and a loaded
            // machine, can take longer than a short poll), and only a
            // watcher that stopped reporting leaves this poll unreported.
            let c = calls.clone();
            let h = pool.spawn(async move {
                let start = Instant::now();
                while c.lock().unwrap().len() < n && start.elapsed() < Duration::from_secs(5) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            ids.push(h.id());
            pool.block_on(h).unwrap();
        }
        wait_for("two reports", Duration::from_secs(5), || {
            calls.lock().unwrap().len() == 2
        });
        assert_eq!(*calls.lock().unwrap(), ids);
        // The worker runs tasks as before.
        assert_eq!(pool.block_on(pool.spawn(async { 5 })).unwrap(), 5);
    });
}

#[test]
fn on_stall_below_a_millisecond_is_invalid_input() {
    let err = Builder::new()
        .on_stall(Duration::from_micros(100), |_| {})
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        err.to_string()
            .contains("on_stall threshold must be at least 1ms"),
        "{err}"
    );
    let err = Builder::new().trace("").build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    let err = Builder::new()
        .trace("/nonexistent-dir-for-pool/trace.json")
        .build()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("/nonexistent-dir-for-pool/trace.json"),
        "{err}"
    );
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("pool-test-{}-{name}", std::process::id()))
}

#[test]
fn the_trace_is_json_with_a_lane_per_worker_and_an_event_per_poll() {
    let path = temp_path("trace.json");
    let polls = watchdog("trace", 60, {
        let path = path.clone();
        move || {
            let pool = Builder::new()
                .worker_threads(2)
                .trace(&path)
                .build()
                .unwrap();
            for round in 0..20 {
                let hs: Vec<_> = (0..50)
                    .map(|i| {
                        pool.spawn(async move {
                            for _ in 0..(i % 3) {
                                pool::yield_now().await;
                            }
                        })
                    })
                    .collect();
                for h in hs {
                    pool.block_on(h).unwrap();
                }
                if round % 5 == 0 {
                    wait_until_asleep(&pool);
                }
            }
            // A block_on on a worker, which waits: its task is pending on a
            // timer (a task ready at once may be stolen and finished by the
            // other worker before the first poll of its handle, when the
            // spawn finds the watcher parked and posts it).
            pool.block_on(pool.spawn(async {
                pool::block_on(pool::spawn(pool::time::sleep(Duration::from_millis(10)))).unwrap();
            }))
            .unwrap();
            pool.join(|| (), || ());
            let polls = pool.metrics().polls;
            drop(pool);
            polls
        }
    });
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).expect("the trace is valid JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let names: Vec<_> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(names, vec![(0, "worker 0".into()), (1, "worker 1".into())]);
    let count = |name: &str| events.iter().filter(|e| e["name"] == name).count() as u64;
    assert_eq!(count("poll"), polls, "one poll event per poll");
    for e in events.iter().filter(|e| e["name"] == "poll") {
        assert_eq!(e["ph"], "X");
        assert!(e["dur"].as_f64().unwrap() >= 0.0);
        assert!(e["args"]["task"].as_u64().unwrap() > 0);
        assert!(e["tid"].as_u64().unwrap() < 2);
    }
    assert!(
        count("sleep") >= 4,
        "sleeps recorded (the pool slept 4 times)"
    );
    assert!(count("sleepy") >= 4);
    assert!(count("block_on") >= 1);
    assert!(
        count("injector") >= 1,
        "outside spawns are taken from the injector"
    );
    // The timer of the block_on above is in the I/O driver: a worker's
    // poll of it (or the end of its sleep in it) is recorded, and one of
    // those made that timer's task ready.
    let drivers: Vec<_> = events.iter().filter(|e| e["name"] == "driver").collect();
    assert!(!drivers.is_empty(), "driver polls recorded");
    for e in &drivers {
        assert_eq!(e["ph"], "X");
        assert!(e["args"]["busy"].is_boolean() && e["args"]["after_sleep"].is_boolean());
    }
    assert!(
        drivers
            .iter()
            .any(|e| e["args"]["tasks"].as_u64().unwrap() >= 1),
        "the timer's wake is recorded with the driver poll that found it"
    );
    let woken_by: HashSet<_> = events
        .iter()
        .filter(|e| e["name"] == "sleep")
        .map(|e| e["args"]["woken_by"].as_str().unwrap().to_string())
        .collect();
    assert!(
        woken_by.contains("a thread outside the pool"),
        "an outside spawn woke a sleeper: {woken_by:?}"
    );
}
