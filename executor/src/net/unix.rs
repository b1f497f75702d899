//! `UnixListener`, `UnixStream` and `UnixDatagram`: Unix domain sockets on
//! the current pool's driver, through the same readiness path as TCP.

use super::spare_fd::SpareFd;
use crate::io::poll_evented::PollEvented;
use crate::io::scheduled_io::Direction;
use crate::task::waits::Resource;
use crate::time::sleep;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::os::unix::net::{self, SocketAddr};
use std::panic::Location;
use std::path::Path;
use std::task::{ready, Context, Poll};
use std::time::Duration;

/// The longest path a Unix socket address holds on Linux (`sun_path` is 108
/// bytes with its terminating NUL).
const MAX_PATH: usize = 107;

/// How long a `connect` waits in all for a listener whose backlog is full
/// (it retries after 1, 2, 4, ... ms), before it gives up.
const CONNECT_BACKLOG_WAIT: Duration = Duration::from_secs(2);

/// An error of `what` on `path` that keeps the OS's kind and says what to
/// change where the OS's message does not.
fn path_error(what: &str, path: &Path, e: io::Error) -> io::Error {
    let len = path.as_os_str().len();
    let hint = match e.kind() {
        io::ErrorKind::AddrInUse => {
            " (a file is at that path, perhaps the socket of an earlier run: remove it, \
             or bind elsewhere)"
                .to_string()
        }
        io::ErrorKind::InvalidInput if len > MAX_PATH => {
            format!(" (the path is {len} bytes; a Unix socket path holds at most {MAX_PATH})")
        }
        io::ErrorKind::NotFound => " (no socket is listening at that path)".to_string(),
        _ => String::new(),
    };
    io::Error::new(e.kind(), format!("{what} {}: {e}{hint}", path.display()))
}

/// A Unix stream socket server, listening for connections.
///
/// Dropping the listener closes the socket but leaves the file at its path
/// (as the OS does); remove it, or bind fails with `AddrInUse` next time.
///
/// # Examples
///
/// ```
/// use futures::{AsyncReadExt, AsyncWriteExt};
/// use pool::net::{UnixListener, UnixStream};
///
/// let dir = std::env::temp_dir().join(format!("pool-doc-unix-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("echo.sock");
/// # let _ = std::fs::remove_file(&path);
/// pool::block_on(async {
///     let listener = UnixListener::bind(&path).unwrap();
///     let server = pool::spawn(async move {
///         let (mut conn, _) = listener.accept().await.unwrap();
///         let mut buf = [0; 4];
///         conn.read_exact(&mut buf).await.unwrap();
///         conn.write_all(&buf).await.unwrap();
///     });
///     let mut client = UnixStream::connect(&path).await.unwrap();
///     client.write_all(b"ping").await.unwrap();
///     let mut back = [0; 4];
///     client.read_exact(&mut back).await.unwrap();
///     assert_eq!(&back, b"ping");
///     server.await.unwrap();
/// });
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub struct UnixListener {
    io: PollEvented<mio::net::UnixListener>,
    /// Its spare descriptor for an accept at `EMFILE`: see `spare_fd.rs`.
    spare: SpareFd,
}

impl UnixListener {
    /// Binds to `path` and listens.
    ///
    /// # Errors
    ///
    /// `AddrInUse` if a file is at `path` already (a socket left by an
    /// earlier run, say: remove it first), `InvalidInput` if the path is
    /// longer than a Unix socket address holds (107 bytes), or the OS's
    /// error (a missing directory, no permission). Each says which path.
    #[track_caller]
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        let path = path.as_ref();
        // A seeded pool refuses it before the socket's file is made.
        crate::context::current::refuse_if_seeded("a Unix socket (pool::net)")?;
        let listener =
            mio::net::UnixListener::bind(path).map_err(|e| path_error("bind", path, e))?;
        UnixListener::from_mio(listener, Location::caller())
    }

    fn from_mio(
        listener: mio::net::UnixListener,
        at: &'static Location<'static>,
    ) -> io::Result<UnixListener> {
        Ok(UnixListener {
            io: PollEvented::new(listener, Resource::UnixListener, at)?,
            spare: SpareFd::open(),
        })
    }

    /// Accepts a new connection.
    ///
    /// # Errors
    ///
    /// The OS's error. Out of file descriptors (`EMFILE`, `ENFILE`), as
    /// [`TcpListener::accept`](crate::net::TcpListener::accept): the
    /// connection at the head of the backlog is answered with a reset
    /// through the listener's spare descriptor, the error counted in
    /// [`Metrics::accept_errors`](crate::Metrics::accept_errors) and
    /// returned; the rest stay queued.
    #[track_caller]
    pub fn accept(&self) -> impl Future<Output = io::Result<(UnixStream, SocketAddr)>> + '_ {
        let at = Location::caller();
        poll_fn(move |cx| self.poll_accept_at(cx, at))
    }

    /// Polls for a new connection (see [`accept`](UnixListener::accept)).
    #[track_caller]
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(UnixStream, SocketAddr)>> {
        self.poll_accept_at(cx, Location::caller())
    }

    /// `poll_accept`, the connection's stream made at `at`.
    pub(crate) fn poll_accept_at(
        &self,
        cx: &mut Context<'_>,
        at: &'static Location<'static>,
    ) -> Poll<io::Result<(UnixStream, SocketAddr)>> {
        let (stream, addr) = ready!(self.io.poll_io(cx, Direction::Read, |l| {
            self.spare.on_accept(l.accept(), l.as_raw_fd(), || {
                self.io.driver().count_accept_error()
            })
        }))?;
        Poll::Ready(UnixStream::from_mio(stream, at).map(|s| (s, addr)))
    }

    /// Would an accept at `EMFILE` answer a pending connection (its spare
    /// descriptor is held)?
    #[cfg(feature = "hyper")]
    pub(crate) fn answers_at_emfile(&self) -> bool {
        self.spare.is_held()
    }

    /// The address this listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }
}

