//! `Ring`: one pool's io_uring, the engine `pool::fs` runs file operations
//! on where the kernel allows it.
//!
//! A task submits an operation from the worker that polls it: the entry is
//! pushed and `io_uring_enter` called at once. The kernel completes what it
//! can inline (a read or write served by the page cache, an open of a
//! cached path), so the submitter then reaps the completion queue itself
//! and the task usually finds its answer in the same poll, with no thread
//! hand-off at all. What would block the kernel runs on its own io-wq
//! threads, never on ours.
//!
//! Completions that come later reach the pool the way readiness does: the
//! ring's descriptor is in the driver's epoll set (`RING_TOKEN`), readable
//! while the completion queue holds entries, so the sleeper in the driver
//! wakes and a busy worker's driver poll finds it; whoever polls reaps the
//! queue and wakes the operations' wakers like readiness
//! (`../sleep/README.md`, "Ring completions").
//!
//! The descriptor is registered one-shot, and armed only while an
//! operation is in flight that its submitter did not reap: every completion
//! wakes the descriptor's waiters, and were it armed for good, each
//! operation completed inside its own submission (the common case) would
//! wake the driver's sleeper for nothing (measured: a 64 KiB `fs::read`
//! took 21 us instead of 11). `IORING_REGISTER_EVENTFD_ASYNC` would skip
//! those, but also the completions the kernel posts from the submitter's
//! task work (a buffered read of an uncached page), which nobody would
//! reap.
//!
//! Each worker has a ring of its own (`Driver::ring`), and the threads that
//! are not workers share one: the kernel runs a ring's submissions, and so
//! the copies of inline reads and writes, one at a time under its own lock,
//! so one ring for the pool would let only one worker copy at once
//! (measured: 32 concurrent 128 KiB reads took 47 ms on one ring, against
//! 30 ms on two blocking threads).
//!
//! # Invariants
//!
//! * An operation's slot owns what the kernel reads or writes (the buffer,
//!   the path, the statx record) from submission until its completion is
//!   reaped, even if the future that submitted it was dropped (its slot is
//!   then `Abandoned`, and the reaper frees it): the kernel never touches
//!   freed memory.
//! * At most `MAX_IN_FLIGHT` operations are in flight, the completion
//!   queue's size, so the queue never overflows; a submission beyond it is
//!   refused and the caller uses the blocking threads.
//! * Only the holder of `inner`'s lock touches the queues.
//! * After any call that holds `inner`'s lock returns, either nothing is in
//!   flight or the descriptor is armed (`armed`, decided under the lock;
//!   the kernel disarms it when it reports the event, and the driver then
//!   calls `reap_fired`, which decides again).

use io_uring::{opcode, squeue, types, IoUring, Probe};
use parking_lot::Mutex;
use std::any::Any;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// Submission queue entries.
const ENTRIES: u32 = 256;
/// Completion queue entries, and so the most operations in flight.
const MAX_IN_FLIGHT: u32 = 1024;
/// The user data of a cancellation's own completion: ignored.
const CANCEL_DATA: u64 = u64::MAX;

/// What an operation's slot keeps alive for the kernel.
pub(crate) type Keep = Box<dyn Any + Send>;

/// An operation in flight: its slot's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpId(usize);

enum OpSlot {
    Vacant,
    Waiting {
        waker: Option<Waker>,
        keep: Keep,
    },
    Done {
        result: i32,
        keep: Keep,
    },
    /// Its future was dropped before the completion came.
    Abandoned {
        keep: Keep,
    },
}

struct Inner {
    uring: IoUring,
    slots: Vec<OpSlot>,
    free: Vec<usize>,
    /// The descriptor is armed in the driver's epoll set (one-shot).
    armed: bool,
}

