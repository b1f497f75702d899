//! `UdpSocket`.

use super::addr::each_addr;
use crate::io::poll_evented::PollEvented;
use crate::io::scheduled_io::Direction;
use crate::sim::network::SimNet;
use crate::sim::sockets::SimUdpSocket;
use crate::task::waits::Resource;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::net::{self, SocketAddr, ToSocketAddrs};
use std::panic::Location;

/// A UDP socket. Its methods take `&self`: several tasks may send and
/// receive on one socket (in an `Arc`) at once, and each is woken.
///
/// # Examples
///
/// ```
/// use pool::net::UdpSocket;
/// # pool::block_on(async {
/// let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
/// let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
/// a.send_to(b"hi", b.local_addr().unwrap()).await.unwrap();
/// let mut buf = [0; 8];
/// let (n, from) = b.recv_from(&mut buf).await.unwrap();
/// assert_eq!(&buf[..n], b"hi");
/// assert_eq!(from, a.local_addr().unwrap());
/// # });
/// ```
pub struct UdpSocket {
    io: SocketIo,
}

/// What a `UdpSocket` is: a socket of the OS, on the pool's driver, or a
/// socket of a seeded pool's simulated network (`sim/`).
enum SocketIo {
    Os(PollEvented<mio::net::UdpSocket>),
    Sim(SimUdpSocket),
}

impl SocketIo {
    /// The OS's socket (for `AsRawFd`).
    fn source(&self) -> &mio::net::UdpSocket {
        match self {
            SocketIo::Os(io) => io.source(),
            SocketIo::Sim(_) => super::tcp::no_descriptor(),
        }
    }
}

impl UdpSocket {
    /// Binds to `addr` (the first of its addresses that works).
    ///
    /// # Errors
    ///
    /// The OS's error, for example `AddrInUse`.
    #[track_caller]
    pub fn bind(addr: impl ToSocketAddrs) -> impl Future<Output = io::Result<UdpSocket>> {
        let at = Location::caller();
        each_addr(addr, move |addr| async move {
            if let Some((net, host)) = SimNet::current() {
                return Ok(UdpSocket {
                    io: SocketIo::Sim(SimUdpSocket::bind(net, host, addr)?),
                });
            }
            UdpSocket::from_mio(mio::net::UdpSocket::bind(addr)?, at)
        })
    }

    fn from_mio(
        socket: mio::net::UdpSocket,
        at: &'static Location<'static>,
    ) -> io::Result<UdpSocket> {
        Ok(UdpSocket {
            io: SocketIo::Os(PollEvented::new(socket, Resource::UdpSocket, at)?),
        })
    }

    /// Sends `buf` to `target` (its first address); returns the bytes sent.
    pub async fn send_to(&self, buf: &[u8], target: impl ToSocketAddrs) -> io::Result<usize> {
        let target = super::addr::resolve(&target)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to send to"))?;
        match &self.io {
            SocketIo::Os(io) => {
                poll_fn(|cx| io.poll_io(cx, Direction::Write, |s| s.send_to(buf, target))).await
            }
            SocketIo::Sim(s) => poll_fn(|cx| s.poll_send_to(cx, buf, target)).await,
        }
    }

    /// Receives one datagram into `buf`; returns its length and sender.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        match &self.io {
            SocketIo::Os(io) => {
                poll_fn(|cx| io.poll_io(cx, Direction::Read, |s| s.recv_from(buf))).await
            }
            SocketIo::Sim(s) => poll_fn(|cx| s.poll_recv_from(cx, buf)).await,
        }
    }

    /// Sets the peer for [`send`](UdpSocket::send) and
    /// [`recv`](UdpSocket::recv), and receives only from it.
    pub fn connect(&self, addr: SocketAddr) -> io::Result<()> {
        match &self.io {
            SocketIo::Os(io) => io.source().connect(addr),
            SocketIo::Sim(s) => s.connect(addr),
        }
    }

    /// Sends `buf` to the connected peer.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        match &self.io {
            SocketIo::Os(io) => {
                poll_fn(|cx| io.poll_io(cx, Direction::Write, |s| s.send(buf))).await
            }
            SocketIo::Sim(s) => {
                let peer = s.peer_addr()?;
                poll_fn(|cx| s.poll_send_to(cx, buf, peer)).await
            }
        }
    }

    /// Receives one datagram from the connected peer.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        match &self.io {
            SocketIo::Os(io) => {
                poll_fn(|cx| io.poll_io(cx, Direction::Read, |s| s.recv(buf))).await
            }
            SocketIo::Sim(s) => poll_fn(|cx| s.poll_recv_from(cx, buf))
                .await
                .map(|(n, _)| n),
        }
    }

    /// The local address this socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.io {
            SocketIo::Os(io) => io.source().local_addr(),
            SocketIo::Sim(s) => Ok(s.local_addr()),
        }
    }

    /// The connected peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.io {
            SocketIo::Os(io) => io.source().peer_addr(),
            SocketIo::Sim(s) => s.peer_addr(),
        }
    }
}

impl TryFrom<net::UdpSocket> for UdpSocket {
    type Error = io::Error;

    /// Registers a std socket with the current pool (it is made
    /// non-blocking).
    #[track_caller]
    fn try_from(socket: net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        UdpSocket::from_mio(mio::net::UdpSocket::from_std(socket), Location::caller())
    }
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSocket")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

#[cfg(unix)]
super::fd::impl_as_fd!(UdpSocket);
