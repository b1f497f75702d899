//! `SpareFd`: the descriptor a listener keeps in reserve, so that an accept
//! at `EMFILE`/`ENFILE` answers the connection at the head of the backlog
//! instead of leaving it, and the accept loop, hanging.
//!
//! At `EMFILE` Linux's `accept` fails before it looks at the backlog, and
//! the listener stays readable: a loop that retries spins, one that sleeps
//! leaves its clients hanging (hyper#1358, axum#2400). libuv and Bun keep a
//! spare descriptor; so does pool. On `EMFILE` or `ENFILE` the listener:
//!
//! 1. closes the spare, which frees one slot of the table;
//! 2. accepts the connection at the head of the backlog into it and closes
//!    it at once with `SO_LINGER` 0, so that its client reads a reset, not
//!    a hang;
//! 3. reopens the spare (`/dev/null`) in the slot it freed;
//! 4. counts the error (`Metrics::accept_errors`) and returns it, the OS's
//!    own (`raw_os_error()` is `EMFILE` or `ENFILE`).
//!
//! # Invariants
//!
//! * Each failed accept closes at most one pending connection; the rest stay
//!   queued, and are accepted once descriptors free.
//! * An accept at `EMFILE` with an empty backlog (Linux reports `EMFILE`
//!   before it looks) is `WouldBlock`: the listener waits for the next
//!   connection's edge, so no accept loop spins on a full table.
//! * The spare is opened when the listener is made, so a table that fills
//!   afterwards still finds it. Between its close and its reopening another
//!   thread may take the slot (a file opened at that very moment by a
//!   program at its limit): then the spare is lost while the table stays
//!   full, every `accept` tries to reopen it first, and meanwhile returns
//!   the error as it is, without answering the head. An accept loop that
//!   waits a millisecond between errors (`pool::hyper::serve`) costs a few
//!   microseconds of CPU a millisecond in that state, and is back to
//!   answering as soon as one descriptor frees.
//! * The lock is held across the three steps: two accepts of one listener
//!   never both close the spare.

use parking_lot::Mutex;
use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

pub(crate) struct SpareFd {
    fd: Mutex<Option<OwnedFd>>,
}

impl SpareFd {
    /// A listener's spare, opened now (`None` inside if the table is full
    /// already: the next `EMFILE` tries again).
    pub(crate) fn open() -> SpareFd {
        SpareFd {
            fd: Mutex::new(open_spare()),
        }
    }

    /// An accept's `result` on `listener`: returned as it is, but at
    /// `EMFILE`/`ENFILE`, after the spare's three steps (see the module
    /// docs); `count` is called for each such error returned.
    pub(crate) fn on_accept<T>(
        &self,
        result: io::Result<T>,
        listener: RawFd,
        count: impl FnOnce(),
    ) -> io::Result<T> {
        match &result {
            Err(e) if is_out_of_descriptors(e) && self.backlog_was_empty(listener, count) => {
                Err(io::ErrorKind::WouldBlock.into())
            }
            _ => result,
        }
    }

    /// Does it hold its spare? Then an accept at `EMFILE` answers a pending
    /// connection or finds none (`WouldBlock`): an accept loop may retry at
    /// once without spinning. Without it, the error answers no one.
    #[cfg(feature = "hyper")]
    pub(crate) fn is_held(&self) -> bool {
        self.fd.lock().is_some()
    }

    /// The three steps; true if nothing was pending (then nothing is
    /// counted). `count` is called before the head's client can see its
    /// answer, and when there is no spare to answer with.
    fn backlog_was_empty(&self, listener: RawFd, count: impl FnOnce()) -> bool {
        let mut spare = self.fd.lock();
        let Some(fd) = spare.take() else {
            // Maybe descriptors freed since it was lost.
            *spare = open_spare();
            count();
            return false;
        };
        // One slot free.
        drop(fd);
        // SAFETY: `listener` is the descriptor of the listening socket our
        // caller holds (borrowed for the call); null address pointers ask
        // for no address, which accept4 allows.
        let conn = unsafe {
            libc::accept4(
                listener,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        };
        let empty = if conn >= 0 {
            // SAFETY: accept4 just returned this descriptor; nothing else
            // owns it.
            let conn = unsafe { OwnedFd::from_raw_fd(conn) };
            count();
            reset_on_close(&conn);
            false
        } else if io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock {
            true
        } else {
            // Aborted by its client meanwhile, say: answered enough.
            count();
            false
        };
        *spare = open_spare();
        empty
    }
}

/// The spare itself: `/dev/null`, read-only, close-on-exec.
fn open_spare() -> Option<OwnedFd> {
    File::open("/dev/null").ok().map(OwnedFd::from)
}

/// `SO_LINGER` 0: closing the socket sends a reset.
fn reset_on_close(conn: &OwnedFd) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket descriptor and a pointer to a `linger` that
    // lives across the call, with its size. A failure only means the close
    // is orderly (a FIN): nothing to undo.
    unsafe {
        libc::setsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// `EMFILE` (the process's table is full) or `ENFILE` (the system's).
pub(crate) fn is_out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}
