//! `OutsidePolls`: how a `block_on` future off the workers has used tokio
//! lately, which says whether its next poll runs on a short tokio budget
//! (`TokioRuntimes::poll_outside`). A leaf: `Entered` holds one (in
//! `context/pool_cells.rs`) with or without `tokio-compat`; without it,
//! nothing reads it.

/// Polls in a row that spawned no tokio task and (on a budget) did not use
/// it up, after which a `block_on` future is polled off budget: a future
/// that waits on pool tasks, or takes a few messages a wake from a tokio
/// channel, stops paying for the budget; an accept loop (every poll a
/// spawn) never does. A spawn seen off budget puts it back.
const QUIET_POLLS: u8 = 8;

/// How a `block_on` future on a thread outside the pool has used tokio:
/// its polls in a row that did not.
#[derive(Debug, Default)]
pub(crate) struct OutsidePolls {
    quiet: u8,
}

#[cfg_attr(not(feature = "tokio-compat"), allow(dead_code))]
impl OutsidePolls {
    /// Whether the next poll runs on the short budget.
    #[inline]
    pub(crate) fn budgeted(&self) -> bool {
        self.quiet < QUIET_POLLS
    }

    /// A poll ended: it spawned onto tokio or used its budget up
    /// (`used_tokio`), or it did not.
    #[inline]
    pub(crate) fn polled(&mut self, used_tokio: bool) {
        self.quiet = if used_tokio {
            0
        } else {
            self.quiet.saturating_add(1)
        };
    }
}
