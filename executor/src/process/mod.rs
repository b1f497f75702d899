//! Child processes on the current pool's I/O driver: [`Command`], [`Child`],
//! and its piped stdio ([`ChildStdin`], [`ChildStdout`], [`ChildStderr`]).
//!
//! A child's exit wakes the task waiting for it through the pool's driver
//! (a pidfd on Linux 5.3 and later; SIGCHLD through [`crate::signal`]
//! before that), and its piped stdio are non-blocking pipes on the same
//! driver: no thread waits for a child. A [`Child`] dropped unwaited is
//! still reaped (see its docs): no zombie is left behind.
//!
//! # Examples
//!
//! ```
//! use futures::{AsyncReadExt, AsyncWriteExt};
//! use pool::process::Command;
//! use std::process::Stdio;
//!
//! # pool::block_on(async {
//! let out = Command::new("echo").arg("hello").output().await.unwrap();
//! assert_eq!(out.stdout, b"hello\n");
//!
//! let mut cat = Command::new("cat")
//!     .stdin(Stdio::piped())
//!     .stdout(Stdio::piped())
//!     .spawn()
//!     .unwrap();
//! let mut stdin = cat.stdin.take().unwrap();
//! stdin.write_all(b"through a pipe").await.unwrap();
//! drop(stdin); // end of input
//! let mut text = String::new();
//! cat.stdout.take().unwrap().read_to_string(&mut text).await.unwrap();
//! assert_eq!(text, "through a pipe");
//! assert!(cat.wait().await.unwrap().success());
//! # });
//! ```

pub(crate) mod child;
pub(crate) mod pipe;

pub use child::Child;
pub use pipe::{ChildStderr, ChildStdin, ChildStdout};

use child::{reap_orphans, ExitWatchPrep};
use futures::AsyncReadExt;
use std::ffi::OsStr;
use std::fmt;
use std::future::Future;
use std::io;
use std::panic::Location;
use std::path::Path;
use std::process::{ExitStatus, Output, Stdio};

/// A process to spawn: `std::process::Command`'s builder, with async
/// `output` and `status`, and [`kill_on_drop`](Command::kill_on_drop).
///
/// # Examples
///
/// ```
/// # pool::block_on(async {
/// let status = pool::process::Command::new("sh")
///     .args(["-c", "exit 3"])
///     .status()
///     .await
///     .unwrap();
/// assert_eq!(status.code(), Some(3));
/// # });
/// ```
pub struct Command {
    std: std::process::Command,
    kill_on_drop: bool,
    /// Which of stdin, stdout, stderr the caller set (`output` and `status`
    /// choose the others).
    set: [bool; 3],
}