/// One pool's io_uring.
pub(crate) struct Ring {
    inner: Mutex<Inner>,
    fd: RawFd,
    /// The driver's epoll instance, which the descriptor is armed in, and
    /// its token there.
    epoll_fd: RawFd,
    token: u64,
    /// Operations submitted and not yet reaped; changed under `inner`'s
    /// lock.
    in_flight: AtomicUsize,
    /// The same, summed over the driver's rings (its interest hint).
    all_in_flight: Arc<AtomicUsize>,
    /// Operations completed since the ring was made (`Metrics`).
    completed: AtomicUsize,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("fd", &self.fd)
            .field("in_flight", &self.in_flight.load(Ordering::Relaxed))
            .finish()
    }
}

impl Ring {
    /// A ring, if the kernel gives one and supports every operation the
    /// engine submits: `Err` on ENOSYS (no io_uring), EPERM (a seccomp
    /// filter, or `kernel.io_uring_disabled`), or a missing opcode. Its
    /// descriptor is added to `epoll_fd` (one-shot, as `token`); it counts
    /// its operations in flight into `all_in_flight` too.
    pub(crate) fn new(
        epoll_fd: RawFd,
        token: u64,
        all_in_flight: Arc<AtomicUsize>,
    ) -> io::Result<Ring> {
        let uring = IoUring::builder()
            .setup_cqsize(MAX_IN_FLIGHT)
            .build(ENTRIES)?;
        let mut probe = Probe::new();
        uring.submitter().register_probe(&mut probe)?;
        for (code, name) in [
            (opcode::Read::CODE, "READ"),
            (opcode::Write::CODE, "WRITE"),
            (opcode::Fsync::CODE, "FSYNC"),
            (opcode::OpenAt::CODE, "OPENAT"),
            (opcode::Close::CODE, "CLOSE"),
            (opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
        ] {
            if !probe.is_supported(code) {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("io_uring has no IORING_OP_{name} on this kernel"),
                ));
            }
        }
        if !uring.params().is_feature_nodrop() || !uring.params().is_feature_rw_cur_pos() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "io_uring lacks IORING_FEAT_NODROP or IORING_FEAT_RW_CUR_POS on this kernel",
            ));
        }
        let fd = uring.as_raw_fd();
        epoll_ctl(epoll_fd, libc::EPOLL_CTL_ADD, fd, token)?;
        Ok(Ring {
            inner: Mutex::new(Inner {
                uring,
                slots: Vec::new(),
                free: Vec::new(),
                armed: true,
            }),
            fd,
            epoll_fd,
            token,
            in_flight: AtomicUsize::new(0),
            all_in_flight,
            completed: AtomicUsize::new(0),
        })
    }

    /// Operations in flight now (for the tests below, which loom skips).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Operations completed so far.
    pub(crate) fn completed(&self) -> usize {
        self.completed.load(Ordering::Relaxed)
    }

    /// Submit `entry`, whose pointers point into `keep`'s heap data, and
    /// reap what completed (the waker of other operations into `wakers`).
    /// `Err(keep)` when `MAX_IN_FLIGHT` operations are in flight already.
    ///
    /// # Safety
    ///
    /// Every pointer in `entry` points into memory `keep` owns (heap memory,
    /// which does not move when `keep` does) and stays valid while `keep`
    /// lives, for as long and as much as the operation reads or writes it.
    pub(crate) unsafe fn submit(
        &self,
        entry: squeue::Entry,
        keep: Keep,
        wakers: &mut Vec<Waker>,
    ) -> Result<OpId, Keep> {
        let mut inner = self.inner.lock();
        if self.in_flight.load(Ordering::Relaxed) >= MAX_IN_FLIGHT as usize {
            return Err(keep);
        }
        let index = match inner.free.pop() {
            Some(index) => index,
            None => {
                inner.slots.push(OpSlot::Vacant);
                inner.slots.len() - 1
            }
        };
        inner.slots[index] = OpSlot::Waiting { waker: None, keep };
        let entry = entry.user_data(index as u64);
        // SAFETY: the caller's contract: what `entry` points to lives in
        // the slot's `keep` until its completion is reaped (the invariant).
        unsafe { inner.push(&entry) };
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.all_in_flight.fetch_add(1, Ordering::Relaxed);
        inner.submit();
        self.reap_locked(&mut inner, wakers);
        self.arm_if_in_flight(&mut inner);
        Ok(OpId(index))
    }

    /// The result of operation `id` (a `-errno` or its count) and what it
    /// kept, once it completed; else `cx`'s waker is kept for the
    /// completion.
    pub(crate) fn poll_op(&self, id: OpId, cx: &mut Context<'_>) -> Poll<(i32, Keep)> {
        let mut inner = self.inner.lock();
        let slot = &mut inner.slots[id.0];
        match slot {
            OpSlot::Waiting { waker, .. } => {
                match waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            OpSlot::Done { .. } => {
                let OpSlot::Done { result, keep } = std::mem::replace(slot, OpSlot::Vacant) else {
                    unreachable!("matched Done above");
                };
                inner.free.push(id.0);
                Poll::Ready((result, keep))
            }
            OpSlot::Vacant | OpSlot::Abandoned { .. } => {
                unreachable!("an operation is polled only by the future that owns it")
            }
        }
    }

    /// The future of operation `id` was dropped: if it completed, free it;
    /// else keep its memory until the kernel is done (and ask the kernel to
    /// cancel it).
    pub(crate) fn abandon(&self, id: OpId) {
        let mut inner = self.inner.lock();
        let slot = &mut inner.slots[id.0];
        match std::mem::replace(slot, OpSlot::Vacant) {
            OpSlot::Waiting { keep, .. } => {
                *slot = OpSlot::Abandoned { keep };
                let cancel = opcode::AsyncCancel::new(id.0 as u64)
                    .build()
                    .user_data(CANCEL_DATA);
                // SAFETY: a cancellation points at no memory.
                unsafe { inner.push(&cancel) };
                inner.submit();
                self.arm_if_in_flight(&mut inner);
            }
            done @ OpSlot::Done { .. } => {
                inner.free.push(id.0);
                drop(inner);
                drop(done); // the buffer, outside the lock
            }
            OpSlot::Vacant | OpSlot::Abandoned { .. } => {
                unreachable!("an operation is abandoned once, by the future that owns it")
            }
        }
    }

    /// The driver saw the descriptor readable, which disarmed it: reap,
    /// and arm it again if operations are still in flight.
    pub(crate) fn reap_fired(&self, wakers: &mut Vec<Waker>) {
        let mut inner = self.inner.lock();
        inner.armed = false;
        inner.submit();
        self.reap_locked(&mut inner, wakers);
        self.arm_if_in_flight(&mut inner);
    }

    /// Keep the invariant: an operation in flight has the descriptor armed,
    /// so its completion wakes the driver. (`EPOLL_CTL_MOD` reports the
    /// descriptor at once if a completion came meanwhile.)
    fn arm_if_in_flight(&self, inner: &mut Inner) {
        if inner.armed || self.in_flight.load(Ordering::Relaxed) == 0 {
            return;
        }
        match epoll_ctl(self.epoll_fd, libc::EPOLL_CTL_MOD, self.fd, self.token) {
            Ok(()) => inner.armed = true,
            // Only if the epoll instance is gone (the driver failed): its
            // shutdown completes nothing, but nobody polls any more either.
            Err(e) => eprintln!("pool: arming the io_uring in epoll failed ({e})"),
        }
    }

    fn reap_locked(&self, inner: &mut Inner, wakers: &mut Vec<Waker>) {
        let mut freed = Vec::new();
        let Inner {
            uring, slots, free, ..
        } = inner;
        let mut reaped = 0;
        for cqe in uring.completion() {
            let data = cqe.user_data();
            if data == CANCEL_DATA {
                continue;
            }
            let index = data as usize;
            let slot = &mut slots[index];
            match std::mem::replace(slot, OpSlot::Vacant) {
                OpSlot::Waiting { waker, keep } => {
                    *slot = OpSlot::Done {
                        result: cqe.result(),
                        keep,
                    };
                    wakers.extend(waker);
                }
                OpSlot::Abandoned { keep } => {
                    free.push(index);
                    freed.push(keep);
                }
                OpSlot::Vacant | OpSlot::Done { .. } => {
                    unreachable!("one completion per operation, for a slot in flight")
                }
            }
            reaped += 1;
        }
        if reaped > 0 {
            self.in_flight.fetch_sub(reaped, Ordering::Relaxed);
            self.all_in_flight.fetch_sub(reaped, Ordering::Relaxed);
            self.completed.fetch_add(reaped, Ordering::Relaxed);
        }
        drop(freed);
    }
}

