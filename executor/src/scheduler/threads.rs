//! `Threads`: the threads of a running pool, which its shutdown joins. A
//! leaf of the scheduler: `start.rs` fills it in, `shutdown.rs` empties it.

use std::thread::JoinHandle;

/// The threads of a running pool, for its shutdown.
#[derive(Debug, Default)]
pub(crate) struct Threads {
    pub(super) workers: Vec<JoinHandle<()>>,
    /// The watcher thread (`watcher.rs`).
    pub(super) watcher: Option<JoinHandle<()>>,
    /// The shutdown ran (it runs once).
    pub(super) shut_down: bool,
    /// The console's server (`inspect/console/`), if the pool serves one.
    #[cfg(feature = "console")]
    pub(super) console: Option<crate::inspect::console::server::Server>,
}