impl TryFrom<net::UnixListener> for UnixListener {
    type Error = io::Error;

    /// Registers a std listener with the current pool (it is made
    /// non-blocking).
    #[track_caller]
    fn try_from(listener: net::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(true)?;
        UnixListener::from_mio(
            mio::net::UnixListener::from_std(listener),
            Location::caller(),
        )
    }
}

impl fmt::Debug for UnixListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixListener")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

/// A Unix stream connection: [`AsyncRead`](futures::io::AsyncRead) +
/// [`AsyncWrite`](futures::io::AsyncWrite), also through
/// `&UnixStream`.
///
/// # Examples
///
/// ```
/// use futures::{AsyncReadExt, AsyncWriteExt};
/// # pool::block_on(async {
/// let (mut a, mut b) = pool::net::UnixStream::pair().unwrap();
/// a.write_all(b"hi").await.unwrap();
/// let mut buf = [0; 2];
/// b.read_exact(&mut buf).await.unwrap();
/// assert_eq!(&buf, b"hi");
/// # });
/// ```
pub struct UnixStream {
    io: PollEvented<mio::net::UnixStream>,
}

impl UnixStream {
    /// Connects to the socket at `path`.
    ///
    /// A listener whose backlog is full refuses a non-blocking connect for
    /// the moment; `connect` then tries again after 1, 2, 4, ... ms, for up
    /// to two seconds, before it returns that error.
    ///
    /// # Errors
    ///
    /// `NotFound` if nothing is at `path`, `ConnectionRefused` if the file
    /// is not a listening socket, `InvalidInput` for a path too long (107
    /// bytes at most), or the OS's error. Each says which path.
    #[track_caller]
    pub fn connect(path: impl AsRef<Path>) -> impl Future<Output = io::Result<UnixStream>> {
        let at = Location::caller();
        UnixStream::connect_at(path, at)
    }

    async fn connect_at(
        path: impl AsRef<Path>,
        at: &'static Location<'static>,
    ) -> io::Result<UnixStream> {
        let path = path.as_ref();
        let mut backoff = Duration::from_millis(1);
        let mut waited = Duration::ZERO;
        let stream = loop {
            match mio::net::UnixStream::connect(path) {
                Ok(stream) => break UnixStream::from_mio(stream, at)?,
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock && waited < CONNECT_BACKLOG_WAIT =>
                {
                    sleep(backoff).await;
                    waited += backoff;
                    backoff *= 2;
                }
                Err(e) => return Err(path_error("connect to", path, e)),
            }
        };
        // A connect that did not complete at once finishes when the socket
        // becomes writable.
        poll_fn(|cx| stream.io.poll_io(cx, Direction::Write, connected))
            .await
            .map_err(|e| path_error("connect to", path, e))?;
        Ok(stream)
    }

    /// A pair of connected streams.
    ///
    /// # Errors
    ///
    /// The OS's error (out of descriptors), or the current pool's driver's.
    #[track_caller]
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let at = Location::caller();
        let (a, b) = mio::net::UnixStream::pair()?;
        Ok((UnixStream::from_mio(a, at)?, UnixStream::from_mio(b, at)?))
    }

    fn from_mio(
        stream: mio::net::UnixStream,
        at: &'static Location<'static>,
    ) -> io::Result<UnixStream> {
        Ok(UnixStream {
            io: PollEvented::new(stream, Resource::UnixStream, at)?,
        })
    }

    /// The address of the peer.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().peer_addr()
    }

    /// The address of this end.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }

    /// Shuts down the read half, the write half, or both.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.source().shutdown(how)
    }

    /// `poll_close`'s shutdown of the writing half.
    fn close_write_half(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}

/// A non-blocking connect is done once the socket has no pending error.
fn connected(stream: &mio::net::UnixStream) -> io::Result<()> {
    match stream.take_error()? {
        Some(e) => Err(e),
        None => match stream.peer_addr() {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => {
                Err(io::ErrorKind::WouldBlock.into())
            }
            Err(e) => Err(e),
        },
    }
}

impl TryFrom<net::UnixStream> for UnixStream {
    type Error = io::Error;