impl Inner {
    /// Push `entry`, submitting first if the submission queue is full.
    ///
    /// # Safety
    ///
    /// As `Ring::submit`'s.
    unsafe fn push(&mut self, entry: &squeue::Entry) {
        loop {
            // SAFETY: the caller's contract.
            if unsafe { self.uring.submission().push(entry) }.is_ok() {
                return;
            }
            // Full: hand the queue to the kernel, which empties it (it holds
            // `ENTRIES` and at most `MAX_IN_FLIGHT` operations are in flight,
            // so the completion queue has room for what it starts).
            if let Err(e) = self.uring.submit() {
                if !retryable(&e) {
                    // No submission can make progress: the entry would never
                    // complete. This cannot happen on a ring that passed
                    // `Ring::new`'s probe.
                    panic!("pool: io_uring refused a submission ({e})");
                }
                std::thread::yield_now();
            }
        }
    }

    /// Hand the pushed entries to the kernel; entries it refuses for the
    /// moment stay queued for the next submit or reap.
    fn submit(&mut self) {
        loop {
            match self.uring.submit() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                _ => return,
            }
        }
    }
}

/// Add or re-arm `fd` in `epoll_fd`: readable, one-shot, as `token`.
fn epoll_ctl(epoll_fd: RawFd, op: i32, fd: RawFd, token: u64) -> io::Result<()> {
    let mut event = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLONESHOT) as u32,
        u64: token,
    };
    // SAFETY: `event` is a valid epoll_event for the call's duration; the
    // descriptors are ours (a bad one is an error, not undefined behaviour).
    if unsafe { libc::epoll_ctl(epoll_fd, op, fd, &mut event) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn retryable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
    )
}