impl Command {
    /// A command to run `program` (looked up in `PATH` unless it is a path),
    /// with no arguments, the parent's environment and working directory,
    /// and inherited stdio.
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command {
            std: std::process::Command::new(program),
            kill_on_drop: false,
            set: [false; 3],
        }
    }

    /// Adds an argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.std.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.std.args(args);
        self
    }

    /// Sets an environment variable.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Command {
        self.std.env(key, value);
        self
    }

    /// Sets environment variables.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.std.envs(vars);
        self
    }

    /// Removes an environment variable.
    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Command {
        self.std.env_remove(key);
        self
    }

    /// Clears the environment (none of the parent's is passed on).
    pub fn env_clear(&mut self) -> &mut Command {
        self.std.env_clear();
        self
    }

    /// Sets the working directory.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Command {
        self.std.current_dir(dir);
        self
    }

    /// The child's stdin (`Stdio::piped()` gives [`Child::stdin`]).
    pub fn stdin(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.std.stdin(cfg);
        self.set[0] = true;
        self
    }

    /// The child's stdout (`Stdio::piped()` gives [`Child::stdout`]).
    pub fn stdout(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.std.stdout(cfg);
        self.set[1] = true;
        self
    }

    /// The child's stderr (`Stdio::piped()` gives [`Child::stderr`]).
    pub fn stderr(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.std.stderr(cfg);
        self.set[2] = true;
        self
    }

    /// Kill the child (SIGKILL) when its [`Child`] is dropped before it
    /// exited. Default: `false` (it runs on, and is reaped when it exits).
    pub fn kill_on_drop(&mut self, kill: bool) -> &mut Command {
        self.kill_on_drop = kill;
        self
    }

    /// Starts the process.
    ///
    /// Its piped stdio are registered with the current pool's driver, and
    /// so is its exit.
    ///
    /// # Errors
    ///
    /// `NotFound` for a program that does not exist, `PermissionDenied` for
    /// one that cannot be run (each names the program), or the OS's error.
    #[track_caller]
    pub fn spawn(&mut self) -> io::Result<Child> {
        self.spawn_at(Location::caller())
    }

    /// `spawn`, for a caller at `at` (what the child's pipes and the wait
    /// for its exit say they were made at: `TaskInfo::waiting_on`).
    fn spawn_at(&mut self, at: &'static Location<'static>) -> io::Result<Child> {
        // Before the child starts: a seeded pool could not watch it.
        crate::context::current::refuse_if_seeded("pool::process::Command::spawn")?;
        reap_orphans();
        let prep = ExitWatchPrep::new()?;
        let mut process = self.std.spawn().map_err(|e| spawn_error(&self.std, e))?;
        let stdio = (
            process
                .stdin
                .take()
                .map(|p| ChildStdin::new(p, at))
                .transpose(),
            process
                .stdout
                .take()
                .map(|p| ChildStdout::new(p, at))
                .transpose(),
            process
                .stderr
                .take()
                .map(|p| ChildStderr::new(p, at))
                .transpose(),
        );
        let child = match stdio {
            (Ok(stdin), Ok(stdout), Ok(stderr)) => Child::new(
                process,
                prep,
                self.kill_on_drop,
                (stdin, stdout, stderr),
                at,
            ),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                // The child cannot be driven: it is not left running.
                let _ = process.kill();
                let _ = process.wait();
                return Err(e);
            }
        };
        child.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("watching the child's exit on the pool's driver: {e}"),
            )
        })
    }

    /// Runs the process to its end and collects its stdout and stderr.
    /// Unless set, stdin is empty (`Stdio::null()`) and stdout and stderr
    /// are piped.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Command::spawn), or an error reading its output.
    #[track_caller]
    pub fn output(&mut self) -> impl Future<Output = io::Result<Output>> + '_ {
        self.output_at(Location::caller())
    }

    async fn output_at(&mut self, at: &'static Location<'static>) -> io::Result<Output> {
        let mut child = self.spawn_with_defaults([Stdio::null, Stdio::piped, Stdio::piped], at)?;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let out = child.stdout.take();
        let err = child.stderr.take();
        let read_out = async {
            match out {
                Some(mut s) => s.read_to_end(&mut stdout).await.map(drop),
                None => Ok(()),
            }
        };
        let read_err = async {
            match err {
                Some(mut s) => s.read_to_end(&mut stderr).await.map(drop),
                None => Ok(()),
            }
        };
        let (a, b) = futures::future::join(read_out, read_err).await;
        a?;
        b?;
        let status = child.wait().await?;
        Ok(Output {
            status,
            stdout,
            stderr,
        })
    }

    /// Runs the process to its end and returns its exit status. Unless set,
    /// its stdio are the parent's.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Command::spawn).
    #[track_caller]
    pub fn status(&mut self) -> impl Future<Output = io::Result<ExitStatus>> + '_ {
        let at = Location::caller();
        async move {
            self.spawn_with_defaults([Stdio::inherit; 3], at)?
                .wait()
                .await
        }
    }

    /// `spawn` for a caller at `at`, with `defaults` for the stdio the
    /// caller did not set (and afterwards those back to the parent's,
    /// `spawn`'s own default).
    fn spawn_with_defaults(
        &mut self,
        defaults: [fn() -> Stdio; 3],
        at: &'static Location<'static>,
    ) -> io::Result<Child> {
        let unset = self.set.map(|set| !set);
        self.set_stdio(unset, defaults);
        let child = self.spawn_at(at);
        self.set_stdio(unset, [Stdio::inherit; 3]);
        child
    }

    /// Set stdin, stdout, stderr where `which` says, without marking them
    /// as the caller's.
    fn set_stdio(&mut self, which: [bool; 3], stdio: [fn() -> Stdio; 3]) {
        if which[0] {
            self.std.stdin(stdio[0]());
        }
        if which[1] {
            self.std.stdout(stdio[1]());
        }
        if which[2] {
            self.std.stderr(stdio[2]());
        }
    }
}

/// A spawn's error, naming the program, with what to change where the
/// OS's message does not say it.
fn spawn_error(cmd: &std::process::Command, e: io::Error) -> io::Error {
    let program = cmd.get_program();
    let hint = match e.kind() {
        io::ErrorKind::NotFound => " (no such program: check its name, or PATH)",
        io::ErrorKind::PermissionDenied => " (the file is not executable by this user)",
        _ => "",
    };
    io::Error::new(e.kind(), format!("spawn {program:?}: {e}{hint}"))
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.std, f)
    }
}
