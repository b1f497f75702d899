//! Feature `console`: what the scheduler records for tokio-console, and how
//! it names the server a floor above (`inspect/console/`).
//!
//! A pool built with `Builder::console(addr)` (or the global pool with
//! `POOL_CONSOLE=addr`) keeps a [`TaskTable`]: every task from its spawn
//! to a while after its future drops, with what tokio-console shows of it
//! (`stats.rs`). The scheduler records into it at four places: the spawn
//! (`Registry::spawn_raw`), each poll (`Console::poll`, through
//! `task::Schedule::poll_future`: timed, with a counting waker,
//! `counting_waker.rs`), the wakes (the counting waker) and the drop of the future
//! (`task::Schedule::release`). A pool without a console records nothing:
//! each of those places tests one `Option` the registry holds, and a build
//! without the feature has no test at all.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | `Console` (the table and the address), `Serve`: what the scheduler needs of the server |
//! | `stats.rs` | `TaskStats`: one task's figures; the console clock; `Spread`, durations by bucket |
//! | `table.rs` | `TaskTable`: the tasks by id in locked shards, live and finished (kept a while), spare entries reused; what a publish sends |
//! | `counting_waker.rs` | the counting waker a task is polled with |
//!
//! The server is the console-api `Instrument` gRPC service, served from a
//! thread of its own (so a pool whose every worker is stuck in a poll can
//! still be seen): `inspect/console/`, a floor above, names its type here
//! by implementing [`Binding`] for [`Bound`], as the I/O driver does
//! (`scheduler/io_driver.rs`).

pub(crate) mod counting_waker;
pub(crate) mod stats;
pub(crate) mod table;

pub(crate) use stats::now;
pub(crate) use table::TaskTable;

use crate::task::id::TaskId;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::task::Context;

/// The console of one pool: its task table and where it is served.
pub(crate) struct Console {
    table: Arc<TaskTable>,
    addr: SocketAddr,
}

impl Console {
    /// A console that will be served on `addr`.
    pub(crate) fn new(addr: SocketAddr) -> Console {
        Console {
            table: Arc::new(TaskTable::new()),
            addr,
        }
    }

    pub(crate) fn table(&self) -> &Arc<TaskTable> {
        &self.table
    }

    /// Where the server listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Poll task `id` with `poll` (which catches the future's panics):
    /// timed, and handed the counting waker instead of `cx`'s.
    #[inline]
    pub(crate) fn poll<R>(
        &self,
        id: TaskId,
        cx: &mut Context<'_>,
        poll: impl FnOnce(&mut Context<'_>) -> R,
    ) -> R {
        let Some(entry) = self.table.get(id) else {
            // Cannot happen (a task is recorded before its first schedule
            // and leaves at its future's drop, after its last poll): polled
            // as it is, rather than not at all.
            return poll(cx);
        };
        let waker = counting_waker::borrowed(&entry);
        let mut counted = Context::from_waker(&waker);
        let started = now();
        entry.stats.poll_started(started);
        let output = crate::context::plain_cells::with_console_poll(id, || poll(&mut counted));
        entry.stats.poll_ended(started, now());
        output
    }
}

/// What the scheduler needs of the console's server: start it (on a thread
/// of its own), and stop it with the pool.
pub(crate) trait Serve: Sized + Send + 'static {
    /// Serve `table`, and what the tasks of `registry` wait on (the
    /// Resources view), on `listener` from a new thread of pool `prefix`
    /// (`ThreadKind::Console`).
    fn start(
        table: Arc<TaskTable>,
        registry: std::sync::Weak<super::registry::Registry>,
        listener: TcpListener,
        prefix: &str,
    ) -> io::Result<Self>;

    /// Stop serving, and join the thread.
    fn stop(self);
}

/// Names the server's type for the scheduler: implemented once, by
/// `inspect/console/`, for [`Bound`].
pub(crate) trait Binding {
    /// The console's server.
    type Server: Serve;
}

/// What [`Binding`] is implemented for: a type with no values.
pub(crate) enum Bound {}

/// The console's server, as the scheduler names it.
pub(crate) type Server = <Bound as Binding>::Server;

/// The environment variable that has the global pool, and the pool of
/// `#[pool::main]`, serve tokio-console (`Builder::console`).
pub(crate) const CONSOLE_ENV: &str = "POOL_CONSOLE";

/// `POOL_CONSOLE`, if set and not empty.
pub(crate) fn addr_from_env() -> Option<String> {
    std::env::var(CONSOLE_ENV).ok().filter(|a| !a.is_empty())
}

/// For a pool that took its console's address from `POOL_CONSOLE` and
/// failed to start with `e`: what to add to the message, so that it names
/// the variable if the address was the trouble (`bind`'s errors and the
/// check's start with "console").
pub(crate) fn blame_env(e: &io::Error) -> &'static str {
    if e.to_string().starts_with("console") {
        " (set by the environment variable POOL_CONSOLE)"
    } else {
        ""
    }
}
