//! `Child`: a running child process, its exit through the current pool's
//! driver, and the reaping of children dropped unwaited.
//!
//! # How an exit reaches a task
//!
//! Where the kernel has pidfds (Linux 5.3 on), the child's pidfd is
//! registered with the pool's driver when it is spawned: it becomes
//! readable when the child exits, which wakes the task in `wait` like a
//! readable socket (a pool asleep in its driver included), and `waitpid`
//! then reaps it at once. Without pidfds (`pidfd_open` fails with `ENOSYS`),
//! `wait` listens for SIGCHLD through `pool::signal` (set up before the
//! child starts, so no exit is missed) and tries `waitpid` after each.
//!
//! # Invariants
//!
//! * No zombie is left: a `Child` dropped before it was reaped is reaped at
//!   once if it exited (after a kill, with `kill_on_drop`); otherwise a
//!   detached task of the current pool waits for its exit and reaps it, and
//!   if there is no pool, or that task is dropped first (its pool shut
//!   down), the child goes on a process-wide list of orphans, which every
//!   later spawn reaps what it can of.
//! * The pidfd refers to our own child: it is opened right after the spawn,
//!   before anything could reap the child (only its parent can), so the pid
//!   cannot have been reused.

use crate::io::async_fd::FdSource;
use crate::io::poll_evented::PollEvented;
use crate::io::scheduled_io::Direction;
use crate::signal::unix::{internal_signal, Signal, SignalKind};
use crate::task::noting::Noting;
use crate::task::waits::{self, Wait, WaitKind};
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::panic::Location;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use super::pipe::{ChildStderr, ChildStdin, ChildStdout};

/// False once `pidfd_open` said `ENOSYS`: the kernel has no pidfds.
static PIDFD_SUPPORTED: AtomicBool = AtomicBool::new(true);

/// `POOL_PROCESS_NO_PIDFD=1` makes a kernel with pidfds take the SIGCHLD
/// path, so that the fallback is tested where pidfds exist; read at the
/// first spawn.
fn pidfd_wanted() -> bool {
    static WANTED: OnceLock<bool> = OnceLock::new();
    *WANTED.get_or_init(|| std::env::var_os("POOL_PROCESS_NO_PIDFD").is_none_or(|v| v != "1"))
}

/// Children dropped unwaited while still running, with no pool to wait for
/// them (see the module invariants).
static ORPHANS: Mutex<Vec<std::process::Child>> = Mutex::new(Vec::new());

/// How a child's exit is waited for.
enum ExitWatch {
    /// Its pidfd, on the driver of the pool current at spawn.
    Pidfd(PollEvented<FdSource<OwnedFd>>),
    /// SIGCHLD deliveries (no pidfds on this kernel).
    Sigchld(Signal),
}

/// What `Command::spawn` prepares before the child starts: without pidfds,
/// the SIGCHLD listener must exist before the child can exit.
pub(crate) struct ExitWatchPrep(Option<Signal>);

impl ExitWatchPrep {
    pub(crate) fn new() -> io::Result<ExitWatchPrep> {
        if pidfd_wanted() && PIDFD_SUPPORTED.load(Ordering::Relaxed) {
            Ok(ExitWatchPrep(None))
        } else {
            Ok(ExitWatchPrep(Some(internal_signal(SignalKind::child())?)))
        }
    }
}

/// `pidfd_open(pid)`: `None` if the kernel has no pidfds.
fn pidfd_open(pid: u32) -> io::Result<Option<OwnedFd>> {
    // SAFETY: `pidfd_open` takes a pid and flags and returns a new
    // descriptor or -1; no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd >= 0 {
        // SAFETY: the syscall returned a new descriptor that we own.
        return Ok(Some(unsafe { OwnedFd::from_raw_fd(fd as i32) }));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENOSYS) {
        PIDFD_SUPPORTED.store(false, Ordering::Relaxed);
        return Ok(None);
    }
    Err(e)
}

/// Reap what can be reaped of the orphans (each `try_wait` is one
/// `waitpid(WNOHANG)`).
pub(crate) fn reap_orphans() {
    let mut orphans = ORPHANS.lock().unwrap_or_else(|e| e.into_inner());
    orphans.retain_mut(|child| matches!(child.try_wait(), Ok(None)));
}

/// The process and how its exit is watched: what a reaper takes over when
/// the `Child` is dropped.
struct Inner {
    /// The process itself, its stdio taken out.
    process: std::process::Child,
    watch: ExitWatch,
}

impl Inner {
    /// Wait for the exit and reap.
    async fn wait(&mut self) -> io::Result<ExitStatus> {
        let process = &mut self.process;
        match &mut self.watch {
            ExitWatch::Pidfd(pidfd) => poll_fn(|cx| {
                pidfd.poll_io(cx, Direction::Read, |_| match process.try_wait()? {
                    Some(status) => Ok(status),
                    None => Err(io::ErrorKind::WouldBlock.into()),
                })
            })
            .await
            .map_err(watch_error),
            ExitWatch::Sigchld(sigchld) => loop {
                if let Some(status) = process.try_wait()? {
                    return Ok(status);
                }
                if sigchld.recv().await.is_none() {
                    return Err(watch_error(io::Error::other("the pool shut down")));
                }
            },
        }
    }
}

