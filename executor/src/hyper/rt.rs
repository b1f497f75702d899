//! The runtime half of hyper 1.x on pool: [`Io`], [`Executor`], [`Timer`]
//! (what hyper-util's `TokioIo`, `TokioExecutor` and `TokioTimer` are for
//! tokio).

use futures::io::{AsyncRead, AsyncWrite};
use pin_project_lite::pin_project;
use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

/// The first read of an `Io` offers this many bytes of hyper's buffer.
const READ_FIRST: usize = 4096;
/// A read never offers fewer bytes than this: a request's head fits.
const READ_MIN: usize = 1024;
/// Nor more than this (and never more than hyper's buffer has free).
const READ_MAX: usize = 1 << 20;

pin_project! {
    /// A futures-io stream as hyper's `rt::Read` and `rt::Write`.
    #[derive(Debug)]
    pub struct Io<T> {
        #[pin]
        inner: T,
        // How many bytes of hyper's free buffer the next read offers (and
        // so zeroes first): see `poll_read`.
        read_size: usize,
    }
}

impl<T> Io<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Io<T> {
        Io {
            inner,
            read_size: READ_FIRST,
        }
    }

    /// The wrapped stream.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// Unwraps the stream.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: AsyncRead> hyper::rt::Read for Io<T> {
    /// A futures-io read needs initialized bytes, and hyper's cursor hands
    /// out uninitialized ones, so the bytes offered are zeroed first. hyper
    /// offers all of its free buffer (8 KiB and more), and a connection
    /// reads once more after each request to find the socket drained: both
    /// reads zeroed all of it (`memset` was 1.4% of a pinned one-worker hello
    /// server's CPU, a tenth of its user time). So a read offers what the
    /// reads before it suggest instead: twice the last read, from
    /// `READ_MIN`, doubling while reads fill what they are offered, as
    /// hyper's own adaptive buffer grows.
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let n = {
            // SAFETY: `as_mut` requires that we never de-initialize bytes of
            // the cursor: we only write zeros (initializing them) below.
            let uninit = unsafe { buf.as_mut() };
            let offered = uninit.len().min(*this.read_size);
            let uninit = &mut uninit[..offered];
            uninit.fill(MaybeUninit::new(0));
            // SAFETY: every byte of `uninit` was initialized just above, and
            // `MaybeUninit<u8>` has the layout of `u8`.
            let init = unsafe { &mut *(uninit as *mut [MaybeUninit<u8>] as *mut [u8]) };
            let n = ready!(this.inner.poll_read(cx, init))?;
            *this.read_size = next_read_size(*this.read_size, offered, n);
            n
        };
        // SAFETY: `poll_read` filled (initialized) the first `n` bytes.
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
    }
}

/// What the read after one that was offered `offered` bytes (`size`, or
/// less if hyper's buffer had less free) and read `n` offers: twice as much
/// if it filled a full offer, the same if it filled a smaller one, else
/// twice what it read; within `READ_MIN..=READ_MAX`.
fn next_read_size(size: usize, offered: usize, n: usize) -> usize {
    if n < offered {
        n.saturating_mul(2).clamp(READ_MIN, READ_MAX)
    } else if offered == size {
        size.saturating_mul(2).min(READ_MAX)
    } else {
        size
    }
}

impl<T: AsyncWrite> hyper::rt::Write for Io<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_close(cx)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write_vectored(cx, bufs)
    }
}

/// hyper's `rt::Executor`: spawns on the current pool (detached).
#[derive(Clone, Copy, Debug, Default)]
pub struct Executor;

impl Executor {
    /// The executor.
    pub fn new() -> Executor {
        Executor
    }
}

impl<F> hyper::rt::Executor<F> for Executor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        drop(crate::free_fns::spawn(future));
    }
}

/// hyper's `rt::Timer`, on `pool::time`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer;

impl Timer {
    /// The timer.
    pub fn new() -> Timer {
        Timer
    }
}

impl hyper::rt::Sleep for crate::time::Sleep {}

impl hyper::rt::Timer for Timer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(crate::time::sleep(duration))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(crate::time::sleep_until(deadline))
    }

    /// The pool's clock, so that hyper's deadlines agree with its sleeps
    /// when a test pauses it.
    fn now(&self) -> Instant {
        crate::time::instant::Instant::now().into_std()
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<crate::time::Sleep>() {
            Some(ours) => ours.get_mut().reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::{Read, ReadBuf};

    /// A stream of `len` bytes (byte i is `i as u8`) that records how many
    /// bytes each read was offered, and gives at most `chunk` per read.
    struct Recording {
        pos: usize,
        len: usize,
        chunk: usize,
        offered: Vec<usize>,
    }

    impl AsyncRead for Recording {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut [u8],
        ) -> Poll<io::Result<usize>> {
            self.offered.push(buf.len());
            let n = buf.len().min(self.len - self.pos).min(self.chunk);
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = (self.pos + i) as u8;
            }
            self.pos += n;
            Poll::Ready(Ok(n))
        }
    }

    /// Read `io` to its end through hyper's cursor, `room` bytes at a time.
    fn drain(io: &mut Io<Recording>, room: usize) -> Vec<u8> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut all = Vec::new();
        loop {
            let mut raw = vec![MaybeUninit::uninit(); room];
            let mut rb = ReadBuf::uninit(&mut raw);
            let poll = Pin::new(&mut *io).poll_read(&mut cx, rb.unfilled());
            assert!(matches!(poll, Poll::Ready(Ok(()))));
            if rb.filled().is_empty() {
                return all;
            }
            all.extend_from_slice(rb.filled());
        }
    }

    fn recording(len: usize, chunk: usize) -> Io<Recording> {
        Io::new(Recording {
            pos: 0,
            len,
            chunk,
            offered: Vec::new(),
        })
    }

    #[test]
    fn a_large_body_arrives_whole_in_reads_that_grow() {
        let mut io = recording(1 << 20, usize::MAX);
        let all = drain(&mut io, 1 << 20);
        assert_eq!(all.len(), 1 << 20);
        assert!(all.iter().enumerate().all(|(i, &b)| b == i as u8));
        let offered = &io.inner().offered;
        // 4 KiB, 8 KiB, ... 512 KiB, then the rest: each read that fills its
        // offer doubles the next.
        assert_eq!(offered[..4], [4096, 8192, 16384, 32768], "{offered:?}");
        assert!(offered.len() <= 12, "{} reads: {offered:?}", offered.len());
    }

    #[test]
    fn a_short_read_shrinks_the_next_offer_and_hyper_s_room_caps_it() {
        // Requests of 60 bytes: after the first, reads offer READ_MIN.
        let mut io = recording(600, 60);
        assert_eq!(drain(&mut io, 8192).len(), 600);
        let offered = &io.inner().offered;
        assert_eq!(offered[0], READ_FIRST);
        assert!(offered[1..].iter().all(|&o| o == READ_MIN), "{offered:?}");
        // hyper's buffer with 100 bytes free: the offer is 100, and a read
        // that fills it leaves the wanted size as it was.
        let mut io = recording(300, usize::MAX);
        assert_eq!(drain(&mut io, 100).len(), 300);
        assert_eq!(io.inner().offered[..3], [100, 100, 100]);
        assert_eq!(io.read_size, READ_MIN, "the last read found the end");
        assert_eq!(next_read_size(4096, 100, 100), 4096);
        assert_eq!(next_read_size(READ_MAX, READ_MAX, READ_MAX), READ_MAX);
    }
}