    /// Registers a connected std stream with the current pool (it is made
    /// non-blocking).
    #[track_caller]
    fn try_from(stream: net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(true)?;
        UnixStream::from_mio(mio::net::UnixStream::from_std(stream), Location::caller())
    }
}

impl fmt::Debug for UnixStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixStream")
            .field("local_addr", &self.local_addr().ok())
            .field("peer_addr", &self.peer_addr().ok())
            .finish()
    }
}

impl_stream_io!(UnixStream, &UnixStream);

#[cfg(feature = "tokio-io")]
crate::io::tokio_io::impl_tokio_io!(read: [] UnixStream, ['a] &'a UnixStream);
#[cfg(feature = "tokio-io")]
crate::io::tokio_io::impl_tokio_io!(write: [] UnixStream, ['a] &'a UnixStream);

/// A Unix datagram socket.
///
/// # Examples
///
/// ```
/// # pool::block_on(async {
/// let (a, b) = pool::net::UnixDatagram::pair().unwrap();
/// a.send(b"one").await.unwrap();
/// let mut buf = [0; 8];
/// let n = b.recv(&mut buf).await.unwrap();
/// assert_eq!(&buf[..n], b"one");
/// # });
/// ```
pub struct UnixDatagram {
    io: PollEvented<mio::net::UnixDatagram>,
}

impl UnixDatagram {
    /// A datagram socket bound to `path`.
    ///
    /// # Errors
    ///
    /// As [`UnixListener::bind`].
    #[track_caller]
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixDatagram> {
        let path = path.as_ref();
        crate::context::current::refuse_if_seeded("a Unix socket (pool::net)")?;
        let socket = mio::net::UnixDatagram::bind(path).map_err(|e| path_error("bind", path, e))?;
        UnixDatagram::from_mio(socket, Location::caller())
    }

    /// A datagram socket bound to no path (it can send, and receive replies
    /// only from a peer it `connect`ed to).
    ///
    /// # Errors
    ///
    /// The OS's error, or the current pool's driver's.
    #[track_caller]
    pub fn unbound() -> io::Result<UnixDatagram> {
        UnixDatagram::from_mio(mio::net::UnixDatagram::unbound()?, Location::caller())
    }

    /// A pair of connected datagram sockets.
    ///
    /// # Errors
    ///
    /// The OS's error, or the current pool's driver's.
    #[track_caller]
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let at = Location::caller();
        let (a, b) = mio::net::UnixDatagram::pair()?;
        Ok((
            UnixDatagram::from_mio(a, at)?,
            UnixDatagram::from_mio(b, at)?,
        ))
    }

    fn from_mio(
        socket: mio::net::UnixDatagram,
        at: &'static Location<'static>,
    ) -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            io: PollEvented::new(socket, Resource::UnixDatagram, at)?,
        })
    }

    /// Sets the peer that `send` sends to and `recv` receives from.
    ///
    /// # Errors
    ///
    /// As [`UnixStream::connect`].
    pub fn connect(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        self.io
            .source()
            .connect(path)
            .map_err(|e| path_error("connect to", path, e))
    }

    /// Sends `buf` to the connected peer, as one datagram.
    ///
    /// # Errors
    ///
    /// The OS's error (not connected, or the datagram is too long).
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| self.io.poll_io(cx, Direction::Write, |s| s.send(buf))).await
    }

    /// Receives one datagram from the connected peer into `buf` (the rest of
    /// a longer datagram is dropped).
    ///
    /// # Errors
    ///
    /// The OS's error, or the pool's shutdown.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.io.poll_io(cx, Direction::Read, |s| s.recv(&mut *buf))).await
    }

    /// Sends `buf` to the socket at `path`, as one datagram.
    ///
    /// # Errors
    ///
    /// `NotFound` if nothing is at `path` (the message says which), or the
    /// OS's error.
    pub async fn send_to(&self, buf: &[u8], path: impl AsRef<Path>) -> io::Result<usize> {
        let path = path.as_ref();
        poll_fn(|cx| {
            self.io
                .poll_io(cx, Direction::Write, |s| s.send_to(buf, path))
        })
        .await
        .map_err(|e| path_error("send to", path, e))
    }

    /// Receives one datagram into `buf`, with its sender's address.
    ///
    /// # Errors
    ///
    /// The OS's error, or the pool's shutdown.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        poll_fn(|cx| {
            self.io
                .poll_io(cx, Direction::Read, |s| s.recv_from(&mut *buf))
        })
        .await
    }

    /// The address this socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }

    /// The address of the connected peer.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().peer_addr()
    }
}

impl TryFrom<net::UnixDatagram> for UnixDatagram {
    type Error = io::Error;

    /// Registers a std datagram socket with the current pool (it is made
    /// non-blocking).
    #[track_caller]
    fn try_from(socket: net::UnixDatagram) -> io::Result<UnixDatagram> {
        socket.set_nonblocking(true)?;
        UnixDatagram::from_mio(mio::net::UnixDatagram::from_std(socket), Location::caller())
    }
}

impl fmt::Debug for UnixDatagram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixDatagram")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

super::fd::impl_as_fd!(UnixListener, UnixStream, UnixDatagram);
