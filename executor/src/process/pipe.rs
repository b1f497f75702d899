//! `ChildStdin`, `ChildStdout`, `ChildStderr`: a child's piped stdio as
//! non-blocking pipes on the current pool's driver (`PollEvented`, the
//! readiness path of every socket).

use crate::io::async_fd::set_nonblocking;
use crate::io::async_fd::FdSource;
use crate::io::poll_evented::PollEvented;
use crate::task::waits::Resource;
use futures::io::{AsyncRead, AsyncWrite};
use std::fmt;
use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};

/// One end of a pipe on the driver. A pipe is a stream: a short transfer
/// emptied or filled its buffer, so it clears the readiness it ran under
/// (`poll_transfer`).
struct PipeEnd {
    io: PollEvented<FdSource<File>>,
}

impl PipeEnd {
    fn new(
        fd: impl Into<OwnedFd>,
        resource: Resource,
        at: &'static Location<'static>,
    ) -> io::Result<PipeEnd> {
        let file = File::from(fd.into());
        set_nonblocking(file.as_fd())?;
        Ok(PipeEnd {
            io: PollEvented::new(FdSource(file), resource, at)?,
        })
    }
}

macro_rules! pipe_type {
    ($(#[$doc:meta])* $name:ident, $std:ty) => {
        $(#[$doc])*
        pub struct $name {
            pipe: PipeEnd,
        }

        impl $name {
            /// The pipe of a child spawned at `at`.
            pub(crate) fn new(std: $std, at: &'static Location<'static>) -> io::Result<$name> {
                Ok($name {
                    pipe: PipeEnd::new(std, Resource::$name, at)?,
                })
            }
        }

        impl AsFd for $name {
            fn as_fd(&self) -> BorrowedFd<'_> {
                self.pipe.io.source().0.as_fd()
            }
        }

        impl AsRawFd for $name {
            fn as_raw_fd(&self) -> RawFd {
                self.pipe.io.source().as_raw_fd()
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("fd", &self.as_raw_fd())
                    .finish()
            }
        }
    };
}

pipe_type!(
    /// The child's stdin, when it was piped: a futures-io [`AsyncWrite`].
    /// Dropping (or closing) it closes the pipe, which the child reads as
    /// the end of its input.
    ChildStdin,
    std::process::ChildStdin
);
pipe_type!(
    /// The child's stdout, when it was piped: a futures-io [`AsyncRead`].
    ChildStdout,
    std::process::ChildStdout
);
pipe_type!(
    /// The child's stderr, when it was piped: a futures-io [`AsyncRead`].
    ChildStderr,
    std::process::ChildStderr
);

macro_rules! impl_read {
    ($($name:ty),*) => {$(
        impl AsyncRead for $name {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut [u8],
            ) -> Poll<io::Result<usize>> {
                self.pipe.io.poll_read(cx, buf)
            }

            fn poll_read_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &mut [IoSliceMut<'_>],
            ) -> Poll<io::Result<usize>> {
                self.pipe.io.poll_read_vectored(cx, bufs)
            }
        }
    )*};
}

impl_read!(ChildStdout, ChildStderr);

#[cfg(feature = "tokio-io")]
crate::io::tokio_io::impl_tokio_io!(read: [] ChildStdout, [] ChildStderr);
#[cfg(feature = "tokio-io")]
crate::io::tokio_io::impl_tokio_io!(write: [] ChildStdin);

impl AsyncWrite for ChildStdin {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.pipe.io.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.pipe.io.poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Writes go straight to the pipe: nothing is buffered here.
        Poll::Ready(Ok(()))
    }

    /// Closing a pipe's write end is dropping it: `poll_close` makes no
    /// more writes possible only once the `ChildStdin` is dropped (take it
    /// out of [`Child::stdin`](super::Child::stdin) and drop it to send
    /// end-of-input).
    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
