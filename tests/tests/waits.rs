//! `TaskInfo::waiting_on`: what an idle task's last poll waited on among
//! pool's futures, where each was made, for how long, and `TaskDump`'s
//! lines for them.

use futures::future::{select, Either};
use futures::{AsyncReadExt, FutureExt};
use std::panic::Location;
use std::pin::pin;
use std::sync::mpsc;
use std::time::Duration;
use tests::watchdog;

fn pool(workers: usize) -> pool::Pool {
    pool::Builder::new()
        .worker_threads(workers)
        .build()
        .unwrap()
}

/// The line after this call's, where the test makes the future it looks
/// for.
#[track_caller]
fn next_line() -> (&'static str, u32) {
    let here = Location::caller();
    (here.file(), here.line() + 1)
}

/// The task `id` once it is idle and `ready` holds of it (fails after 5 s).
fn idle_task(
    p: &pool::Pool,
    id: pool::TaskId,
    ready: impl Fn(&pool::TaskInfo) -> bool,
) -> pool::TaskInfo {
    let start = std::time::Instant::now();
    loop {
        if let Some(t) = p.tasks().into_iter().find(|t| t.id == id) {
            if t.state == pool::TaskState::Idle && ready(&t) {
                return t;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "task {id} never got there: {t:?}"
            );
        } else {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "task {id} not listed"
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn made_at(wait: &pool::WaitPoint) -> (&'static str, u32) {
    let at = wait.at.expect("where the future was made");
    (at.file(), at.line())
}

#[test]
fn a_sleep_is_listed_at_the_line_that_made_it_and_its_since_grows() {
    watchdog("waits: a sleep", 30, || {
        let p = pool(2);
        let (tx, rx) = mpsc::channel();
        let task = p.spawn(async move {
            tx.send(next_line()).unwrap();
            pool::time::sleep(Duration::from_secs(60)).await;
        });
        let line = rx.recv().unwrap();
        let first = idle_task(&p, task.id(), |t| !t.waiting_on.is_empty());
        assert_eq!(first.waiting_on.len(), 1, "{first:?}");
        let wait = &first.waiting_on[0];
        assert_eq!(made_at(wait), line);
        assert!(wait.what.starts_with("sleep 60s ("), "{}", wait.what);
        assert!(wait.what.ends_with("s left)"), "{}", wait.what);
        std::thread::sleep(Duration::from_millis(300));
        let later = idle_task(&p, task.id(), |_| true);
        let since = later.waiting_on[0].since;
        assert!(
            since >= wait.since + Duration::from_millis(200),
            "since grows: {:?} then {since:?}",
            wait.since
        );
        let dump = pool::TaskDump(&p.tasks()).to_string();
        assert!(
            dump.contains("waiting on sleep 60s (")
                && dump.contains(&format!("{}:{}", line.0, line.1)),
            "{dump}"
        );
        task.abort();
    });
}

#[test]
fn a_wait_that_goes_on_across_polls_keeps_its_since() {
    watchdog("waits: since across polls", 30, || {
        let p = pool(2);
        let task = p.spawn(async {
            let mut long = pin!(pool::time::sleep(Duration::from_secs(60)));
            // Woken every 10 ms by the short one; the long one is polled
            // again each time, and is the same wait.
            loop {
                let short = pin!(pool::time::sleep(Duration::from_millis(10)));
                if let Either::Left(_) = select(long.as_mut(), short).await {
                    return;
                }
            }
        });
        std::thread::sleep(Duration::from_millis(300));
        let t = idle_task(&p, task.id(), |t| t.waiting_on.len() == 2 && t.polls > 5);
        let long = t
            .waiting_on
            .iter()
            .find(|w| w.what.starts_with("sleep 60s"))
            .expect("the long sleep");
        assert!(
            long.since >= Duration::from_millis(150),
            "the long sleep has waited since the first poll: {t:?}"
        );
        let short = t
            .waiting_on
            .iter()
            .find(|w| w.what.starts_with("sleep 10ms"))
            .unwrap();
        assert!(short.since < Duration::from_millis(100), "{t:?}");
        task.abort();
    });
}

#[test]
fn two_raced_sleeps_are_two_wait_points_and_a_running_task_lists_none() {
    watchdog("waits: two sleeps", 30, || {
        let p = pool(2);
        let (tx, rx) = mpsc::channel();
        let task = p.spawn(async move {
            let a = next_line();
            let five = pool::time::sleep(Duration::from_secs(5));
            let b = next_line();
            let seven = pool::time::sleep(Duration::from_secs(7));
            tx.send((a, b)).unwrap();
            select(pin!(five), pin!(seven)).await;
        });
        let (a, b) = rx.recv().unwrap();
        let t = idle_task(&p, task.id(), |t| !t.waiting_on.is_empty());
        let lines: Vec<_> = t.waiting_on.iter().map(made_at).collect();
        assert_eq!(lines, [a, b], "{t:?}");
        assert!(t.waiting_on[0].what.starts_with("sleep 5s"), "{t:?}");
        assert!(t.waiting_on[1].what.starts_with("sleep 7s"), "{t:?}");
        task.abort();

        // A task that waited before and now runs: nothing listed.
        let (go, started) = mpsc::channel();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinning = {
            let stop = stop.clone();
            p.spawn(async move {
                pool::time::sleep(Duration::from_millis(5)).await;
                go.send(()).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        started.recv().unwrap();
        let t = p
            .tasks()
            .into_iter()
            .find(|t| t.id == spinning.id())
            .unwrap();
        assert!(matches!(t.state, pool::TaskState::Running { .. }), "{t:?}");
        assert!(
            t.waiting_on.is_empty(),
            "a running task waits on nothing: {t:?}"
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        p.block_on(spinning).unwrap();
    });
}

#[test]
fn a_finished_sleep_is_not_listed_after_the_next_poll() {
    watchdog("waits: a finished sleep", 30, || {
        let p = pool(2);
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let task = p.spawn(async move {
            pool::time::sleep(Duration::from_millis(20)).await;
            // Then a wait that is not pool's.
            let _ = rx.await;
        });
        let t = idle_task(&p, task.id(), |t| t.polls >= 2);
        assert!(t.waiting_on.is_empty(), "the sleep is over: {t:?}");
        let dump = pool::TaskDump(&p.tasks()).to_string();
        assert!(dump.contains("waiting on nothing of pool's"), "{dump}");
        drop(tx);
        p.block_on(task).unwrap();
    });
}

#[test]
fn a_task_awaiting_another_names_it() {
    watchdog("waits: a JoinHandle", 30, || {
        let p = pool(2);
        let (tx, rx) = mpsc::channel();
        let waiter = p.spawn(async move {
            let builder = pool::task::Builder::new().name("worker");
            let line = next_line();
            let worker = builder.spawn(std::future::pending::<()>()).unwrap();
            tx.send((worker.id(), line)).unwrap();
            let _ = worker.await;
        });
        let (worker, line) = rx.recv().unwrap();
        let t = idle_task(&p, waiter.id(), |t| !t.waiting_on.is_empty());
        assert_eq!(t.waiting_on.len(), 1, "{t:?}");
        assert_eq!(
            t.waiting_on[0].what,
            format!("JoinHandle of task {worker} `worker`")
        );
        // The handle was made where the task was spawned.
        assert_eq!(made_at(&t.waiting_on[0]), line);
        waiter.abort();
    });
}

#[test]
fn a_socket_read_says_so_and_the_wait_ends_with_the_read() {
    watchdog("waits: a socket read", 30, || {
        let p = pool(2);
        let (tx, rx) = mpsc::channel();
        let server = p.spawn(async move {
            let listener = pool::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let accept = {
                let line = next_line();
                let accept = listener.accept();
                tx.send((addr, line)).unwrap();
                accept
            };
            let (mut conn, _) = accept.await.unwrap();
            let mut byte = [0u8; 1];
            conn.read_exact(&mut byte).await.unwrap();
            pool::time::sleep(Duration::from_secs(60)).await;
        });
        let (addr, accept_line) = rx.recv().unwrap();
        let t = idle_task(&p, server.id(), |t| !t.waiting_on.is_empty());
        assert_eq!(
            t.waiting_on[0].what,
            format!("accept on TcpListener {addr}"),
            "{t:?}"
        );

        let mut client = std::net::TcpStream::connect(addr).unwrap();
        let me = client.local_addr().unwrap();
        let t = idle_task(&p, server.id(), |t| {
            t.waiting_on
                .first()
                .is_some_and(|w| w.what.starts_with("read"))
        });
        assert_eq!(
            t.waiting_on[0].what,
            format!("read on TcpStream {me}"),
            "{t:?}"
        );
        // The accepted stream was made at the accept.
        assert_eq!(made_at(&t.waiting_on[0]), accept_line);

        std::io::Write::write_all(&mut client, b"x").unwrap();
        let t = idle_task(&p, server.id(), |t| {
            t.waiting_on
                .first()
                .is_some_and(|w| w.what.starts_with("sleep"))
        });
        assert_eq!(t.waiting_on.len(), 1, "the read is over: {t:?}");
        server.abort();
    });
}

#[test]
fn timeouts_intervals_join_sets_signals_children_descriptors_and_files_say_what_they_are() {
    watchdog("waits: every kind", 60, || {
        let p = pool(2);
        let dir = std::env::temp_dir().join(format!("pool-waits-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);

        let (tx, rx) = mpsc::channel();
        let task = p.spawn(async move {
            let mut lines = Vec::new();
            lines.push(next_line());
            let timeout = pool::time::timeout(Duration::from_secs(5), std::future::pending::<()>());
            lines.push(next_line());
            let mut interval = pool::time::interval(Duration::from_secs(3));
            interval.tick().await; // the first tick is at once
            let mut set = pool::JoinSet::new();
            set.spawn(std::future::pending::<()>());
            set.spawn(std::future::pending::<()>());
            lines.push(next_line());
            let joined = set.join_next();
            tx.send(lines).unwrap();
            let more = futures::future::join(
                pool::time::sleep(Duration::from_secs(9)),
                pool::time::sleep(Duration::from_secs(9)),
            );
            let _ = futures::join!(timeout, interval.tick(), joined, more);
        });
        let lines = rx.recv().unwrap();
        let t = idle_task(&p, task.id(), |t| t.waiting_on.len() >= 3);
        let whats: Vec<&str> = t.waiting_on.iter().map(|w| w.what.as_str()).collect();
        assert!(whats[0].starts_with("timeout 5s ("), "{whats:?}");
        assert!(
            whats[1].starts_with("interval tick every 3s ("),
            "{whats:?}"
        );
        assert_eq!(whats[2], "JoinSet::join_next (2 tasks)", "{whats:?}");
        let ats: Vec<_> = t.waiting_on.iter().take(3).map(made_at).collect();
        assert_eq!(ats, lines, "{t:?}");
        // A poll keeps three: the rest are counted.
        assert_eq!(
            whats[3], "2 more pool futures (not kept: a poll keeps 3)",
            "{whats:?}"
        );
        task.abort();
        let _ = p.block_on(task);

        let (tx, rx) = mpsc::channel();
        let signal_task = p.spawn(async move {
            use pool::signal::unix::{signal, SignalKind};
            let line = next_line();
            let mut usr2 = signal(SignalKind::user_defined2()).unwrap();
            tx.send(line).unwrap();
            usr2.recv().await;
        });
        let line = rx.recv().unwrap();
        let t = idle_task(&p, signal_task.id(), |t| !t.waiting_on.is_empty());
        assert_eq!(t.waiting_on[0].what, "signal SIGUSR2", "{t:?}");
        assert_eq!(made_at(&t.waiting_on[0]), line);
        signal_task.abort();

        let (tx, rx) = mpsc::channel();
        let child_task = p.spawn(async move {
            let mut command = pool::process::Command::new("sleep");
            command.arg("30");
            let line = next_line();
            let mut child = command.spawn().unwrap();
            tx.send((line, child.id().unwrap())).unwrap();
            let _ = child.wait().await;
        });
        let (line, pid) = rx.recv().unwrap();
        let t = idle_task(&p, child_task.id(), |t| !t.waiting_on.is_empty());
        assert_eq!(
            t.waiting_on[0].what,
            format!("exit of child {pid}"),
            "{t:?}"
        );
        assert_eq!(made_at(&t.waiting_on[0]), line);
        child_task.abort();
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };

        let (pipe_r, pipe_w2) = std::os::unix::net::UnixStream::pair().unwrap();
        let (tx, rx) = mpsc::channel();
        let async_task = p.spawn(async move {
            let line = next_line();
            let readable = pool::io::Async::new(pipe_r).unwrap();
            tx.send((line, std::os::fd::AsRawFd::as_raw_fd(readable.get_ref())))
                .unwrap();
            readable.readable().await.unwrap();
        });
        let (line, fd) = rx.recv().unwrap();
        let t = idle_task(&p, async_task.id(), |t| !t.waiting_on.is_empty());
        assert_eq!(
            t.waiting_on[0].what,
            format!("readable on fd {fd}"),
            "{t:?}"
        );
        assert_eq!(made_at(&t.waiting_on[0]), line);
        async_task.abort();
        drop(pipe_w2);

        let file_task = p.spawn(pool::fs::write(fifo.clone(), "through the pipe"));
        let t = idle_task(&p, file_task.id(), |t| !t.waiting_on.is_empty());
        assert_eq!(t.waiting_on[0].what, "fs::write", "{t:?}");
        assert!(t.waiting_on[0].at.is_none(), "{t:?}");
        let text = std::fs::read_to_string(&fifo).unwrap();
        assert_eq!(text, "through the pipe");
        p.block_on(file_task).unwrap().unwrap();

        std::fs::remove_dir_all(&dir).unwrap();
    });
}

#[test]
fn a_dump_lists_each_idle_tasks_waits_under_it() {
    watchdog("waits: the dump", 30, || {
        let p = pool(2);
        let sleeper = pool::task::Builder::new()
            .name("sleeper")
            .spawn_on(pool::time::sleep(Duration::from_secs(60)), &p.handle())
            .unwrap();
        let foreign = p.spawn(std::future::pending::<()>());
        idle_task(&p, sleeper.id(), |t| !t.waiting_on.is_empty());
        idle_task(&p, foreign.id(), |_| true);
        let dump = pool::TaskDump(&p.tasks()).to_string();
        let lines: Vec<&str> = dump.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.contains("`sleeper` idle"))
            .unwrap_or_else(|| panic!("{dump}"));
        assert!(
            lines[at + 1]
                .trim_start()
                .starts_with("waiting on sleep 60s ("),
            "{dump}"
        );
        assert!(lines[at + 1].contains(", made at "), "{dump}");
        let at = lines
            .iter()
            .position(|l| l.contains(&format!("task {} idle", foreign.id())))
            .unwrap();
        assert_eq!(
            lines[at + 1].trim(),
            "waiting on nothing of pool's",
            "{dump}"
        );
        sleeper.abort();
        foreign.abort();
        p.block_on(futures::future::join(sleeper, foreign).map(drop));
    });
}
