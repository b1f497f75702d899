//! `WriteBehind`: a `File`'s writes at its cursor, run behind the task on
//! one blocking call that writes what the task queued, in order, until the
//! queue is empty.
//!
//! Why not one operation per write, as tokio does (and as this file did on
//! both engines): a buffered write on a file system without non-blocking
//! buffered writes (ext4, the common case) always goes to a thread, the
//! ring's io-wq or ours, and with one write in flight that thread sits idle
//! from the end of each write until the task has been woken, has copied its
//! next megabyte and has handed it over. 1 GiB in 1 MiB writes into the
//! page cache took 1.5x std's time that way, on either engine
//! (`fs/README.md`, "Cursor writes"). Here the task copies its next bytes
//! while the call writes the last ones, and the call takes them as soon as it
//! is done: 1.1x std's, the copy that async I/O with a borrowed buffer
//! cannot avoid.
//!
//! # Invariants
//!
//! * The bytes reach the file in the order `poll_write` accepted them, at
//!   the file's cursor: one call writes at a time (`running`), and it takes
//!   the whole queue at once.
//! * At most `limit` bytes wait in the queue; a `poll_write` that finds it
//!   full waits until the call takes it (the call wakes it then).
//! * After a failed write the call writes nothing more: what was queued is
//!   dropped, and the error is the next operation's (the next write, a
//!   flush, a read, a seek, a sync).
//! * The call holds a paused clock while it runs (`Engine::run_behind`):
//!   a file being written keeps a paused pool from jumping, as an operation
//!   in flight does.

use super::engine::Engine;
use crate::task::noting::note_wait;
use crate::task::waits::{FileOp, Wait, WaitKind, NO_SITE};
use parking_lot::Mutex;
use std::fs::File as StdFile;
use std::io::{self, Write as _};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// The queue of one file's cursor writes, shared with its call.
#[derive(Default)]
pub(super) struct WriteBehind {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Bytes accepted and not yet taken by the call, in order.
    queued: Vec<u8>,
    /// A buffer the call is done with: the queue's next one, so that the two
    /// buffers' memory is reused rather than allocated per write.
    spare: Vec<u8>,
    /// The call runs, and takes the queue before it ends.
    running: bool,
    /// The error of a write that failed, for the next operation.
    error: Option<io::Error>,
    /// The task waiting for room in the queue or for the call to end.
    waker: Option<Waker>,
}

impl WriteBehind {
    /// Queue what fits of `src` (`limit` bytes at most wait), starting the
    /// call if it is not running: how much was taken, or the error of an
    /// earlier write. Pending while the queue is full.
    pub(super) fn poll_write(
        self: &Arc<Self>,
        cx: &mut Context<'_>,
        std: &Arc<StdFile>,
        src: &[u8],
        limit: usize,
    ) -> Poll<io::Result<usize>> {
        let mut state = self.state.lock();
        if let Some(e) = state.error.take() {
            return Poll::Ready(Err(e));
        }
        if src.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let room = limit.saturating_sub(state.queued.len());
        if room == 0 {
            state.waker = Some(cx.waker().clone());
            drop(state);
            note_writes(std);
            return Poll::Pending;
        }
        let n = room.min(src.len());
        state.queued.extend_from_slice(&src[..n]);
        if !state.running {
            state.running = true;
            drop(state);
            let call = WriteRun {
                behind: Arc::clone(self),
                std: Some(Arc::clone(std)),
                ran: false,
            };
            Engine::current(FileOp::Write, None).run_behind(move || call.run());
        }
        Poll::Ready(Ok(n))
    }

    /// Ready once every queued byte is written (or dropped after an
    /// error), with the error of a write that failed, if any.
    pub(super) fn poll_drained(&self, cx: &mut Context<'_>, std: &StdFile) -> Poll<io::Result<()>> {
        let mut state = self.state.lock();
        if state.running {
            state.waker = Some(cx.waker().clone());
            drop(state);
            note_writes(std);
            return Poll::Pending;
        }
        Poll::Ready(match state.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        })
    }

    /// The call ends (or will never run, with `error`): what is queued is
    /// dropped (nothing, unless a write failed), and the task that waits
    /// is woken once the lock is let go.
    fn stop(mut state: parking_lot::MutexGuard<'_, State>, error: Option<io::Error>) {
        state.queued.clear();
        state.running = false;
        if error.is_some() {
            state.error = error;
        }
        let waker = state.waker.take();
        drop(state);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// A task waits for `std`'s queued writes: what it records
/// (`task/waits.rs`).
fn note_writes(std: &StdFile) {
    note_wait(Wait {
        kind: WaitKind::File,
        on: FileOp::Write as u8,
        site: NO_SITE,
        a: std::os::fd::AsRawFd::as_raw_fd(std) as u64,
    });
}

/// The call of one run of writes: it writes the queue until it is empty.
struct WriteRun {
    behind: Arc<WriteBehind>,
    /// Let go before the task is told the writes are done, so that
    /// `File::into_std` then finds the file's only reference.
    std: Option<Arc<StdFile>>,
    /// `run` returned; otherwise the call was dropped unrun (the pool shut
    /// down) and the writes are lost.
    ran: bool,
}

impl WriteRun {
    fn run(mut self) {
        let this = Arc::clone(&self.behind);
        loop {
            let (buf, waker) = {
                let mut state = this.state.lock();
                if state.queued.is_empty() || state.error.is_some() {
                    self.ran = true;
                    self.std = None;
                    WriteBehind::stop(state, None);
                    return;
                }
                let next = std::mem::take(&mut state.spare);
                let buf = std::mem::replace(&mut state.queued, next);
                (buf, state.waker.take())
            };
            // Room in the queue again: the writer may go on copying while
            // this runs.
            if let Some(w) = waker {
                w.wake();
            }
            let std = self
                .std
                .as_deref()
                .expect("the file is let go only at the end");
            let written =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (&*std).write_all(&buf)))
                    .unwrap_or_else(|_| {
                        Err(io::Error::other(
                            "pool: a write at the file's cursor panicked",
                        ))
                    });
            let mut buf = buf;
            buf.clear();
            let mut state = this.state.lock();
            if state.spare.capacity() < buf.capacity() {
                state.spare = buf;
            }
            if let Err(e) = written {
                state.error = Some(e);
            }
        }
    }
}

impl Drop for WriteRun {
    fn drop(&mut self) {
        if !self.ran {
            WriteBehind::stop(
                self.behind.state.lock(),
                Some(io::Error::other(
                    "pool: the pool shut down before this file's writes ran",
                )),
            );
        }
    }
}
