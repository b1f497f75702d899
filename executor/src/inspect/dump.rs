//! The live-task dump: [`Pool::tasks`](crate::Pool::tasks) and
//! [`Handle::tasks`](crate::Handle::tasks).
//!
//! # Invariants
//!
//! * The dump reads each task's header under its registry shard's lock:
//!   the entry's waker holds a reference to the task, so the header it
//!   reads is alive (`task::header_of`). It never wakes, polls or drops a
//!   task, and takes one shard lock at a time.
//! * A task is listed from its spawn until its future is dropped (`DONE`):
//!   a finished task whose registry entry waits for its removal batch is
//!   skipped. Blocking closures are not listed: they are not tasks of the
//!   workers.
//! * The state is a snapshot assembled from separate reads (the workers'
//!   current tasks first, then each header): a task that changes state
//!   meanwhile shows one of the states it was in.

use super::addr;
use crate::scheduler::io_driver::IoDriver;
use crate::scheduler::registry::Registry;
use crate::task::coarse_clock::COARSE_TICK_NS;
use crate::task::id::TaskId;
use crate::task::site;
use crate::task::wait_board::RECORDS;
use crate::task::waits::{FileOp, Resource, Wait, WaitKind, NO_SITE};
use std::fmt;
use std::panic::Location;
use std::time::{Duration, Instant};

/// One live task, as [`Pool::tasks`](crate::Pool::tasks) saw it.
///
/// `Display` gives one line, for a log:
/// `task 7 idle, 3 polls, age 1.502s, spawned at src/main.rs:12:5`, with
/// its name after the id if it has one: ``task 7 `fetcher` idle, ...``.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The task's id (as [`JoinHandle::id`](crate::JoinHandle::id)).
    pub id: TaskId,
    /// Its name, if it was spawned with one
    /// ([`task::Builder::name`](crate::task::Builder::name)).
    pub name: Option<String>,
    /// Where `spawn` was called.
    pub spawned_at: &'static Location<'static>,
    /// What the task is doing.
    pub state: TaskState,
    /// Polls so far (they saturate at 2^29 - 1).
    pub polls: u64,
    /// Time since the spawn, to the coarse clock's tick (the kernel's, 1-10
    /// ms, counted in 1/256 s); taken modulo 97 days.
    pub age: Duration,
    /// For an [`Idle`](TaskState::Idle) task: the pool futures that
    /// returned `Pending` in its last poll (a timer, a socket or pipe
    /// operation, an `io::Async`, a `JoinHandle`, `JoinSet::join_next`, a
    /// signal, a child's exit, a file operation), in the order they did;
    /// empty while it is scheduled or running, and when it waits only on
    /// futures that are not pool's.
    pub waiting_on: Vec<WaitPoint>,
}

/// One pool future an idle task waits on ([`TaskInfo::waiting_on`]).
///
/// `Display`: ``sleep 60s (59.2s left), made at src/retry.rs:17:9, for 0.8s``.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WaitPoint {
    /// What it is, in words: `sleep 60s (59.2s left)`, `timeout 5s (3.1s
    /// left)`, `read on TcpStream 127.0.0.1:80`, `accept on TcpListener
    /// 0.0.0.0:8080`, `JoinHandle of task 12`, `signal SIGTERM`, `exit of
    /// child 4242`, `readable on fd 7`, `File read on /var/log/app.log`,
    /// `fs::metadata`.
    pub what: String,
    /// Where the future (or the socket, pipe or descriptor it works on)
    /// was made, when pool can know it: the line that called `sleep`,
    /// `timeout`, `interval`, `connect`, `accept`, `bind`, `signal`,
    /// `spawn` (a `JoinHandle`'s, and a child's), `JoinSet::join_next`.
    pub at: Option<&'static Location<'static>>,
    /// How long this wait has lasted: since the poll in which the future
    /// first returned `Pending` (to the coarse clock's tick).
    pub since: Duration,
}

impl fmt::Display for WaitPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)?;
        if let Some(at) = self.at {
            write!(f, ", made at {at}")?;
        }
        write!(f, ", for {}", seconds(self.since))
    }
}

/// `d` in words: `60s`, `1.5s`, `250ms`, `12us`.
fn seconds(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        if d.subsec_nanos() == 0 {
            format!("{}s", d.as_secs())
        } else {
            format!("{:.1}s", d.as_secs_f64())
        }
    } else if d >= Duration::from_millis(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}us", d.as_micros())
    }
}

/// What a live task is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskState {
    /// Woken (or just spawned) and waiting in a queue for a worker.
    Scheduled,
    /// Being polled by worker `worker` (its index) right now.
    Running {
        /// The worker's index.
        worker: usize,
    },
    /// Waiting for a wake that has not come.
    Idle,
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskState::Scheduled => f.write_str("scheduled"),
            TaskState::Running { worker } => write!(f, "running on worker {worker}"),
            TaskState::Idle => f.write_str("idle"),
        }
    }
}

