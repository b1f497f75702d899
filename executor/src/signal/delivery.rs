//! The process's signal table: which signals have a handler, the pipe
//! their handler writes to, and the deliveries each signal has had.
//!
//! # How a delivery reaches a task
//!
//! 1. The handler (installed once per signal through `signal-hook-registry`,
//!    and never removed) marks its signal's slot `pending` and writes one
//!    byte into the process's pipe. Both are async-signal-safe: an atomic
//!    store and `write(2)`. A full pipe (`EAGAIN`) loses nothing: unread
//!    bytes are there already, and the `pending` flag is what counts.
//! 2. Every [`Signal`](super::unix::Signal) holds a duplicate of the pipe's
//!    read end, registered with its pool's I/O driver, and a task waiting in
//!    `recv` waits for that descriptor to be readable. So the byte wakes a
//!    pool asleep in its driver like any other readiness, with no thread of
//!    its own.
//! 3. Whoever reads bytes from the pipe (any `Signal`'s duplicate: they
//!    share the pipe) dispatches: every slot found `pending` counts one more
//!    delivery and wakes the tasks waiting on it, in every pool.
//! 4. A `Signal` returns once per change of its slot's delivery count since
//!    it last returned (or since it was made): deliveries in between
//!    coalesce, none is lost.
//!
//! # Invariants
//!
//! * The handler sets `pending` before it writes its byte, so the drain
//!   that reads that byte (after the write) finds the flag set, or a drain
//!   in between took it and dispatched.
//! * A dispatch counts the delivery before it takes the waiters' lock; a
//!   waiter stores its waker under that lock, then reads the count again.
//!   Either the dispatch takes the lock after the waiter (and wakes it), or
//!   the waiter's second read sees the new count: no wake is lost.

use crate::unwind::call_quietly;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::Waker;

/// The highest signal number on Linux (`SIGRTMAX`).
pub(super) const MAX_SIGNAL: i32 = 64;

/// Signals a program cannot handle: SIGKILL and SIGSTOP cannot be caught,
/// and SIGILL, SIGFPE and SIGSEGV report a fault of the thread that
/// receives them, which a handler that returns would repeat.
const FORBIDDEN: [i32; 5] = [
    libc::SIGKILL,
    libc::SIGSTOP,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGSEGV,
];

/// One signal's state.
pub(super) struct SignalSlot {
    /// Set by the handler, taken by a dispatch.
    pending: AtomicBool,
    /// Deliveries dispatched so far.
    deliveries: AtomicU64,
    /// The tasks waiting for its next delivery, by `Signal` id.
    waiters: Mutex<Vec<(u64, Waker)>>,
    /// The handler is installed (it never is removed).
    installed: Mutex<bool>,
}

impl SignalSlot {
    const fn new() -> SignalSlot {
        SignalSlot {
            pending: AtomicBool::new(false),
            deliveries: AtomicU64::new(0),
            waiters: Mutex::new(Vec::new()),
            installed: Mutex::new(false),
        }
    }

    /// Deliveries dispatched so far. Acquire: pairs with the dispatch's
    /// release, so the waiter that sees the count sees everything before
    /// the signal's dispatch.
    pub(super) fn deliveries(&self) -> u64 {
        self.deliveries.load(Ordering::Acquire)
    }

    /// Wake the task of `Signal` `id` at the next delivery (replacing its
    /// earlier waker).
    pub(super) fn wait(&self, id: u64, waker: &Waker) {
        let mut waiters = lock(&self.waiters);
        match waiters.iter_mut().find(|(i, _)| *i == id) {
            Some((_, w)) => w.clone_from(waker),
            None => waiters.push((id, waker.clone())),
        }
    }

    /// `Signal` `id` is gone, or returned: forget its waker.
    pub(super) fn forget(&self, id: u64) {
        let removed = {
            let mut waiters = lock(&self.waiters);
            waiters
                .iter()
                .position(|(i, _)| *i == id)
                .map(|at| waiters.swap_remove(at))
        };
        drop(removed); // outside the lock
    }
}

/// A lock that a panic elsewhere does not poison for us: the data (wakers)
/// stays consistent whatever panicked.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Signals 0 (unused) to `MAX_SIGNAL`.
static SLOTS: [SignalSlot; MAX_SIGNAL as usize + 1] =
    [const { SignalSlot::new() }; MAX_SIGNAL as usize + 1];

/// The write end of the pipe, for the handler (an atomic load is
/// async-signal-safe; `-1` until the pipe exists).
static WRITE_FD: AtomicI32 = AtomicI32::new(-1);

