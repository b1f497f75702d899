//! Child processes on the pool's driver: output, pipes, exit statuses, and
//! children that are dropped, killed or outlive their pool.

use futures::{AsyncReadExt, AsyncWriteExt};
use pool::process::Command;
use pool::Builder;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;
use tests::watchdog;

fn pool() -> pool::Pool {
    Builder::new().worker_threads(2).build().unwrap()
}

/// Wait (bounded) until process `pid` is gone: exited *and* reaped (a
/// zombie still has its /proc entry).
fn wait_reaped(pid: u32) {
    tests::wait_for(
        &format!("child {pid} reaped"),
        Duration::from_secs(10),
        || !std::path::Path::new(&format!("/proc/{pid}")).exists(),
    );
}

#[test]
fn output_collects_stdout_stderr_and_the_exit_code() {
    watchdog("output", 30, || {
        pool().block_on(async {
            let out = Command::new("sh")
                .args(["-c", "echo out; echo err >&2; exit 3"])
                .output()
                .await
                .unwrap();
            assert_eq!(out.stdout, b"out\n");
            assert_eq!(out.stderr, b"err\n");
            assert_eq!(out.status.code(), Some(3));
            let status = Command::new("true").status().await.unwrap();
            assert!(status.success());
        });
    });
}

#[test]
fn piped_stdin_and_stdout_stream_more_than_a_pipe_holds() {
    watchdog("cat through pipes", 30, || {
        pool().block_on(async {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let mut stdout = child.stdout.take().unwrap();
            // 1 MiB: far more than a pipe buffers, so writer and reader
            // must take turns through the driver.
            let data: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
            let expected = data.clone();
            let writer = pool::spawn(async move {
                stdin.write_all(&data).await.unwrap();
                stdin.close().await.unwrap();
            });
            let mut got = Vec::new();
            stdout.read_to_end(&mut got).await.unwrap();
            writer.await.unwrap();
            assert!(
                got == expected,
                "cat gave back {} bytes, changed",
                got.len()
            );
            assert!(child.wait().await.unwrap().success());
            assert_eq!(child.id(), None);
        });
    });
}

#[test]
fn a_missing_program_is_not_found_and_says_which() {
    let err = pool()
        .block_on(async { Command::new("pool-no-such-program").spawn() })
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    let message = err.to_string();
    assert!(
        message.contains("pool-no-such-program") && message.contains("PATH"),
        "{message}"
    );
}

#[test]
fn a_child_killed_by_a_signal_says_which() {
    watchdog("killed child", 30, || {
        pool().block_on(async {
            let mut child = Command::new("sleep").arg("30").spawn().unwrap();
            assert!(child.try_wait().unwrap().is_none());
            child.kill().unwrap();
            let status = child.wait().await.unwrap();
            assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
            assert!(!status.success());
            // Killing a reaped child is fine.
            child.kill().unwrap();
            let status = Command::new("sh")
                .args(["-c", "kill -TERM $$"])
                .status()
                .await
                .unwrap();
            assert_eq!(status.signal(), Some(libc::SIGTERM), "{status}");
        });
    });
}

#[test]
fn an_exit_wakes_a_pool_that_is_fully_asleep() {
    watchdog("exit wakes a sleeping pool", 30, || {
        let p = pool();
        let (tx, rx) = mpsc::channel();
        p.spawn(async move {
            let mut child = Command::new("sleep").arg("0.3").spawn().unwrap();
            tx.send(child.wait().await.unwrap()).unwrap();
        });
        // Every worker asleep, one blocked in the driver: only the pidfd's
        // readiness (or SIGCHLD) can wake the waiting task.
        tests::wait_until_asleep(&p);
        let status = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the exit woke the pool");
        assert!(status.success());
    });
}

#[test]
fn dropped_children_are_reaped_and_killed_with_kill_on_drop() {
    watchdog("dropped children", 30, || {
        pool().block_on(async {
            // Still running when dropped: reaped when it exits.
            let child = Command::new("sleep").arg("0.2").spawn().unwrap();
            let short = child.id().unwrap();
            drop(child);
            // kill_on_drop: killed, then reaped.
            let child = Command::new("sleep")
                .arg("30")
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            let long = child.id().unwrap();
            drop(child);
            // Exited before the drop: reaped in the drop.
            let child = Command::new("true").spawn().unwrap();
            let done = child.id().unwrap();
            pool::time::sleep(Duration::from_millis(100)).await;
            drop(child);
            for pid in [done, long, short] {
                wait_reaped(pid);
            }
        });
    });
}

#[test]
fn waiting_on_a_dropped_pools_child_is_an_error_and_the_child_is_still_reaped() {
    watchdog("child outlives its pool", 30, || {
        let p = pool();
        let mut child = p
            .block_on(async { Command::new("sleep").arg("0.3").spawn() })
            .unwrap();
        let pid = child.id().unwrap();
        let waiter = std::thread::spawn(move || {
            let r = futures::executor::block_on(child.wait());
            (r, child)
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(p);
        let (result, mut child) = waiter.join().unwrap();
        let err = result.unwrap_err();
        assert!(err.to_string().contains("pool"), "{err}");
        // try_wait needs no pool: it reaps once the child exited.
        tests::wait_for("try_wait sees the exit", Duration::from_secs(10), || {
            child.try_wait().unwrap().is_some()
        });
        drop(child);
        wait_reaped(pid);
    });
}
