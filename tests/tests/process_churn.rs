//! Spawning, waiting, dropping and killing many children leaves no zombie
//! and no descriptor behind, with pidfds and on the SIGCHLD fallback (the
//! test runs itself again with `POOL_PROCESS_NO_PIDFD=1`). Its own binary:
//! it counts the whole process's descriptors and children.

use futures::AsyncReadExt;
use pool::process::Command;
use pool::Builder;
use std::process::Stdio;
use std::time::Duration;
use tests::watchdog;

/// This process's descriptors, but epoll instances: a worker that sleeps
/// holding the pool's driver inside its tokio runtime (feature
/// `tokio-compat`) keeps a duplicate of the driver's epoll descriptor
/// registered there, made and dropped as which worker sleeps in the driver
/// changes (`tokio_compat/worker_runtime.rs`, `WorkerHost::watch`): a
/// descriptor of the pool's, not of a child, and one whose presence at the
/// two counts depends on the timing (a loaded machine missed it in the
/// first count). A child makes pidfds and pipes, never an epoll.
fn open_fds() -> usize {
    fd_list()
        .iter()
        .filter(|fd| !fd.ends_with("anon_inode:[eventpoll]"))
        .count()
}

/// This process's descriptors and what each is (`/proc/self/fd`), for a
/// failure's message.
fn fd_list() -> Vec<String> {
    let mut fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|e| {
            let target =
                std::fs::read_link(e.path()).map_or("?".into(), |t| t.display().to_string());
            format!("{}: {target}", e.file_name().to_string_lossy())
        })
        .collect();
    fds.sort();
    fds
}

/// This process's children that are zombies (exited, not reaped).
fn zombie_children() -> Vec<u32> {
    let me = std::process::id();
    let mut zombies = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces, so split
        // after its closing parenthesis.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
        if state == Some("Z") && ppid == Some(me) {
            zombies.push(pid);
        }
    }
    zombies
}

fn churn() {
    let p = Builder::new().worker_threads(2).build().unwrap();
    // The pool's own descriptors (epoll, its waker, the signal pipe of the
    // fallback) exist before the count.
    p.block_on(async {
        let _ = Command::new("true").status().await.unwrap();
    });
    let fds_before = open_fds();
    let list_before = fd_list();
    p.block_on(async {
        for round in 0..40 {
            let mut tasks = Vec::new();
            for i in 0..5 {
                tasks.push(pool::spawn(async move {
                    match i {
                        // Waited for, output read.
                        0 => {
                            let out = Command::new("echo")
                                .arg(round.to_string())
                                .output()
                                .await
                                .unwrap();
                            assert_eq!(out.stdout, format!("{round}\n").as_bytes());
                        }
                        // Dropped while running, with pipes open.
                        1 => {
                            let child = Command::new("sleep")
                                .arg("0.05")
                                .stdout(Stdio::piped())
                                .stdin(Stdio::piped())
                                .spawn()
                                .unwrap();
                            drop(child);
                        }
                        // Killed on drop.
                        2 => {
                            let child = Command::new("sleep")
                                .arg("30")
                                .kill_on_drop(true)
                                .spawn()
                                .unwrap();
                            drop(child);
                        }
                        // Killed and waited.
                        3 => {
                            let mut child = Command::new("sleep").arg("30").spawn().unwrap();
                            child.kill().unwrap();
                            child.wait().await.unwrap();
                        }
                        // Its stdout read to the end, then dropped unwaited.
                        _ => {
                            let mut child = Command::new("echo")
                                .arg("x")
                                .stdout(Stdio::piped())
                                .spawn()
                                .unwrap();
                            let mut s = String::new();
                            child
                                .stdout
                                .take()
                                .unwrap()
                                .read_to_string(&mut s)
                                .await
                                .unwrap();
                            assert_eq!(s, "x\n");
                        }
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        }
    });
    // The reapers of the dropped children finish within their sleeps.
    tests::wait_for("no zombie children", Duration::from_secs(10), || {
        zombie_children().is_empty()
    });
    let start = std::time::Instant::now();
    while open_fds() > fds_before {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "descriptors not back to the count before within 10 s:\nbefore {list_before:?}\nnow {:?}",
            fd_list()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(open_fds(), fds_before, "descriptors after 200 children");
}

#[test]
fn two_hundred_children_leave_no_zombie_and_no_descriptor() {
    watchdog("process churn", 120, || {
        churn();
        if std::env::var_os("POOL_PROCESS_NO_PIDFD").is_some() {
            return;
        }
        // Again, on the SIGCHLD path, in a fresh process.
        let me = std::env::current_exe().unwrap();
        let out = std::process::Command::new(me)
            .args([
                "--exact",
                "two_hundred_children_leave_no_zombie_and_no_descriptor",
            ])
            .env("POOL_PROCESS_NO_PIDFD", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "on the SIGCHLD path: {:?}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
}
