//! Feature `console`: what the pool records for tokio-console.
//!
//! A pool built with `Builder::console(addr)` (or the global pool with
//! `POOL_CONSOLE=addr`) keeps a [`TaskTable`]: every task from its spawn
//! to a while after its future drops, with what tokio-console shows of it
//! (`stats.rs`). The scheduler records into it at four places: the spawn
//! (`spawn_raw`, `scheduler/spawn.rs`), each poll (`Console::poll`, through
//! `task::Schedule::poll_future`: timed, with a counting waker,
//! `counting_waker.rs`), the wakes (the counting waker) and the drop of the future
//! (`task::Schedule::release`). A pool without a console records nothing:
//! each of those places tests one `Option` the registry holds, and a build
//! without the feature has no test at all. The server (`server.rs`) only
//! reads the table.

use super::counting_waker;
use super::stats::now;
use super::table::TaskTable;
use crate::task::id::TaskId;
use std::io;
use std::net::SocketAddr;
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
