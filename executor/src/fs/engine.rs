//! The two engines every file operation runs on, chosen at run time, and
//! the primitives the rest of `pool::fs` is written in.
//!
//! * **The ring** (`io/uring.rs`): the submitting worker's io_uring, on
//!   the pool's driver. A
//!   data operation (a read, a write, an open, an fsync, a close) is
//!   submitted from the worker that polls it and, when the page cache
//!   serves it, completes inside that submission: no thread hand-off.
//! * **The blocking threads**, batched (`scheduler/blocking.rs`, light
//!   calls): everything the ring has no operation for or no gain in (metadata,
//!   directories, renames: io_uring sends `statx` and its kin to its own
//!   worker threads anyway), and every operation when the ring is not
//!   there.
//!
//! The ring is used when the kernel gives one (probed once per pool, on its
//! first file operation), `POOL_FS` is not `blocking` and the pool was not
//! built with `Builder::io_uring(false)`.

use crate::scheduler::registry::Registry;
use crate::scheduler::spawn::run_batched;
use crate::seeded::pool_seed::no_real_io;
use crate::task::noting::note_wait;
use crate::task::waits::{FileOp, Wait, WaitKind, NO_SITE};
use std::future::Future;
use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

#[cfg(target_os = "linux")]
use crate::io::uring::{Keep, OpId, Ring};

/// `POOL_FS=blocking` (read once per process): never use the ring.
fn ring_allowed() -> bool {
    static ALLOWED: OnceLock<bool> = OnceLock::new();
    *ALLOWED.get_or_init(|| match std::env::var("POOL_FS") {
        Ok(v) if v.eq_ignore_ascii_case("blocking") => false,
        Ok(v) if v.is_empty() || v.eq_ignore_ascii_case("auto") => true,
        Ok(v) => {
            eprintln!(
                "pool: POOL_FS={v:?} is not an engine; use `blocking` to keep file \
                 operations off io_uring, or leave it unset (`auto`)"
            );
            true
        }
        Err(_) => true,
    })
}

/// The engine of one operation: the current pool, whose ring it would
/// use, and what a task waiting on it records (`task/waits.rs`).
pub(super) struct Engine {
    registry: Arc<Registry>,
    wait: Wait,
    /// `None` if the ring is not used; else the worker whose ring it is
    /// (`Some(None)`: a thread that is not a worker, on their shared one).
    #[cfg(target_os = "linux")]
    ring_of: Option<Option<usize>>,
}

impl Engine {
    /// The current pool's engine (see `context::current::with_current`) for the
    /// operation `op`, on the file open as `fd` if it has one.
    pub(super) fn current(op: FileOp, fd: Option<RawFd>) -> Engine {
        let wait = Wait {
            kind: WaitKind::File,
            on: op as u8,
            site: NO_SITE,
            a: fd.map_or(u64::MAX, |fd| fd as u64),
        };
        crate::context::current::with_current_worker(|registry, worker| Engine {
            registry: Arc::clone(registry),
            wait,
            #[cfg(target_os = "linux")]
            ring_of: {
                let worker = worker.map(|w| w.index());
                (registry.io_uring_allowed() && ring_allowed() && {
                    registry.enable_driver();
                    registry.driver().rings_work(worker)
                })
                .then_some(worker)
            },
        })
    }

    /// The ring of this engine's worker (`io/uring.rs`), if this engine
    /// uses one: made at the first operation that asks for it, so a worker
    /// that only ever runs metadata and directory calls makes none (a ring
    /// is 1 024 completion entries of memory and an epoll registration).
    #[cfg(target_os = "linux")]
    pub(super) fn ring(&self) -> Option<&Arc<Ring>> {
        let worker = self.ring_of?;
        self.registry.enable_driver();
        self.registry.driver().ring(worker)
    }

