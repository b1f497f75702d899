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

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
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
    tests::wait_for(
        "descriptors back to the count before",
        Duration::from_secs(10),
        || open_fds() <= fds_before,
    );
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
