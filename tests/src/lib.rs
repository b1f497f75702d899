//! Helpers for the integration tests of `pool`: a watchdog that turns a hang
//! into a failure with a message, CPU time of the process, a drop counter,
//! a bounded wait for a pool to fall asleep, and blocking HTTP and
//! WebSocket clients; the crate's own sources read as text.

pub mod alloc;
pub mod client;
pub mod source_text;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Run `f` on its own thread and fail the test if it has not returned after
/// `secs` seconds: a hang becomes a failure that names `what`. A panic in `f`
/// is passed on.
pub fn watchdog<T: Send + 'static>(
    what: &str,
    secs: u64,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name(format!("watched: {what}"))
        .spawn(move || {
            let out = f();
            let _ = tx.send(());
            out
        })
        .expect("spawn the watched thread");
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: did not finish within {secs} s (a lost wakeup or a deadlock)")
        }
    }
}

/// CPU time (user + system) used so far by this whole process.
pub fn process_cpu_time() -> Duration {
    // SAFETY: `getrusage` only writes the `rusage` we pass, which is a plain
    // C struct for which all-zero bytes are a valid value.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        assert_eq!(rc, 0, "getrusage failed");
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// With the descriptor table full (`use_up_descriptors`) and no connection
/// pending, an `accept` (the future `accept`) must wait, not return an
/// error and not spin: it is still pending after 200 ms, in which the
/// process used under 100 ms of CPU.
pub async fn assert_accept_waits_without_spinning<T: std::fmt::Debug>(
    accept: impl std::future::Future<Output = T>,
) {
    let cpu_before = process_cpu_time();
    let waited = pool::time::timeout(Duration::from_millis(200), accept).await;
    let cpu = process_cpu_time() - cpu_before;
    assert!(
        waited.is_err(),
        "accept on a full table returned {waited:?}"
    );
    assert!(
        cpu < Duration::from_millis(100),
        "{cpu:?} of CPU in 200 ms of an accept waiting on a full table"
    );
}

/// Counts how many times the values it hands out are dropped.
#[derive(Clone, Default)]
pub struct DropCounter(Arc<AtomicUsize>);

/// Increments its counter when dropped.
pub struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl DropCounter {
    pub fn new() -> Self {
        Self::default()
    }

    /// A value whose drop this counter counts.
    pub fn track(&self) -> Tracked {
        Tracked(self.0.clone())
    }

    pub fn drops(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A pool of `workers` workers, every other setting the default.
pub fn pool(workers: usize) -> pool::Pool {
    pool::Builder::new()
        .worker_threads(workers)
        .build()
        .expect("a pool with default settings starts")
}

/// Wait, up to `timeout`, until `cond` holds; panic with `what` otherwise.
/// For states the test cannot be told about directly (a pool falling asleep).
pub fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < timeout,
            "{what}: not reached within {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Wait until every worker of `pool` is blocked on its condvar: no worker
/// can then be running or searching.
pub fn wait_until_asleep(pool: &pool::Pool) {
    let workers = pool.worker_threads() as u64;
    wait_for("all workers asleep", Duration::from_secs(10), || {
        let m = pool.metrics();
        m.sleeps.saturating_sub(m.wakeups) == workers
    });
}

/// The path of example `name` of the `examples` package, built for this
/// test's profile. `cargo test` builds the examples of the package it tests;
/// when a test runs without them (`cargo test --test NAME`), this builds the
/// one it needs.
pub fn example_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    // target/<profile>/deps/<test> -> target/<profile>/examples/<name>
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("a test binary lives in target/<profile>/deps");
    let path = profile_dir.join("examples").join(name);
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.args(["build", "-q", "-p", "examples", "--example", name]);
        if profile_dir.ends_with("release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build for the example");
        assert!(status.success(), "building example {name} failed");
    }
    assert!(
        path.exists(),
        "example {name} not found at {}",
        path.display()
    );
    path
}

/// Run the example `name` with `args` to its end and return what it
/// printed; fail with its status and both outputs unless it succeeded.
pub fn run_example(name: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(example_binary(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run the {name} example: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the {name} example: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A server process that prints `listening on ADDR` as its first line: the
/// examples' servers and the benchmarks' `http_server`. Killed when dropped,
/// so a failing test leaves no orphan holding its output pipes.
pub struct ListeningServer {
    child: Option<std::process::Child>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    /// The address from the first line.
    pub addr: String,
}

impl ListeningServer {
    /// Start `cmd` with its stdout piped and read its first line.
    pub fn start(cmd: &mut std::process::Command) -> ListeningServer {
        use std::io::BufRead;
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut first = String::new();
        stdout
            .read_line(&mut first)
            .expect("read the server's first line");
        let addr = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{cmd:?}: unexpected first line {first:?}"))
            .to_string();
        ListeningServer {
            child: Some(child),
            stdout,
            addr,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Send `signum` to the server.
    pub fn signal(&self, signum: i32) {
        // SAFETY: `kill` only sends a signal to the child we started.
        let rc = unsafe { libc::kill(self.pid() as libc::pid_t, signum) };
        assert_eq!(rc, 0, "signal {signum} to the server");
    }

    /// The server's next line of output, without its newline (empty at the
    /// end of its output). Blocks: call it under a watchdog.
    pub fn read_line(&mut self) -> String {
        use std::io::BufRead;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("read the server's output");
        line.trim_end().to_string()
    }

    /// Wait up to `secs` for the exit: its status and everything it printed
    /// that was not read yet.
    pub fn wait(mut self, secs: u64) -> (std::process::ExitStatus, String) {
        use std::io::Read;
        let mut child = self.child.take().expect("running");
        let status = watchdog("server shutdown", secs, move || child.wait().unwrap());
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        (status, rest)
    }

    /// Ctrl-C (SIGINT), then wait up to `secs` for the exit: its status and
    /// everything it printed after the first line.
    pub fn interrupt(self, secs: u64) -> (std::process::ExitStatus, String) {
        self.signal(libc::SIGINT);
        self.wait(secs)
    }
}

impl Drop for ListeningServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Run `exe SCENARIO` in a child process (so that an abort, or a process
/// limit it sets, stays there) under a 60 s watchdog, and fail with its
/// status and output unless it printed `ok: SCENARIO` and exited cleanly.
pub fn run_scenario(exe: &str, scenario: &str) {
    let out = watchdog(scenario, 60, {
        let (exe, scenario) = (exe.to_string(), scenario.to_string());
        move || {
            std::process::Command::new(exe)
                .arg(&scenario)
                .output()
                .unwrap()
        }
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim() == format!("ok: {scenario}"),
        "{scenario}: {:?} (an abort is a killed process)\nstdout: {stdout}\nstderr (last 2000 bytes): {}",
        out.status,
        &stderr[stderr.len().saturating_sub(2000)..]
    );
}

/// Set this process's soft limit on `resource` (`libc::RLIMIT_*`) to
/// `value`, or back to the hard limit with `None`; a value above the hard
/// limit is capped to it.
pub fn set_soft_limit(resource: libc::__rlimit_resource_t, value: Option<u64>) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `lim`.
    unsafe {
        assert_eq!(libc::getrlimit(resource, &mut lim), 0, "getrlimit");
        lim.rlim_cur = value.map_or(lim.rlim_max, |v| v.min(lim.rlim_max));
        assert_eq!(libc::setrlimit(resource, &lim), 0, "setrlimit");
    }
}

/// Lower this process's descriptor limit to `limit` and open `/dev/null`
/// until no descriptor is left (`EMFILE`): the files that hold them.
pub fn use_up_descriptors(limit: u64) -> Vec<std::fs::File> {
    set_soft_limit(libc::RLIMIT_NOFILE, Some(limit));
    let mut hogs = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(f) => hogs.push(f),
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => return hogs,
            Err(e) => panic!("unexpected error while using up descriptors: {e}"),
        }
    }
}

/// Make closing `socket` send a reset (`SO_LINGER` on, timeout 0): a rude
/// close, for tests and soaks of what a peer's reset does.
pub fn reset_on_close(socket: &impl std::os::fd::AsRawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt reads `size_of::<linger>()` bytes from `linger`,
    // which lives across the call; the descriptor is the caller's open
    // socket.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt(SO_LINGER)");
}