impl fmt::Display for TaskInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task {}", self.id)?;
        if let Some(name) = &self.name {
            write!(f, " `{name}`")?;
        }
        write!(
            f,
            " {}, {} poll{}, age {:.3}s, spawned at {}",
            self.state,
            self.polls,
            if self.polls == 1 { "" } else { "s" },
            self.age.as_secs_f64(),
            self.spawned_at
        )
    }
}

/// A task's line in a [`TaskDump`] and, for an idle one, a line for each
/// thing it waits on (or one saying it waits on nothing of pool's).
struct DumpLines<'a>(&'a TaskInfo);

impl fmt::Display for DumpLines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let task = self.0;
        write!(f, "{task}")?;
        if task.state != TaskState::Idle {
            return Ok(());
        }
        if task.waiting_on.is_empty() {
            return f.write_str("\n      waiting on nothing of pool's");
        }
        for wait in &task.waiting_on {
            write!(f, "\n      waiting on {wait}")?;
        }
        Ok(())
    }
}

/// A dump of live tasks that reads well in a log: a summary line, then
/// one line per task, running tasks first, then scheduled, then idle, the
/// oldest first within each; under each idle task, what it waits on
/// ([`TaskInfo::waiting_on`]), or that it waits on nothing of pool's (a
/// future of another crate, a channel, a lock).
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let _idle = pool.spawn(std::future::pending::<()>());
/// # while pool.tasks().iter().any(|t| t.state != pool::TaskState::Idle) { std::thread::yield_now(); }
/// let text = pool::TaskDump(&pool.tasks()).to_string();
/// assert!(text.starts_with("1 live task (0 running, 0 scheduled, 1 idle)"));
/// assert!(text.contains("idle, 1 poll, age"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TaskDump<'a>(pub &'a [TaskInfo]);

impl fmt::Display for TaskDump<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = |pick: fn(&TaskState) -> bool| self.0.iter().filter(|t| pick(&t.state)).count();
        let running = count(|s| matches!(s, TaskState::Running { .. }));
        let scheduled = count(|s| *s == TaskState::Scheduled);
        let idle = count(|s| *s == TaskState::Idle);
        write!(
            f,
            "{} live task{} ({running} running, {scheduled} scheduled, {idle} idle)",
            self.0.len(),
            if self.0.len() == 1 { "" } else { "s" },
        )?;
        let mut order: Vec<&TaskInfo> = self.0.iter().collect();
        let rank = |s: &TaskState| match s {
            TaskState::Running { .. } => 0,
            TaskState::Scheduled => 1,
            TaskState::Idle => 2,
        };
        order.sort_by_key(|t| (rank(&t.state), std::cmp::Reverse(t.age), t.id));
        for task in order {
            write!(f, "\n  {}", DumpLines(task))?;
        }
        Ok(())
    }
}

/// Every live task of `registry`'s pool, ordered by id.
pub(crate) fn collect(registry: &Registry) -> Vec<TaskInfo> {
    let running: Vec<Option<TaskId>> = (0..registry.num_workers())
        .map(|w| registry.worker_stats(w).running_task())
        .collect();
    let now = registry.clock().now();
    let pool_now = registry.driver().now();
    let mut tasks = Vec::new();
    // The waits of idle tasks, described once every task's name is known.
    let mut waits = Vec::new();
    registry.tasks().for_each_live(|header, name| {
        if !header.is_live_task() {
            return;
        }
        let (scheduled, polls) = header.activity();
        let state = match running.iter().position(|r| *r == Some(header.id())) {
            Some(worker) => TaskState::Running { worker },
            None if scheduled => TaskState::Scheduled,
            None => TaskState::Idle,
        };
        if state == TaskState::Idle {
            if let Some(copy) = header.waits() {
                waits.push((tasks.len(), copy));
            }
        }
        tasks.push(TaskInfo {
            id: header.id(),
            name: name.map(|n| n.to_string()),
            spawned_at: header.spawned_at(),
            state,
            polls: polls.into(),
            age: Duration::from_nanos(u64::from(header.age(now)) * COARSE_TICK_NS),
            waiting_on: Vec::new(),
        });
    });
    let names: std::collections::HashMap<u64, &str> = tasks
        .iter()
        .filter_map(|t| Some((t.id.as_u64(), t.name.as_deref()?)))
        .collect();
    let described: Vec<(usize, Vec<WaitPoint>)> = waits
        .into_iter()
        .map(|(i, copy)| {
            let mut points: Vec<WaitPoint> = copy
                .waits
                .iter()
                .map(|&(wait, since)| WaitPoint {
                    what: describe(&wait, pool_now, &names),
                    at: (wait.site != NO_SITE).then(|| site::location(wait.site)),
                    since: Duration::from_nanos(
                        u64::from(now.wrapping_sub(since)) * COARSE_TICK_NS,
                    ),
                })
                .collect();
            let unlisted = copy.recorded - copy.waits.len();
            if unlisted > 0 {
                points.push(WaitPoint {
                    what: format!(
                        "{unlisted} more pool future{} (not kept: a poll keeps {RECORDS})",
                        if unlisted == 1 { "" } else { "s" }
                    ),
                    at: None,
                    since: Duration::ZERO,
                });
            }
            (i, points)
        })
        .collect();
    for (i, points) in described {
        tasks[i].waiting_on = points;
    }
    tasks.sort_by_key(|t| t.id);
    tasks
}

