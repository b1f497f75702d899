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

pin_project! {
    /// A futures-io stream as hyper's `rt::Read` and `rt::Write`.
    #[derive(Debug)]
    pub struct Io<T> {
        #[pin]
        inner: T,
    }
}

impl<T> Io<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Io<T> {
        Io { inner }
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
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let n = {
            // SAFETY: `as_mut` requires that we never de-initialize bytes of
            // the cursor: we only write zeros (initializing them) below.
            let uninit = unsafe { buf.as_mut() };
            uninit.fill(MaybeUninit::new(0));
            // SAFETY: every byte of `uninit` was initialized just above, and
            // `MaybeUninit<u8>` has the layout of `u8`.
            let init = unsafe { &mut *(uninit as *mut [MaybeUninit<u8>] as *mut [u8]) };
            ready!(self.project().inner.poll_read(cx, init))?
        };
        // SAFETY: `poll_read` filled (initialized) the first `n` bytes.
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
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
        drop(crate::spawn(future));
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
        crate::time::Instant::now().into_std()
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<crate::time::Sleep>() {
            Some(ours) => ours.get_mut().reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}
