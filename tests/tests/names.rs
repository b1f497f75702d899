//! `pool::task::Builder`: a task's name in the dump, a stall report, a
//! panic's `JoinError`, and its spawns' errors. (The console's Name column
//! is checked in `console.rs`.)

use std::sync::mpsc;
use std::time::Duration;
use tests::watchdog;

fn pool(workers: usize) -> pool::Pool {
    pool::Builder::new()
        .worker_threads(workers)
        .build()
        .unwrap()
}

/// Wait until every live task of `pool` is idle (fails after 5 s).
fn settle(pool: &pool::Pool) {
    let start = std::time::Instant::now();
    while pool
        .tasks()
        .iter()
        .any(|t| t.state != pool::TaskState::Idle)
    {
        assert!(start.elapsed() < Duration::from_secs(5), "tasks never idle");
        std::thread::yield_now();
    }
}

#[test]
fn a_named_task_is_listed_and_dumped_with_its_name() {
    watchdog("names: the dump", 30, || {
        let p = pool(2);
        let named = pool::task::Builder::new()
            .name("fetcher")
            .spawn_on(std::future::pending::<()>(), &p.handle())
            .unwrap();
        let unnamed = p.spawn(std::future::pending::<()>());
        settle(&p);
        let tasks = p.tasks();
        let find = |id| tasks.iter().find(|t| t.id == id).expect("listed");
        assert_eq!(find(named.id()).name.as_deref(), Some("fetcher"));
        assert_eq!(find(unnamed.id()).name, None);
        let dump = pool::TaskDump(&tasks).to_string();
        assert!(
            dump.contains(&format!("task {} `fetcher` idle, 1 poll", named.id())),
            "{dump}"
        );
        assert!(
            dump.contains(&format!("task {} idle, 1 poll", unnamed.id())),
            "{dump}"
        );
        named.abort();
        unnamed.abort();
    });
}

#[test]
fn a_named_panic_says_the_name_and_the_name_goes_with_the_task() {
    watchdog("names: a panic", 30, || {
        let p = pool(2);
        let err = p
            .block_on(async {
                pool::task::Builder::new()
                    .name("fetcher")
                    .spawn(async { panic!("no route") })
                    .unwrap()
                    .await
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "task `fetcher` panicked: no route");
        assert!(format!("{err:?}").contains("fetcher"), "{err:?}");
        // A blocking closure's and a local task's too.
        let err = p
            .block_on(async {
                pool::task::Builder::new()
                    .name("stat")
                    .spawn_blocking(|| panic!("gone"))
                    .unwrap()
                    .await
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "task `stat` panicked: gone");
        let err = p
            .block_on(p.spawn(async {
                pool::task::Builder::new()
                    .name("local")
                    .spawn_local(async {
                        let _not_send = std::rc::Rc::new(());
                        panic!("pinned")
                    })
                    .unwrap()
                    .await
            }))
            .unwrap()
            .unwrap_err();
        assert_eq!(err.to_string(), "task `local` panicked: pinned");
        // An unnamed panic reads as before.
        let err = p.block_on(p.spawn(async { panic!("plain") })).unwrap_err();
        assert_eq!(err.to_string(), "task panicked: plain");
        // Names go with their tasks' registry entries: tasks spawned later
        // (on keys the named ones had) list none.
        for _ in 0..200 {
            let h = pool::task::Builder::new()
                .name("short")
                .spawn_on(async {}, &p.handle())
                .unwrap();
            p.block_on(h).unwrap();
        }
        let later: Vec<_> = (0..200)
            .map(|_| p.spawn(std::future::pending::<()>()))
            .collect();
        settle(&p);
        let named: Vec<_> = p.tasks().into_iter().filter(|t| t.name.is_some()).collect();
        assert!(named.is_empty(), "{named:?}");
        for h in later {
            h.abort();
        }
    });
}

#[test]
fn a_stall_report_names_the_task() {
    watchdog("names: a stall", 30, || {
        let (tx, rx) = mpsc::channel();
        let p = pool::Builder::new()
            .worker_threads(2)
            .on_stall(Duration::from_millis(20), move |stall| {
                let _ = tx.send((stall.task, stall.name.clone()));
            })
            .build()
            .unwrap();
        let h = pool::task::Builder::new()
            .name("sleeper")
            .spawn_on(
                async { std::thread::sleep(Duration::from_millis(200)) },
                &p.handle(),
            )
            .unwrap();
        let id = h.id();
        let (task, name) = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("a stall report within 5 s");
        assert_eq!(task, id);
        assert_eq!(name.as_deref(), Some("sleeper"));
        p.block_on(h).unwrap();
    });
}

#[test]
fn spawn_local_off_a_worker_is_an_error_that_says_what_to_do() {
    let err = pool::task::Builder::new()
        .name("local")
        .spawn_local(async {})
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Other);
    let text = err.to_string();
    assert!(text.contains("off a worker thread"), "{text}");
    assert!(text.contains("Pool::block_on"), "{text}");
}
