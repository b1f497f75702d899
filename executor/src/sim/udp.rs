//! `Udp`: the simulated UDP of a network: sockets bound on hosts, each with
//! its queue of datagrams arrived. The operations of `pool::net::UdpSocket`
//! on a simulated host land here (through `network.rs`, under its lock).
//!
//! # Invariants
//!
//! * A datagram is sent whole or not at all: it is dropped by a loss, by a
//!   partition it meets, by nobody bound where it arrives, or by a full
//!   queue (`QUEUE` datagrams); `send_to` returns its length either way,
//!   as on Linux.
//! * A connected socket takes datagrams from its peer only.

use super::ports::Ports;
use super::tcp::os_error;
use super::wire::{Flight, Payload, Wire};
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// Datagrams a socket queues before it drops the next (the API's "at
/// least 256").
const QUEUE: usize = 256;

/// The largest datagram (IPv4's 65 535 bytes less its headers), as Linux
/// refuses a larger one with `EMSGSIZE`.
const MAX_DATAGRAM: usize = 65_507;

#[derive(Debug)]
struct Socket {
    host: IpAddr,
    local: SocketAddr,
    peer: Option<SocketAddr>,
    queue: VecDeque<(Vec<u8>, SocketAddr)>,
    waker: Option<Waker>,
    /// False once its host crashed.
    open: bool,
}

/// The UDP of one simulated network.
#[derive(Debug, Default)]
pub(crate) struct Udp {
    ports: Ports,
    sockets: BTreeMap<u64, Socket>,
    next_id: u64,
}

impl Udp {
    /// Bind `local` (checked to be the host's) on `host`.
    pub(crate) fn bind(
        &mut self,
        host: IpAddr,
        local: SocketAddr,
    ) -> io::Result<(u64, SocketAddr)> {
        self.next_id += 1;
        let id = self.next_id;
        let port = self.ports.bind(host, local.ip(), local.port(), id)?;
        let local = SocketAddr::new(local.ip(), port);
        self.sockets.insert(
            id,
            Socket {
                host,
                local,
                peer: None,
                queue: VecDeque::new(),
                waker: None,
                open: true,
            },
        );
        Ok((id, local))
    }

    fn socket(&mut self, id: u64) -> io::Result<&mut Socket> {
        let s = self
            .sockets
            .get_mut(&id)
            .expect("a socket handed out exists");
        if s.open {
            Ok(s)
        } else {
            Err(os_error(libc::EBADF))
        }
    }

    pub(crate) fn local_addr(&self, id: u64) -> SocketAddr {
        self.sockets[&id].local
    }

    pub(crate) fn peer_addr(&self, id: u64) -> io::Result<SocketAddr> {
        self.sockets[&id]
            .peer
            .ok_or_else(|| os_error(libc::ENOTCONN))
    }

    /// `connect`: datagrams go to `peer` by default and come from it only.
    pub(crate) fn connect(&mut self, id: u64, peer: SocketAddr) -> io::Result<()> {
        self.socket(id)?.peer = Some(peer);
        Ok(())
    }

    /// Send `data` from socket `id` to `to` on host `target`, through the
    /// address `from_ip` of the sender's host: its length, whether the
    /// wire loses it or not.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_to(
        &mut self,
        id: u64,
        data: &[u8],
        from_ip: IpAddr,
        target: IpAddr,
        to: SocketAddr,
        wire: &mut Wire,
        now: Instant,
    ) -> io::Result<usize> {
        if data.len() > MAX_DATAGRAM {
            return Err(os_error(libc::EMSGSIZE));
        }
        let s = self.socket(id)?;
        let from = SocketAddr::new(
            if s.local.ip().is_unspecified() {
                from_ip
            } else {
                s.local.ip()
            },
            s.local.port(),
        );
        let flight = Flight {
            from: s.host,
            to: target,
            payload: Payload::Datagram {
                to,
                from,
                data: data.to_vec(),
            },
        };
        wire.send(now, flight, None);
        Ok(data.len())
    }

    /// The next datagram of socket `id`, cut to `buf` as UDP cuts it.
    pub(crate) fn poll_recv_from(
        &mut self,
        id: u64,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        let s = match self.socket(id) {
            Ok(s) => s,
            Err(e) => return Poll::Ready(Err(e)),
        };
        match s.queue.pop_front() {
            Some((data, from)) => {
                let n = data.len().min(buf.len());
                buf[..n].copy_from_slice(&data[..n]);
                Poll::Ready(Ok((n, from)))
            }
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// A datagram arrived at host `host`: into the queue of the socket
    /// bound there, if any, and if it has room.
    pub(crate) fn arrive(&mut self, host: IpAddr, payload: Payload, wakers: &mut Vec<Waker>) {
        let Payload::Datagram { to, from, data } = payload else {
            unreachable!("a stream's flight is TCP's");
        };
        let Some(id) = self.ports.owner(host, to.ip(), to.port()) else {
            return;
        };
        let Some(s) = self.sockets.get_mut(&id).filter(|s| s.open) else {
            return;
        };
        if s.peer.is_some_and(|p| p != from) || s.queue.len() >= QUEUE {
            return;
        }
        s.queue.push_back((data, from));
        wakers.extend(s.waker.take());
    }

    /// Socket `id`'s handle is gone: its port is free.
    pub(crate) fn drop_socket(&mut self, id: u64) {
        if let Some(s) = self.sockets.remove(&id) {
            if s.open {
                self.ports.release(s.host, s.local.port(), id);
            }
        }
    }

    /// Host `host` crashed: its sockets close, its ports are free.
    pub(crate) fn crash(&mut self, host: IpAddr, wakers: &mut Vec<Waker>) {
        for s in self.sockets.values_mut().filter(|s| s.host == host) {
            s.open = false;
            s.queue.clear();
            wakers.extend(s.waker.take());
        }
        self.ports.clear(host);
    }
}