impl Drop for Ring {
    /// Operations still in flight belong to dropped futures (a live future
    /// holds the ring): ask the kernel to cancel them, then leak what they
    /// keep, since the kernel may still write into it while the ring
    /// closes.
    fn drop(&mut self) {
        let inner = self.inner.get_mut();
        for slot in inner.slots.drain(..) {
            if let OpSlot::Abandoned { keep } | OpSlot::Waiting { keep, .. } = slot {
                std::mem::forget(keep);
            }
        }
    }
}

/// The completion of a read, write or fsync: its count, or the error.
pub(crate) fn result_of(result: i32) -> io::Result<usize> {
    if result < 0 {
        Err(io::Error::from_raw_os_error(-result))
    } else {
        Ok(result as usize)
    }
}

/// The entries `pool::fs` submits.
pub(crate) mod ops {
    use super::*;
    use std::ffi::CStr;

    /// The offset that means "at the file's cursor, and move it".
    pub(crate) const CURSOR: u64 = u64::MAX;

    /// A read of up to `len` bytes into `buf`, at `offset` (or `CURSOR`).
    pub(crate) fn read(fd: RawFd, buf: *mut u8, len: usize, offset: u64) -> squeue::Entry {
        let len = len.min(MAX_RW) as u32;
        opcode::Read::new(types::Fd(fd), buf, len)
            .offset(offset)
            .build()
    }

    /// A write of `buf`, at `offset` (or `CURSOR`).
    pub(crate) fn write(fd: RawFd, buf: &[u8], offset: u64) -> squeue::Entry {
        let len = buf.len().min(MAX_RW) as u32;
        opcode::Write::new(types::Fd(fd), buf.as_ptr(), len)
            .offset(offset)
            .build()
    }

