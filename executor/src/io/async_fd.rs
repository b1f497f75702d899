//! `Async<T>`: any file descriptor on the current pool's I/O driver.
//!
//! It is `PollEvented` (the one readiness path of every socket, pipe and
//! descriptor of the crate) around the descriptor, made public: a
//! descriptor `T` is registered as it is, through `mio`'s `SourceFd`.
//!
//! # Invariants
//!
//! * The descriptor is non-blocking from `new` on (`O_NONBLOCK`), and
//!   registered until `into_inner` or drop, which deregister it before `T`
//!   is handed back or closed.
//! * `read_with` / `write_with` clear the readiness they ran under only on
//!   `WouldBlock`, never on a short read: for a descriptor of unknown kind
//!   (a netlink socket, an eventfd) a short read does not prove it empty.

use super::poll_evented::PollEvented;
use super::scheduled_io::Direction;
use crate::task::waits::Resource;
use futures::io::{AsyncRead, AsyncWrite};
use std::fmt;
use std::future::poll_fn;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A descriptor registered with a driver as it is.
#[derive(Debug)]
pub(crate) struct FdSource<T>(pub(crate) T);

impl<T: AsFd> mio::event::Source for FdSource<T> {
    fn register(
        &mut self,
        mio_registry: &mio::Registry,
        token: mio::Token,
        interests: mio::Interest,
    ) -> io::Result<()> {
        mio::unix::SourceFd(&self.as_raw_fd()).register(mio_registry, token, interests)
    }

    fn reregister(
        &mut self,
        mio_registry: &mio::Registry,
        token: mio::Token,
        interests: mio::Interest,
    ) -> io::Result<()> {
        mio::unix::SourceFd(&self.as_raw_fd()).reregister(mio_registry, token, interests)
    }

    fn deregister(&mut self, mio_registry: &mio::Registry) -> io::Result<()> {
        mio::unix::SourceFd(&self.as_raw_fd()).deregister(mio_registry)
    }
}

impl<T: AsFd> AsRawFd for FdSource<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// Reading through the descriptor, where the type itself reads through a
/// shared reference (`&File`, `&UnixStream`): what lets pipes use
/// `PollEvented`'s stream transfers.
impl<T> Read for &FdSource<T>
where
    for<'a> &'a T: Read,
{
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.0).read(buf)
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        (&self.0).read_vectored(bufs)
    }
}

/// Writing through the descriptor: see the `Read` impl.
impl<T> Write for &FdSource<T>
where
    for<'a> &'a T: Write,
{
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&self.0).write(buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        (&self.0).write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&self.0).flush()
    }
}

/// Make `fd` non-blocking (`O_NONBLOCK`), keeping its other status flags.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: `F_GETFL` takes no argument and only reads the descriptor's
    // flags; `fd` is open for the length of the borrow.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: `F_SETFL` with an int of status flags changes only this
        // descriptor's status flags.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Any non-blocking file descriptor on the current pool's I/O driver: a
/// pipe, an eventfd, inotify, a netlink socket, a socket of a crate that
/// `pool::net` does not wrap.
///
/// `Async::new` makes the descriptor non-blocking and registers it with the
/// driver of the current pool (the same rule as [`spawn`](crate::spawn)).
/// [`read_with`](Async::read_with) and [`write_with`](Async::write_with) run
/// an operation until it does not return `WouldBlock`, waiting for
/// readiness between tries; [`readable`](Async::readable) and
/// [`writable`](Async::writable) wait for readiness alone. Where `&T`
/// implements [`Read`] or [`Write`], `Async<T>` is a futures-io
/// [`AsyncRead`] or [`AsyncWrite`]. The pool's own sockets and process pipes
/// are built on the same piece.
///
/// Do not use it for regular files: epoll refuses them (`new` fails with
/// the OS's `EPERM`), and they are always ready anyway.
///
/// If the pool is dropped, every wait fails with an `io::Error`.
///
/// # Examples
///
/// ```
/// use futures::{AsyncReadExt, AsyncWriteExt};
/// use pool::io::Async;
/// use std::os::unix::net::UnixStream;
///
/// let pool = pool::Pool::new().unwrap();
/// pool.block_on(async {
///     let (a, b) = UnixStream::pair().unwrap();
///     let (mut a, mut b) = (Async::new(a).unwrap(), Async::new(b).unwrap());
///     a.write_all(b"ping").await.unwrap();
///     let mut buf = [0; 4];
///     b.read_exact(&mut buf).await.unwrap();
///     assert_eq!(&buf, b"ping");
/// });
/// ```
pub struct Async<T: AsFd> {
    io: PollEvented<FdSource<T>>,
}

