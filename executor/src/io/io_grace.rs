//! A paused clock's grace for I/O in flight: the driver's sleeper, its
//! clock paused and its pool quiet, jumps the clock to the earliest timer
//! (`Driver::paused_park`, `Timers::jump_if_quiet`). If the pool's tasks did
//! I/O since the last jump, the answer to it may still be on its way
//! (loopback data whose delivery the kernel left to `ksoftirqd` on a busy
//! machine), so the sleeper first waits up to `IO_GRACE` of real time for
//! readiness: a timeout around a loopback request never fires while the
//! answer is in flight. The argument is in `sleep/README.md` ("A paused
//! clock's jump").

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a paused clock's jump waits for readiness after the pool's
/// tasks did I/O: loopback data is delivered within the sender's system
/// call, or, on a loaded machine, by `ksoftirqd` soon after. Paid once per
/// jump that follows I/O, and only if nothing arrives.
const IO_GRACE: Duration = Duration::from_millis(5);

/// Whether the pool's tasks did I/O since the clock last jumped (noted only
/// while it is paused).
#[derive(Debug, Default)]
pub(super) struct IoGrace {
    io_since_jump: AtomicBool,
}

/// What one poll of the OS brought: whether it took an unpark (the
/// eventfd's edge, then spent) and whether it brought wakers.
pub(super) struct Polled {
    pub(super) unparked: bool,
    pub(super) woke: bool,
}

impl IoGrace {
    /// A task did I/O (an operation completed, or a source was registered).
    #[inline]
    pub(super) fn did_io(&self) {
        self.io_since_jump.store(true, Ordering::Relaxed);
    }

    /// The paused sleeper's decision once its poll without blocking found
    /// nothing: the grace, if owed (`poll` for up to a timeout), then the
    /// jump (`jump`, given the quiet check it must make under the timer
    /// store's locks); both are handed `wakers`. True if the park ends here (wakers, an unpark taken,
    /// or a decision to make again); false to block until an unpark.
    ///
    /// An unpark that the grace's poll takes ends the park (its edge is
    /// spent: a blocking poll after it could sleep through the wake it
    /// brought), and the grace is owed to the next park.
    ///
    /// The pool may go quiet between the first quiet check and the jump's,
    /// right after its last I/O (the first saw a worker still active, so no
    /// grace was taken): then the jump is declined and the park ends as a
    /// spurious one, so the next park takes the grace. (Without that, a
    /// paused timeout fired over a loopback round trip 150 us into it, in
    /// about one run in ten of
    /// `time::tests::loopback_io_completes_inside_paused_timeouts`.)
    pub(super) fn decide<W>(
        &self,
        is_quiet: &dyn Fn() -> bool,
        wakers: &mut W,
        poll: impl FnOnce(Duration, &mut W) -> Polled,
        jump: impl FnOnce(&dyn Fn() -> bool, &mut W) -> bool,
    ) -> bool {
        // Relaxed (here and below): the flag was set by a task before its
        // worker (or thread) left the pool's activity, and `is_quiet` read
        // that with SeqCst.
        if is_quiet() && self.io_since_jump.swap(false, Ordering::Relaxed) {
            let polled = poll(IO_GRACE, wakers);
            if polled.unparked && !polled.woke {
                self.io_since_jump.store(true, Ordering::Relaxed);
            }
            if polled.unparked || polled.woke {
                return true;
            }
        }
        let io_raced = Cell::new(false);
        let quiet_after_grace = || {
            let quiet = is_quiet();
            if quiet && self.io_since_jump.load(Ordering::Relaxed) {
                io_raced.set(true);
                return false;
            }
            quiet
        };
        jump(&quiet_after_grace, wakers) || io_raced.get()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// `decide` with a quiet check answering `quiet` in turn, and a poll
    /// that brings nothing: (whether the park ended, the graces polled,
    /// whether the clock jumped).
    fn decide(grace: &IoGrace, quiet: &[bool]) -> (bool, Vec<Duration>, bool) {
        let answers = Cell::new(0);
        let is_quiet = || {
            let i = answers.get();
            answers.set(i + 1);
            quiet[i.min(quiet.len() - 1)]
        };
        let mut polls = Vec::new();
        let mut jumped = false;
        let ended = grace.decide(
            &is_quiet,
            &mut polls,
            |timeout, polls| {
                polls.push(timeout);
                Polled {
                    unparked: false,
                    woke: false,
                }
            },
            |quiet, _| {
                jumped = quiet();
                jumped
            },
        );
        (ended, polls, jumped)
    }

    #[test]
    fn after_io_a_quiet_pool_waits_the_grace_then_jumps() {
        let grace = IoGrace::default();
        grace.did_io();
        assert_eq!(decide(&grace, &[true]), (true, vec![IO_GRACE], true));
        // The grace is spent: the next jump waits for nothing.
        assert_eq!(decide(&grace, &[true]), (true, vec![], true));
    }

    #[test]
    fn a_pool_gone_quiet_after_its_io_does_not_jump_before_the_grace() {
        let grace = IoGrace::default();
        grace.did_io();
        // Busy at the first check, quiet at the jump's: no jump, and the
        // park ends so that the next one takes the grace.
        assert_eq!(decide(&grace, &[false, true]), (true, vec![], false));
        assert_eq!(decide(&grace, &[true]), (true, vec![IO_GRACE], true));
    }

    #[test]
    fn a_busy_pool_neither_waits_nor_jumps_and_keeps_the_grace() {
        let grace = IoGrace::default();
        grace.did_io();
        assert_eq!(decide(&grace, &[false]), (false, vec![], false));
        assert_eq!(decide(&grace, &[true]), (true, vec![IO_GRACE], true));
    }
}