    /// Linux moves at most this many bytes in one read or write.
    const MAX_RW: usize = 0x7fff_f000;

    pub(crate) fn fsync(fd: RawFd, data_only: bool) -> squeue::Entry {
        let flags = if data_only {
            types::FsyncFlags::DATASYNC
        } else {
            types::FsyncFlags::empty()
        };
        opcode::Fsync::new(types::Fd(fd)).flags(flags).build()
    }

    pub(crate) fn open(path: &CStr, flags: i32, mode: u32) -> squeue::Entry {
        opcode::OpenAt::new(types::Fd(libc::AT_FDCWD), path.as_ptr())
            .flags(flags | libc::O_CLOEXEC)
            .mode(mode)
            .build()
    }

    pub(crate) fn close(fd: RawFd) -> squeue::Entry {
        opcode::Close::new(types::Fd(fd)).build()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn pipe() -> (RawFd, RawFd) {
        let mut fds = [0; 2];
        // SAFETY: `pipe` writes two descriptors into the array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        (fds[0], fds[1])
    }

    #[test]
    fn an_abandoned_read_keeps_its_buffer_until_the_kernel_is_done() {
        // SAFETY: a new epoll instance, closed at the end.
        let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        assert!(epoll >= 0);
        let Ok(ring) = Ring::new(epoll, 1, Arc::default()) else {
            eprintln!("no io_uring here: nothing to check");
            return;
        };
        let (r, w) = pipe();
        let witness = Arc::new(());
        let mut keep: Box<(Vec<u8>, Arc<()>)> = Box::new((vec![0; 64], Arc::clone(&witness)));
        let entry = ops::read(r, keep.0.as_mut_ptr(), keep.0.len(), ops::CURSOR);
        let mut wakers = Vec::new();
        // SAFETY: the entry points into `keep`'s vector.
        let id = unsafe { ring.submit(entry, keep, &mut wakers) }.unwrap();
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(ring.poll_op(id, &mut cx).is_pending(), "an empty pipe");
        ring.abandon(id);
        assert_eq!(ring.in_flight(), 1, "the kernel still has it");
        assert_eq!(Arc::strong_count(&witness), 2, "its memory is kept");

        // SAFETY: writing 5 bytes from a static buffer to our pipe.
        assert_eq!(unsafe { libc::write(w, b"hello".as_ptr().cast(), 5) }, 5);
        let deadline = Instant::now() + Duration::from_secs(10);
        while ring.in_flight() > 0 {
            assert!(Instant::now() < deadline, "the read never completed");
            ring.reap_fired(&mut wakers);
            std::thread::yield_now();
        }
        assert_eq!(Arc::strong_count(&witness), 1, "freed once reaped");
        assert_eq!(ring.completed(), 1);

        // The slot is free for the next operation.
        let mut keep: Box<Vec<u8>> = Box::new(vec![0; 8]);
        let entry = ops::read(r, keep.as_mut_ptr(), keep.len(), ops::CURSOR);
        // SAFETY: as above.
        let again = unsafe { ring.submit(entry, keep, &mut wakers) }.unwrap();
        assert_eq!(again, id);
        // SAFETY: closing our descriptors; the read completes with EOF.
        unsafe {
            libc::close(w);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let (n, keep) = loop {
            ring.reap_fired(&mut wakers);
            if let Poll::Ready(done) = ring.poll_op(id, &mut cx) {
                break done;
            }
            assert!(Instant::now() < deadline, "EOF never came");
            std::thread::yield_now();
        };
        // 5 if the cancellation ended the first read before the write came
        // (the bytes then wait in the pipe), else EOF.
        let n = result_of(n).unwrap();
        assert!(n == 5 || n == 0, "{n}");
        drop(keep);
        drop(ring);
        // SAFETY: our descriptors.
        unsafe {
            libc::close(r);
            libc::close(epoll);
        }
    }
}
