//! `TcpListener` and `TcpStream`.

use super::addr::each_addr;
use crate::io::poll_evented::PollEvented;
use crate::io::scheduled_io::Direction;
use crate::task::waits::Resource;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::net::{self, Shutdown, SocketAddr, ToSocketAddrs};
use std::panic::Location;
use std::task::{ready, Context, Poll};

/// A TCP socket server, listening for connections.
///
/// # Examples
///
/// ```
/// # pool::block_on(async {
/// let listener = pool::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// assert!(listener.local_addr().unwrap().port() != 0);
/// # });
/// ```
pub struct TcpListener {
    io: PollEvented<mio::net::TcpListener>,
}

impl TcpListener {
    /// Binds to `addr` (the first of its addresses that works), with
    /// `SO_REUSEADDR`, and listens.
    ///
    /// # Errors
    ///
    /// The OS's error, for example `AddrInUse` for a taken port.
    #[track_caller]
    pub fn bind(addr: impl ToSocketAddrs) -> impl Future<Output = io::Result<TcpListener>> {
        let at = Location::caller();
        each_addr(addr, move |addr| async move {
            TcpListener::from_mio(mio::net::TcpListener::bind(addr)?, at)
        })
    }

    fn from_mio(
        listener: mio::net::TcpListener,
        at: &'static Location<'static>,
    ) -> io::Result<TcpListener> {
        Ok(TcpListener {
            io: PollEvented::new(listener, Resource::TcpListener, at)?,
        })
    }

    /// Accepts a new connection.
    ///
    /// # Errors
    ///
    /// The OS's error. Running out of file descriptors (`EMFILE`) is
    /// returned as it is, and the listener keeps working: the pending
    /// connection stays queued and the next `accept` takes it once
    /// descriptors are free.
    #[track_caller]
    pub fn accept(&self) -> impl Future<Output = io::Result<(TcpStream, SocketAddr)>> + '_ {
        let at = Location::caller();
        poll_fn(move |cx| self.poll_accept_at(cx, at))
    }

    /// Polls for a new connection (see [`accept`](TcpListener::accept)).
    #[track_caller]
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        self.poll_accept_at(cx, Location::caller())
    }

    /// `poll_accept`, the connection's stream made at `at` (what its
    /// task's waits on it say: `TaskInfo::waiting_on`).
    pub(crate) fn poll_accept_at(
        &self,
        cx: &mut Context<'_>,
        at: &'static Location<'static>,
    ) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        let (stream, addr) = ready!(self.io.poll_io(cx, Direction::Read, |l| l.accept()))?;
        Poll::Ready(TcpStream::from_mio(stream, at).map(|s| (s, addr)))
    }

    /// The local address this listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }
}

impl TryFrom<net::TcpListener> for TcpListener {
    type Error = io::Error;

    /// Registers a std listener with the current pool (it is made
    /// non-blocking).
    #[track_caller]
    fn try_from(listener: net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        TcpListener::from_mio(
            mio::net::TcpListener::from_std(listener),
            Location::caller(),
        )
    }
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListener")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

/// A TCP connection: [`AsyncRead`](futures::io::AsyncRead) +
/// [`AsyncWrite`](futures::io::AsyncWrite), also through `&TcpStream`.
///
/// # Examples
///
/// ```
/// use futures::AsyncWriteExt;
/// # pool::block_on(async {
/// let listener = pool::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let mut stream = pool::net::TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
/// stream.set_nodelay(true).unwrap();
/// stream.write_all(b"ping").await.unwrap();
/// # });
/// ```
pub struct TcpStream {
    io: PollEvented<mio::net::TcpStream>,
}

impl TcpStream {
    /// Connects to `addr` (each of its addresses in turn, until one works).
    ///
    /// # Errors
    ///
    /// The OS's error for the last address tried, for example
    /// `ConnectionRefused`.
    #[track_caller]
    pub fn connect(addr: impl ToSocketAddrs) -> impl Future<Output = io::Result<TcpStream>> {
        let at = Location::caller();
        each_addr(addr, move |addr| async move {
            let stream = TcpStream::from_mio(mio::net::TcpStream::connect(addr)?, at)?;
            poll_fn(|cx| stream.io.poll_io(cx, Direction::Write, connected)).await?;
            Ok(stream)
        })
    }

    fn from_mio(
        stream: mio::net::TcpStream,
        at: &'static Location<'static>,
    ) -> io::Result<TcpStream> {
        Ok(TcpStream {
            io: PollEvented::new(stream, Resource::TcpStream, at)?,
        })
    }

    /// The address of the peer.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().peer_addr()
    }

    /// The local address of this end.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }

    /// Sets `TCP_NODELAY` (no Nagle delay for small writes).
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.io.source().set_nodelay(on)
    }

    /// Whether `TCP_NODELAY` is set.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.io.source().nodelay()
    }

    /// Shuts down the read half, the write half, or both.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.source().shutdown(how)
    }
}

/// A non-blocking connect is done once the socket has no pending error and
/// a peer.
fn connected(stream: &mio::net::TcpStream) -> io::Result<()> {
    if let Some(e) = stream.take_error()? {
        return Err(e);
    }
    match stream.peer_addr() {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Err(io::ErrorKind::WouldBlock.into()),
        Err(e) => Err(e),
    }
}

impl TryFrom<net::TcpStream> for TcpStream {
    type Error = io::Error;

    /// Registers a connected std stream with the current pool (it is made
    /// non-blocking).
    #[track_caller]
    fn try_from(stream: net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        TcpStream::from_mio(mio::net::TcpStream::from_std(stream), Location::caller())
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("local_addr", &self.local_addr().ok())
            .field("peer_addr", &self.peer_addr().ok())
            .finish()
    }
}

impl_stream_io!(TcpStream, &TcpStream);

#[cfg(feature = "tokio-io")]
crate::io::tokio_io::impl_tokio_io!(read: [] TcpStream, ['a] &'a TcpStream);
#[cfg(feature = "tokio-io")]
crate::io::tokio_io::impl_tokio_io!(write: [] TcpStream, ['a] &'a TcpStream);

#[cfg(unix)]
super::fd::impl_as_fd!(TcpListener, TcpStream);