/// The pipe: its read end (duplicated for each `Signal`) and write end.
struct Pipe {
    read: UnixStream,
    /// Kept open for the life of the process (the handler writes to it).
    _write: UnixStream,
}

static PIPE: OnceLock<Result<Pipe, (io::ErrorKind, String)>> = OnceLock::new();

fn pipe() -> io::Result<&'static Pipe> {
    let pipe = PIPE.get_or_init(|| {
        let make = || -> io::Result<Pipe> {
            let (read, write) = UnixStream::pair()?;
            read.set_nonblocking(true)?;
            write.set_nonblocking(true)?;
            WRITE_FD.store(write.as_raw_fd(), Ordering::SeqCst);
            Ok(Pipe {
                read,
                _write: write,
            })
        };
        make().map_err(|e| (e.kind(), e.to_string()))
    });
    pipe.as_ref()
        .map_err(|(kind, message)| io::Error::new(*kind, format!("the signal pipe: {message}")))
}

/// The slot of `signum`, once its handler is installed.
///
/// # Errors
///
/// `InvalidInput` for a number that is not a signal, one that cannot be
/// handled, or one the C library keeps for itself; the pipe's error.
pub(super) fn register(signum: i32) -> io::Result<&'static SignalSlot> {
    if !(1..=MAX_SIGNAL).contains(&signum) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{signum} is not a signal number (they are 1 to {MAX_SIGNAL})"),
        ));
    }
    if FORBIDDEN.contains(&signum) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "signal {signum} cannot be handled by a program (SIGKILL and SIGSTOP cannot be \
                 caught; SIGILL, SIGFPE and SIGSEGV report a fault of the thread itself)"
            ),
        ));
    }
    pipe()?;
    let slot = &SLOTS[signum as usize];
    let mut installed = lock(&slot.installed);
    if !*installed {
        // SAFETY: the action is async-signal-safe: it stores to an atomic,
        // loads another, calls `write(2)`, and saves and restores `errno`
        // around it; it allocates, locks and panics nowhere. `signum` is
        // not one of the signals `register` forbids (checked above).
        let result = unsafe { signal_hook_registry::register(signum, move || on_signal(signum)) };
        match result {
            Ok(_) => *installed = true,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("signal {signum} cannot be handled here (the C library keeps it: {e})"),
                ));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(slot)
}

/// The handler's action, in signal context.
fn on_signal(signum: i32) {
    // SAFETY: `__errno_location` gives this thread's `errno`, which the
    // interrupted code may be about to read: save it, restore it.
    let errno = unsafe { *libc::__errno_location() };
    SLOTS[signum as usize].pending.store(true, Ordering::SeqCst);
    let fd = WRITE_FD.load(Ordering::SeqCst);
    let byte = 1u8;
    // SAFETY: `fd` is the pipe's write end, open for the process's life;
    // the buffer is one valid byte. A full pipe (EAGAIN) is fine: see the
    // module docs.
    unsafe {
        libc::write(fd, (&byte as *const u8).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

/// A duplicate of the pipe's read end, for a `Signal` to register with its
/// pool's driver.
pub(super) fn reader() -> io::Result<UnixStream> {
    pipe()?.read.try_clone()
}

/// Read what the pipe holds through `read` and, if there was anything,
/// dispatch. True if bytes were read. `read` is a non-blocking read of the
/// pipe (the global read end, or a `Signal`'s duplicate).
pub(super) fn drain(mut read: impl FnMut(&mut [u8]) -> io::Result<usize>) -> io::Result<bool> {
    let mut buf = [0u8; 64];
    let mut any = false;
    loop {
        match read(&mut buf) {
            Ok(0) => break,
            Ok(_) => any = true,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if any {
        dispatch();
    }
    Ok(any)
}

/// Drain the pipe now, through its own read end (a new `Signal` does this
/// before it reads its slot's count, so that it does not return for a
/// delivery that came before it).
pub(super) fn drain_now() -> io::Result<()> {
    let mut read = &pipe()?.read;
    drain(|buf| std::io::Read::read(&mut read, buf)).map(drop)
}

/// Count one delivery for every pending signal and wake its waiters.
fn dispatch() {
    for slot in SLOTS.iter() {
        if !slot.pending.swap(false, Ordering::AcqRel) {
            continue;
        }
        // Release: pairs with `deliveries`' acquire. Counted before the
        // waiters' lock is taken (see the module invariants).
        slot.deliveries.fetch_add(1, Ordering::Release);
        let waiters = std::mem::take(&mut *lock(&slot.waiters));
        for (_, waker) in waiters {
            // A foreign waker might panic: never through the dispatch.
            call_quietly(|| waker.wake());
        }
    }
}