/// `wait` in words, its timers measured against the pool's time `now`,
/// its tasks named from `names` (the dump's other tasks).
fn describe(wait: &Wait, now: Instant, names: &std::collections::HashMap<u64, &str>) -> String {
    let (deadline, asked) = wait.timer_parts();
    let left = || match deadline.checked_duration_since(now) {
        Some(left) if !left.is_zero() => format!("{} left", seconds(round_tenth(left))),
        _ => "due".to_string(),
    };
    let asked = || asked.map(seconds).unwrap_or_default();
    match wait.kind {
        WaitKind::Sleep if wait.timer_parts().1.is_none() => format!("sleep_until ({})", left()),
        WaitKind::Sleep => format!("sleep {} ({})", asked(), left()),
        WaitKind::Timeout => format!("timeout {} ({})", asked(), left()),
        WaitKind::Interval => format!("interval tick every {} ({})", asked(), left()),
        WaitKind::Read | WaitKind::Write => {
            let resource = Resource::from_u8(wait.on);
            let fd = wait.a as i32;
            let write = wait.kind == WaitKind::Write;
            socket_words(resource, fd, write)
        }
        WaitKind::Join => {
            let mut text = format!("JoinHandle of task {}", wait.a);
            if let Some(name) = names.get(&wait.a) {
                text.push_str(&format!(" `{name}`"));
            }
            text
        }
        WaitKind::JoinSet => format!(
            "JoinSet::join_next ({} task{})",
            wait.a,
            if wait.a == 1 { "" } else { "s" }
        ),
        WaitKind::Signal => format!("signal {}", signal_name(wait.a as i32)),
        WaitKind::Child => format!("exit of child {}", wait.a),
        WaitKind::File => {
            let op = FileOp::from_u8(wait.on).map_or("a file operation", FileOp::name);
            match file_path(wait.a) {
                Some(path) => format!("{op} on {path}"),
                None => op.to_string(),
            }
        }
    }
}

/// `d` to a tenth of a second (above one second), for a time left.
fn round_tenth(d: Duration) -> Duration {
    if d < Duration::from_secs(1) {
        return d;
    }
    Duration::from_millis((d.as_millis() as u64).div_ceil(100) * 100)
}

/// A socket or pipe operation in words: its kind, the resource's type and
/// address (the peer's for a connected stream, its own for a listener or a
/// datagram socket), read off the descriptor now.
fn socket_words(resource: Resource, fd: i32, write: bool) -> String {
    let name = resource.name();
    match resource {
        Resource::TcpListener | Resource::UnixListener => match addr::local(fd) {
            Some(addr) => format!("accept on {name} {addr}"),
            None => format!("accept on {name} (fd {fd})"),
        },
        Resource::UdpSocket | Resource::UnixDatagram => {
            let op = if write { "send" } else { "recv" };
            match addr::local(fd) {
                Some(addr) => format!("{op} on {name} {addr}"),
                None => format!("{op} on {name} (fd {fd})"),
            }
        }
        Resource::TcpStream | Resource::UnixStream => match addr::peer(fd) {
            Some(addr) => format!("{} on {name} {addr}", if write { "write" } else { "read" }),
            // No peer yet: the write readiness a connect waits for.
            None if write => format!("connect on {name} (fd {fd})"),
            None => format!("read on {name} (fd {fd})"),
        },
        Resource::ChildStdin | Resource::ChildStdout | Resource::ChildStderr => {
            format!(
                "{} on {name} (fd {fd})",
                if write { "write" } else { "read" }
            )
        }
        Resource::Fd => format!("{} on fd {fd}", if write { "writable" } else { "readable" }),
    }
}

/// A signal's name (`SIGTERM`), or its number.
fn signal_name(signum: i32) -> String {
    let known = [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGCHLD, "SIGCHLD"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGWINCH, "SIGWINCH"),
    ];
    known
        .iter()
        .find(|(n, _)| *n == signum)
        .map_or_else(|| format!("{signum}"), |(_, name)| name.to_string())
}

/// The path of the file open as descriptor `fd`, if the OS says
/// (`/proc/self/fd`); `u64::MAX` is no descriptor.
fn file_path(fd: u64) -> Option<String> {
    if fd == u64::MAX {
        return None;
    }
    let path = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    Some(path.display().to_string())
}