/// A child process, spawned by [`Command::spawn`](super::Command::spawn).
///
/// Its piped stdio are the public fields. Dropping a `Child` does not wait
/// for it, but never leaves a zombie: one that exited is reaped at once,
/// one still running is reaped when it exits, by a task of the current
/// pool (or, with no pool, at the next spawn of a process). With
/// [`kill_on_drop`](super::Command::kill_on_drop) it is killed first.
///
/// # Examples
///
/// ```
/// # pool::block_on(async {
/// let mut child = pool::process::Command::new("true").spawn().unwrap();
/// let status = child.wait().await.unwrap();
/// assert!(status.success());
/// assert_eq!(child.id(), None, "reaped");
/// # });
/// ```
pub struct Child {
    /// The child's stdin, if it was piped.
    pub stdin: Option<ChildStdin>,
    /// The child's stdout, if it was piped.
    pub stdout: Option<ChildStdout>,
    /// The child's stderr, if it was piped.
    pub stderr: Option<ChildStderr>,
    /// `None` only while dropping, when a reaper takes it.
    inner: Option<Inner>,
    /// Its exit status, once reaped.
    status: Option<ExitStatus>,
    kill_on_drop: bool,
    /// The site of the `spawn` that made it (`task/waits.rs`).
    site: u16,
}

impl Child {
    /// Wrap a freshly spawned `process`, its pipes already taken out.
    pub(crate) fn new(
        process: std::process::Child,
        prep: ExitWatchPrep,
        kill_on_drop: bool,
        (stdin, stdout, stderr): (Option<ChildStdin>, Option<ChildStdout>, Option<ChildStderr>),
        at: &'static Location<'static>,
    ) -> io::Result<Child> {
        let watch = match prep.0 {
            Some(sigchld) => ExitWatch::Sigchld(sigchld),
            None => match pidfd_open(process.id())? {
                Some(pidfd) => ExitWatch::Pidfd(PollEvented::internal(FdSource(pidfd))?),
                // This kernel has no pidfds after all: listen for SIGCHLD.
                // An exit before this listener exists is caught by the
                // `try_wait` that every wait makes before it waits.
                None => ExitWatch::Sigchld(internal_signal(SignalKind::child())?),
            },
        };
        Ok(Child {
            stdin,
            stdout,
            stderr,
            inner: Some(Inner { process, watch }),
            status: None,
            kill_on_drop,
            site: waits::site_of(at),
        })
    }

    fn inner(&mut self) -> &mut Inner {
        self.inner
            .as_mut()
            .expect("a Child has its process until dropped")
    }

    /// The child's process id, `None` once it was reaped (its id may then
    /// belong to another process).
    pub fn id(&self) -> Option<u32> {
        match self.status {
            Some(_) => None,
            None => self.inner.as_ref().map(|i| i.process.id()),
        }
    }

    /// Waits for the child to exit and reaps it; its stdin, if piped, is
    /// closed first (so that a child reading its input to the end can
    /// finish). Cancel-safe: dropping the future leaves the child as it was.
    ///
    /// # Errors
    ///
    /// The OS's error from `waitpid`, or an error if the pool that watches
    /// the child was dropped before it exited (then `try_wait` still
    /// works, and dropping the `Child` still reaps it).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        if let Some(status) = self.try_wait()? {
            return Ok(status);
        }
        let site = self.site;
        let inner = self.inner();
        let pid = inner.process.id();
        let wait = Wait::new(WaitKind::Child, site, u64::from(pid));
        let status = Noting::new(inner.wait(), wait).await?;
        self.status = Some(status);
        Ok(status)
    }

    /// The child's exit status if it has exited (it is then reaped), else
    /// `None`, without waiting.
    ///
    /// # Errors
    ///
    /// The OS's error from `waitpid`.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = self.inner().process.try_wait()?;
        }
        Ok(self.status)
    }

    /// Kills the child (SIGKILL). It still has to be waited for (or is
    /// reaped when the `Child` is dropped).
    ///
    /// # Errors
    ///
    /// The OS's error. Killing a child that already exited is `Ok`.
    pub fn kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        self.inner().process.kill()
    }
}

/// An error of the exit watch, said as such.
fn watch_error(e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("waiting for the child process: {e} (the pool that watched it may be gone)"),
    )
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        let Some(mut inner) = self.inner.take() else {
            return;
        };
        if self.kill_on_drop {
            let _ = inner.process.kill();
        }
        if !matches!(inner.process.try_wait(), Ok(None)) {
            return; // reaped (or it cannot be waited for at all)
        }
        Reaper::start(inner);
    }
}

/// A dropped child still running, waited for by a detached task.
struct Reaper(Option<Inner>);

impl Reaper {
    /// Reap `inner` when it exits: in a task of the current pool, else
    /// (no pool) at the next spawn.
    fn start(inner: Inner) {
        match crate::handle::Handle::try_current() {
            Some(pool) => drop(pool.spawn(Reaper(Some(inner)).run())),
            None => orphan(inner.process),
        }
    }
}

impl Reaper {
    /// Wait for the exit and reap; a reaper dropped first (its pool shut
    /// down) or whose wait failed hands the child to the orphans.
    async fn run(mut self) {
        if let Some(inner) = self.0.as_mut() {
            if inner.wait().await.is_ok() {
                self.0.take();
            }
        }
    }
}

/// A reaper that did not get to the end (its pool shut down, or the wait
/// failed) leaves its child to the orphans.
impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            orphan(inner.process);
        }
    }
}

/// Put `process` on the orphans, unless it can be reaped now.
fn orphan(mut process: std::process::Child) {
    if matches!(process.try_wait(), Ok(None)) {
        ORPHANS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(process);
    }
}

impl fmt::Debug for Child {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Child")
            .field("id", &self.id())
            .field("status", &self.status)
            .field("stdin", &self.stdin)
            .field("stdout", &self.stdout)
            .field("stderr", &self.stderr)
            .finish()
    }
}
