//! `TcpListener` and `TcpStream`.

use super::addr::each_addr;
use super::spare_fd::SpareFd;
use crate::io::poll_evented::PollEvented;
use crate::io::scheduled_io::Direction;
use crate::sim::network::SimNet;
use crate::sim::sockets::{SimListener, SimStream};
use crate::task::waits::Resource;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::net::{self, Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::AsRawFd;
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
    io: ListenerIo,
}

/// What a `TcpListener` listens on: a socket of the OS, on the pool's
/// driver, with its spare descriptor (`spare_fd.rs`), or a listener of a
/// seeded pool's simulated network (`sim/`).
enum ListenerIo {
    Os(PollEvented<mio::net::TcpListener>, SpareFd),
    Sim(SimListener),
}

/// The panic of a descriptor asked of a simulated socket.
#[cold]
#[track_caller]
pub(crate) fn no_descriptor() -> ! {
    panic!(
        "pool::net: a socket of a seeded pool's simulated network (pool::sim) has no file \
         descriptor: set its options through its own methods, or build the pool without \
         Builder::network to use the OS's sockets"
    )
}

impl ListenerIo {
    /// The OS's socket (for `AsRawFd`).
    fn source(&self) -> &mio::net::TcpListener {
        match self {
            ListenerIo::Os(io, _) => io.source(),
            ListenerIo::Sim(_) => no_descriptor(),
        }
    }
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
            if let Some((net, host)) = SimNet::current() {
                return Ok(TcpListener {
                    io: ListenerIo::Sim(SimListener::bind(net, host, addr)?),
                });
            }
            TcpListener::from_mio(mio::net::TcpListener::bind(addr)?, at)
        })
    }

    fn from_mio(
        listener: mio::net::TcpListener,
        at: &'static Location<'static>,
    ) -> io::Result<TcpListener> {
        Ok(TcpListener {
            io: ListenerIo::Os(
                PollEvented::new(listener, Resource::TcpListener, at)?,
                SpareFd::open(),
            ),
        })
    }

    /// Accepts a new connection.
    ///
    /// # Errors
    ///
    /// The OS's error. Out of file descriptors (`raw_os_error()` is `EMFILE`
    /// or `ENFILE`), the listener answers the connection at the head of the
    /// backlog with a reset, using the spare descriptor it keeps for this
    /// (so its client does not hang), counts it in
    /// [`Metrics::accept_errors`](crate::Metrics::accept_errors) and returns
    /// the error; the other pending connections stay queued and are accepted
    /// once descriptors free. An accept loop may retry at once: with nothing
    /// pending the next `accept` waits for a connection, it does not spin.
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
        let (io, spare) = match &self.io {
            ListenerIo::Os(io, spare) => (io, spare),
            ListenerIo::Sim(l) => {
                let (stream, addr) = ready!(l.poll_accept(cx))?;
                let io = StreamIo::Sim(stream);
                return Poll::Ready(Ok((TcpStream { io }, addr)));
            }
        };
        let (stream, addr) = ready!(io.poll_io(cx, Direction::Read, |l| {
            spare.on_accept(l.accept(), l.as_raw_fd(), || {
                io.driver().count_accept_error()
            })
        }))?;
        Poll::Ready(TcpStream::from_mio(stream, at).map(|s| (s, addr)))
    }

    /// Would an accept at `EMFILE` answer a pending connection (its spare
    /// descriptor is held; a simulated listener never runs out)?
    #[cfg(feature = "hyper")]
    pub(crate) fn answers_at_emfile(&self) -> bool {
        match &self.io {
            ListenerIo::Os(_, spare) => spare.is_held(),
            ListenerIo::Sim(_) => true,
        }
    }

    /// The local address this listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.io {
            ListenerIo::Os(io, _) => io.source().local_addr(),
            ListenerIo::Sim(l) => Ok(l.local_addr()),
        }
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
    io: StreamIo,
}

/// What a `TcpStream` is: a socket of the OS, on the pool's driver, or an
/// end of a connection of a seeded pool's simulated network (`sim/`).
enum StreamIo {
    Os(PollEvented<mio::net::TcpStream>),
    Sim(SimStream),
}

impl StreamIo {
    /// The OS's socket (for its options and `AsRawFd`).
    fn source(&self) -> &mio::net::TcpStream {
        match self {
            StreamIo::Os(io) => io.source(),
            StreamIo::Sim(_) => no_descriptor(),
        }
    }

    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        match self {
            StreamIo::Os(io) => io.poll_read(cx, buf),
            StreamIo::Sim(s) => s.poll_read(cx, buf),
        }
    }

    fn poll_read_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [io::IoSliceMut<'_>],
    ) -> Poll<io::Result<usize>> {
        match self {
            StreamIo::Os(io) => io.poll_read_vectored(cx, bufs),
            StreamIo::Sim(s) => match bufs.iter_mut().find(|b| !b.is_empty()) {
                Some(buf) => s.poll_read(cx, buf),
                None => s.poll_read(cx, &mut []),
            },
        }
    }

    fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self {
            StreamIo::Os(io) => io.poll_write(cx, buf),
            StreamIo::Sim(s) => s.poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self {
            StreamIo::Os(io) => io.poll_write_vectored(cx, bufs),
            StreamIo::Sim(s) => {
                let buf = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| b);
                s.poll_write(cx, buf)
            }
        }
    }
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
            if let Some((net, host)) = SimNet::current() {
                let stream = SimStream::connect(net, host, addr)?;
                poll_fn(|cx| stream.poll_connected(cx)).await?;
                return Ok(TcpStream {
                    io: StreamIo::Sim(stream),
                });
            }
            let stream = TcpStream::from_mio(mio::net::TcpStream::connect(addr)?, at)?;
            let StreamIo::Os(io) = &stream.io else {
                unreachable!("made from mio")
            };
            poll_fn(|cx| io.poll_io(cx, Direction::Write, connected)).await?;
            Ok(stream)
        })
    }

    fn from_mio(
        stream: mio::net::TcpStream,
        at: &'static Location<'static>,
    ) -> io::Result<TcpStream> {
        Ok(TcpStream {
            io: StreamIo::Os(PollEvented::new(stream, Resource::TcpStream, at)?),
        })
    }

    /// The address of the peer.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.io {
            StreamIo::Os(io) => io.source().peer_addr(),
            StreamIo::Sim(s) => Ok(s.peer_addr()),
        }
    }

    /// The local address of this end.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.io {
            StreamIo::Os(io) => io.source().local_addr(),
            StreamIo::Sim(s) => Ok(s.local_addr()),
        }
    }

    /// Sets `TCP_NODELAY` (no Nagle delay for small writes). On a
    /// simulated stream (`pool::sim`) it is accepted and changes nothing:
    /// every write is a segment of its own.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        match &self.io {
            StreamIo::Os(io) => io.source().set_nodelay(on),
            StreamIo::Sim(_) => Ok(()),
        }
    }

    /// Whether `TCP_NODELAY` is set (always, on a simulated stream).
    pub fn nodelay(&self) -> io::Result<bool> {
        match &self.io {
            StreamIo::Os(io) => io.source().nodelay(),
            StreamIo::Sim(_) => Ok(true),
        }
    }

    /// Shuts down the read half, the write half, or both.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match &self.io {
            StreamIo::Os(io) => io.source().shutdown(how),
            StreamIo::Sim(s) => s.shutdown(how),
        }
    }

    /// `poll_close`'s shutdown of the writing half.
    fn close_write_half(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
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