    /// Run `f` on the blocking threads, batched; its panic resumes in the
    /// awaiting task.
    pub(super) fn blocking<T, F>(&self, f: F) -> Blocking<T>
    where
        F: FnOnce() -> io::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let hold = ClockHold::new(&self.registry);
        let (tx, rx) = futures::channel::oneshot::channel();
        if let Some(seeded) = self.registry.seeded() {
            // Every file operation but a write behind an open file starts
            // here, so this is where a seeded pool refuses files.
            let refused = no_real_io(seeded.seed(), "a file operation (pool::fs)");
            let _ = tx.send(Ok(Err(refused)));
            return Blocking {
                rx,
                wait: self.wait,
                _hold: hold,
            };
        }
        run_batched(
            &self.registry,
            Box::new(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
                // The owner may be gone (its future dropped): nothing to tell.
                let _ = tx.send(result);
            }),
        );
        Blocking {
            rx,
            wait: self.wait,
            _hold: hold,
        }
    }

    /// Run `f` on the blocking threads, batched, with nobody awaiting it
    /// (`write_behind.rs`): it holds a paused clock itself, from now until
    /// it returns or is dropped unrun.
    pub(super) fn run_behind(&self, f: impl FnOnce() + Send + 'static) {
        let hold = ClockHold::new(&self.registry);
        run_batched(
            &self.registry,
            Box::new(move || {
                f();
                drop(hold);
            }),
        );
    }

    /// Submit `entry` on the ring; `Err(keep)` if the ring is full (the
    /// caller runs the operation on the blocking threads instead).
    ///
    /// # Safety
    ///
    /// As `Ring::submit`'s: `entry` points only into memory `keep` owns.
    #[cfg(target_os = "linux")]
    pub(super) unsafe fn submit(
        &self,
        ring: &Arc<Ring>,
        entry: io_uring::squeue::Entry,
        keep: Keep,
    ) -> Result<RingOp, Keep> {
        let hold = ClockHold::new(&self.registry);
        let mut wakers = Vec::new();
        // SAFETY: the caller's contract.
        let id = unsafe { ring.submit(entry, keep, &mut wakers) }?;
        // Other operations the submission's reap completed.
        wakers.into_iter().for_each(std::task::Waker::wake);
        Ok(RingOp {
            ring: Arc::clone(ring),
            id: Some(id),
            wait: self.wait,
            _hold: hold,
        })
    }
}

/// A file operation in flight holds a paused clock, like a blocking closure
/// (`sleep/activity.rs`): a timeout around a slow read does not fire while
/// the read is under way. Let go when its future has the answer (on a
/// worker, which counts itself) or is dropped.
struct ClockHold(Arc<Registry>);

impl ClockHold {
    fn new(registry: &Arc<Registry>) -> ClockHold {
        registry.sleep_manager().hold();
        ClockHold(Arc::clone(registry))
    }
}

impl Drop for ClockHold {
    fn drop(&mut self) {
        self.0.sleep_manager().release_hold();
    }
}

/// An operation on the blocking threads.
pub(super) struct Blocking<T> {
    rx: futures::channel::oneshot::Receiver<std::thread::Result<io::Result<T>>>,
    /// What the task waiting on it records.
    wait: Wait,
    _hold: ClockHold,
}

impl<T> Future for Blocking<T> {
    type Output = io::Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let Poll::Ready(done) = Pin::new(&mut self.rx).poll(cx) else {
            note_wait(self.wait);
            return Poll::Pending;
        };
        match done {
            Ok(Ok(result)) => Poll::Ready(result),
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(futures::channel::oneshot::Canceled) => Poll::Ready(Err(io::Error::other(
                "pool: the pool shut down before this file operation ran",
            ))),
        }
    }
}

/// An operation on the ring: its result (a count, or `-errno`) and what it
/// kept alive for the kernel.
#[cfg(target_os = "linux")]
pub(super) struct RingOp {
    ring: Arc<Ring>,
    id: Option<OpId>,
    /// What the task waiting on it records.
    wait: Wait,
    _hold: ClockHold,
}

#[cfg(target_os = "linux")]
impl Future for RingOp {
    type Output = (i32, Keep);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(i32, Keep)> {
        let id = self
            .id
            .expect("a ring operation is not polled after it completed");
        let Poll::Ready(done) = self.ring.poll_op(id, cx) else {
            note_wait(self.wait);
            return Poll::Pending;
        };
        self.id = None;
        Poll::Ready(done)
    }
}

#[cfg(target_os = "linux")]
impl Drop for RingOp {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            // Its memory stays with the ring until the kernel is done.
            self.ring.abandon(id);
        }
    }
}