impl<T: AsFd> Async<T> {
    /// Make `inner` non-blocking and register it with the current pool's
    /// driver.
    ///
    /// # Errors
    ///
    /// The OS's error: `EPERM` for a descriptor epoll cannot watch (a
    /// regular file), or an error of the driver (its pool was dropped).
    #[track_caller]
    pub fn new(inner: T) -> io::Result<Async<T>> {
        set_nonblocking(inner.as_fd())?;
        Ok(Async {
            io: PollEvented::new(
                FdSource(inner),
                Resource::Fd,
                std::panic::Location::caller(),
            )?,
        })
    }

    /// The descriptor.
    pub fn get_ref(&self) -> &T {
        &self.io.source().0
    }

    /// Deregister the descriptor and give it back (still non-blocking).
    ///
    /// # Errors
    ///
    /// None today; the `Result` leaves room for a descriptor that cannot be
    /// deregistered cleanly.
    pub fn into_inner(self) -> io::Result<T> {
        Ok(self.io.into_inner().0)
    }

    /// Wait until the descriptor is readable (or hung up, or in error: the
    /// next read reports it).
    ///
    /// # Errors
    ///
    /// When the pool that drives it was dropped.
    pub async fn readable(&self) -> io::Result<()> {
        poll_fn(|cx| self.io.poll_ready(cx, Direction::Read)).await
    }

    /// Wait until the descriptor is writable (or in error).
    ///
    /// # Errors
    ///
    /// When the pool that drives it was dropped.
    pub async fn writable(&self) -> io::Result<()> {
        poll_fn(|cx| self.io.poll_ready(cx, Direction::Write)).await
    }

    /// Run `op` until it does not return `WouldBlock`, waiting until the
    /// descriptor is readable before each retry.
    ///
    /// # Errors
    ///
    /// `op`'s error, or the pool's shutdown.
    ///
    /// # Examples
    ///
    /// ```
    /// use pool::io::Async;
    /// use std::io::Read;
    /// use std::os::unix::net::UnixStream;
    ///
    /// # pool::block_on(async {
    /// let (a, b) = UnixStream::pair().unwrap();
    /// let b = Async::new(b).unwrap();
    /// std::io::Write::write_all(&mut &a, b"x").unwrap();
    /// let mut buf = [0; 1];
    /// let n = b.read_with(|s| (&*s).read(&mut buf)).await.unwrap();
    /// assert_eq!(n, 1);
    /// # });
    /// ```
    pub async fn read_with<R>(&self, mut op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        poll_fn(|cx| self.io.poll_io(cx, Direction::Read, |s| op(&s.0))).await
    }

    /// Run `op` until it does not return `WouldBlock`, waiting until the
    /// descriptor is writable before each retry.
    ///
    /// # Errors
    ///
    /// `op`'s error, or the pool's shutdown.
    pub async fn write_with<R>(&self, mut op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        poll_fn(|cx| self.io.poll_io(cx, Direction::Write, |s| op(&s.0))).await
    }
}

impl<T: AsFd> AsFd for Async<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.get_ref().as_fd()
    }
}

impl<T: AsFd> AsRawFd for Async<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.io.source().as_raw_fd()
    }
}

impl<T: AsFd + fmt::Debug> fmt::Debug for Async<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Async").field(self.get_ref()).finish()
    }
}

/// Reading through `&T`, for `Async<T>` and `&Async<T>` alike.
macro_rules! impl_async_read_write {
    ($($ty:ty),*) => {$(
        impl<T: AsFd> AsyncRead for $ty
        where
            for<'a> &'a T: Read,
        {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut [u8],
            ) -> Poll<io::Result<usize>> {
                self.io.poll_io(cx, Direction::Read, |s| (&s.0).read(buf))
            }

            fn poll_read_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &mut [IoSliceMut<'_>],
            ) -> Poll<io::Result<usize>> {
                self.io
                    .poll_io(cx, Direction::Read, |s| (&s.0).read_vectored(bufs))
            }
        }

        impl<T: AsFd> AsyncWrite for $ty
        where
            for<'a> &'a T: Write,
        {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                self.io.poll_io(cx, Direction::Write, |s| (&s.0).write(buf))
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                self.io
                    .poll_io(cx, Direction::Write, |s| (&s.0).write_vectored(bufs))
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.io.poll_io(cx, Direction::Write, |s| (&s.0).flush())
            }

            fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.poll_flush(cx)
            }
        }
    )*};
}

impl_async_read_write!(Async<T>, &Async<T>);

#[cfg(feature = "tokio-io")]
crate::io::tokio_io::impl_tokio_io!(read: [T: AsFd] Async<T>, ['a, T: AsFd] &'a Async<T>);
#[cfg(feature = "tokio-io")]
crate::io::tokio_io::impl_tokio_io!(write: [T: AsFd] Async<T>, ['a, T: AsFd] &'a Async<T>);
