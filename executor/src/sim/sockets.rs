//! The simulated sockets that `pool::net`'s `TcpListener`, `TcpStream` and
//! `UdpSocket` hold in a seeded pool with a network: a handle on one
//! listener, stream side or socket of the pool's `SimNet`.
//!
//! # Invariants
//!
//! * A socket is on the host of the task that made it, wherever it is
//!   moved or awaited (its `host`, fixed at creation).
//! * Every operation that completes (a connect, an accept, a read, a write,
//!   a send, a receive) is a step of the seeded schedule of its own: it
//!   first returns `Pending` once, having woken its task, so that the seed
//!   picks what runs between two operations as it picks what runs between
//!   two polls (`Step`).
//! * Dropping a handle is its close: a listener's port is free and its
//!   unaccepted connections reset; a stream sends its FIN, or resets its
//!   peer if it leaves data unread; a UDP socket's port is free.

use super::network::{check_bind, host_named, source_ip, SimNet};
use super::tcp::os_error;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// An operation's step: `Pending` once (its task woken), then through.
#[derive(Debug, Default)]
struct Step(AtomicBool);

impl Step {
    fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        // Relaxed: a seeded pool polls on one thread; the flag only
        // alternates.
        if self.0.swap(false, Ordering::Relaxed) {
            return Poll::Ready(());
        }
        self.0.store(true, Ordering::Relaxed);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Poll `step` first, then `op`.
macro_rules! stepped {
    ($step:expr, $cx:expr, $op:expr) => {{
        std::task::ready!($step.poll($cx));
        $op
    }};
}

/// A simulated TCP listener.
pub(crate) struct SimListener {
    net: Arc<SimNet>,
    id: u64,
    step: Step,
}

impl SimListener {
    /// Listen on `addr` from `host`.
    pub(crate) fn bind(
        net: Arc<SimNet>,
        host: IpAddr,
        addr: SocketAddr,
    ) -> io::Result<SimListener> {
        check_bind(host, addr.ip())?;
        let (id, _) = net.with(|s, _, _| s.tcp.bind(host, addr))?;
        Ok(SimListener {
            net,
            id,
            step: Step::default(),
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.net.lock().tcp.listener_addr(self.id)
    }

    pub(crate) fn poll_accept(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<(SimStream, SocketAddr)>> {
        stepped!(self.step, cx, {
            let accepted = self.net.with(|s, _, _| s.tcp.poll_accept(self.id, cx));
            accepted.map_ok(|(conn, peer)| {
                (
                    SimStream {
                        net: Arc::clone(&self.net),
                        conn,
                        side: 1,
                        read_step: Step::default(),
                        write_step: Step::default(),
                    },
                    peer,
                )
            })
        })
    }
}

impl Drop for SimListener {
    fn drop(&mut self) {
        self.net
            .with(|s, now, _| s.tcp.drop_listener(self.id, &mut s.wire, now));
    }
}

/// One end of a simulated TCP connection.
pub(crate) struct SimStream {
    net: Arc<SimNet>,
    conn: u64,
    side: usize,
    read_step: Step,
    write_step: Step,
}

impl SimStream {
    /// Connect from `host` to `addr`: the stream, its handshake under way
    /// (`poll_connected`).
    pub(crate) fn connect(
        net: Arc<SimNet>,
        host: IpAddr,
        addr: SocketAddr,
    ) -> io::Result<SimStream> {
        if addr.port() == 0 {
            return Err(os_error(libc::ECONNREFUSED));
        }
        // Linux connects to the unspecified address as to a loopback one.
        let addr = match addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => {
                SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port())
            }
            IpAddr::V6(ip) if ip.is_unspecified() => {
                SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port())
            }
            _ => addr,
        };
        let target = host_named(host, addr.ip());
        let from_ip = source_ip(host, addr.ip());
        let conn =
            net.with(|s, now, _| s.tcp.connect(host, from_ip, target, addr, &mut s.wire, now))?;
        Ok(SimStream {
            net,
            conn,
            side: 0,
            read_step: Step::default(),
            write_step: Step::default(),
        })
    }

    /// Is the connect done (or refused)?
    pub(crate) fn poll_connected(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        stepped!(self.write_step, cx, {
            self.net.with(|s, _, _| s.tcp.poll_connected(self.conn, cx))
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.net.lock().tcp.addrs(self.conn, self.side).0
    }

    pub(crate) fn peer_addr(&self) -> SocketAddr {
        self.net.lock().tcp.addrs(self.conn, self.side).1
    }

    pub(crate) fn poll_read(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        stepped!(self.read_step, cx, {
            self.net
                .with(|s, _, wakers| s.tcp.poll_read(self.conn, self.side, cx, buf, wakers))
        })
    }

    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        stepped!(self.write_step, cx, {
            self.net.with(|s, now, _| {
                s.tcp
                    .poll_write(self.conn, self.side, cx, buf, &mut s.wire, now)
            })
        })
    }

    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.net
            .with(|s, now, _| s.tcp.shutdown(self.conn, self.side, how, &mut s.wire, now))
    }
}

impl Drop for SimStream {
    fn drop(&mut self) {
        self.net
            .with(|s, now, _| s.tcp.drop_side(self.conn, self.side, &mut s.wire, now));
    }
}

/// A simulated UDP socket.
pub(crate) struct SimUdpSocket {
    net: Arc<SimNet>,
    host: IpAddr,
    id: u64,
    send_step: Step,
    recv_step: Step,
}

impl SimUdpSocket {
    /// Bind `addr` on `host`.
    pub(crate) fn bind(
        net: Arc<SimNet>,
        host: IpAddr,
        addr: SocketAddr,
    ) -> io::Result<SimUdpSocket> {
        check_bind(host, addr.ip())?;
        let (id, _) = net.with(|s, _, _| s.udp.bind(host, addr))?;
        Ok(SimUdpSocket {
            net,
            host,
            id,
            send_step: Step::default(),
            recv_step: Step::default(),
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.net.lock().udp.local_addr(self.id)
    }

    pub(crate) fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.net.lock().udp.peer_addr(self.id)
    }

    pub(crate) fn connect(&self, peer: SocketAddr) -> io::Result<()> {
        self.net.lock().udp.connect(self.id, peer)
    }

    pub(crate) fn poll_send_to(
        &self,
        cx: &mut Context<'_>,
        data: &[u8],
        to: SocketAddr,
    ) -> Poll<io::Result<usize>> {
        stepped!(self.send_step, cx, {
            let target = host_named(self.host, to.ip());
            let from_ip = source_ip(self.host, to.ip());
            Poll::Ready(self.net.with(|s, now, _| {
                s.udp
                    .send_to(self.id, data, from_ip, target, to, &mut s.wire, now)
            }))
        })
    }

    pub(crate) fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        stepped!(self.recv_step, cx, {
            self.net
                .with(|s, _, _| s.udp.poll_recv_from(self.id, cx, buf))
        })
    }
}

impl Drop for SimUdpSocket {
    fn drop(&mut self) {
        self.net.with(|s, _, _| s.udp.drop_socket(self.id));
    }
}
