//! `Tcp`: the simulated TCP of a network: listeners with their backlogs,
//! connections with a side per end, and what each segment does when it
//! arrives. The operations of `pool::net::TcpListener` and `TcpStream` on
//! a simulated host land here (through `network.rs`, under its lock).
//!
//! # Invariants
//!
//! * A connection is made by a connect (side 0, the client) and completed
//!   by its SYN meeting a listener (side 1, the server, queued in the
//!   listener's backlog until accepted). Its data, FIN and RST are
//!   reliable flights of the wire, in order per direction (`Conn::orders`).
//! * The bytes a side may still receive are bounded (`WINDOW`): unread
//!   plus in the air. A write past it waits for the reader.
//! * The errors are Linux loopback's: a SYN that meets no listener is
//!   refused (`ECONNREFUSED`); a side dropped with unread data resets its
//!   peer (`ECONNRESET`), and so does a segment arriving at a dropped side;
//!   a read after the peer's FIN returns 0; a write after our own shutdown
//!   is `EPIPE`.
//! * A side that nobody holds and nobody will write to is forgotten with
//!   its connection once both sides are.

use super::ports::Ports;
use super::wire::{Flight, Order, Payload, Wire};
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{IpAddr, Shutdown, SocketAddr};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// The bytes a side may have unread and in the air toward it at once (a
/// socket's receive buffer).
const WINDOW: usize = 256 * 1024;

/// The bytes one write sends at most (one segment of the wire).
const MAX_SEGMENT: usize = 64 * 1024;

/// An error as Linux's loopback gives it (`raw_os_error` included).
pub(crate) fn os_error(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}

/// A listener: where it is bound and what it has not accepted yet.
#[derive(Debug)]
struct Listener {
    host: IpAddr,
    local: SocketAddr,
    /// Connections whose SYN it answered, server side ready.
    backlog: VecDeque<u64>,
    waker: Option<Waker>,
    /// False once its host crashed.
    open: bool,
}

/// How far a connection's handshake got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handshake {
    Connecting,
    Established,
    Refused,
}

/// One end of a connection.
#[derive(Debug)]
struct Side {
    host: IpAddr,
    local: SocketAddr,
    peer: SocketAddr,
    /// Bytes arrived and not read yet.
    recv: VecDeque<u8>,
    /// Bytes in the air toward this side.
    in_air: usize,
    /// The peer's FIN arrived: reads end once `recv` is empty.
    peer_fin: bool,
    /// Reset (an RST arrived, or a host crashed): every operation fails.
    reset: bool,
    shut_read: bool,
    /// Our FIN is sent: writes fail.
    shut_write: bool,
    /// Its handle is gone.
    dropped: bool,
    read_waker: Option<Waker>,
    write_waker: Option<Waker>,
}

impl Side {
    fn new(host: IpAddr, local: SocketAddr, peer: SocketAddr) -> Side {
        Side {
            host,
            local,
            peer,
            recv: VecDeque::new(),
            in_air: 0,
            peer_fin: false,
            reset: false,
            shut_read: false,
            shut_write: false,
            dropped: false,
            read_waker: None,
            write_waker: None,
        }
    }

    fn wake_all(&mut self, wakers: &mut Vec<Waker>) {
        wakers.extend(self.read_waker.take());
        wakers.extend(self.write_waker.take());
    }
}

#[derive(Debug)]
struct Conn {
    handshake: Handshake,
    /// The order of the segments sent toward each side (the SYN's is side
    /// 1's: it precedes whatever the client sends next).
    orders: [Order; 2],
    /// The listener its SYN is for: (host, address connected to).
    target: (IpAddr, SocketAddr),
    /// Side 0, the client's; side 1, the server's once its SYN met a
    /// listener.
    sides: [Option<Side>; 2],
    connect_waker: Option<Waker>,
}

impl Conn {
    fn side(&mut self, side: usize) -> &mut Side {
        self.sides[side].as_mut().expect("a side handed out exists")
    }
}

/// The TCP of one simulated network.
#[derive(Debug, Default)]
pub(crate) struct Tcp {
    ports: Ports,
    listeners: BTreeMap<u64, Listener>,
    conns: BTreeMap<u64, Conn>,
    next_id: u64,
}

impl Tcp {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Listen on `local` (checked to be the host's) on `host`.
    pub(crate) fn bind(
        &mut self,
        host: IpAddr,
        local: SocketAddr,
    ) -> io::Result<(u64, SocketAddr)> {
        let id = self.id();
        let port = self.ports.bind(host, local.ip(), local.port(), id)?;
        let local = SocketAddr::new(local.ip(), port);
        self.listeners.insert(
            id,
            Listener {
                host,
                local,
                backlog: VecDeque::new(),
                waker: None,
                open: true,
            },
        );
        Ok((id, local))
    }

    pub(crate) fn listener_addr(&self, listener: u64) -> SocketAddr {
        self.listeners[&listener].local
    }

    /// The next connection the listener's SYNs made: (connection, its
    /// client's address).
    pub(crate) fn poll_accept(
        &mut self,
        listener: u64,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<(u64, SocketAddr)>> {
        let l = self
            .listeners
            .get_mut(&listener)
            .expect("a listener handed out exists");
        if !l.open {
            return Poll::Ready(Err(os_error(libc::ECONNABORTED)));
        }
        match l.backlog.pop_front() {
            Some(conn) => {
                let peer = self.conns.get_mut(&conn).expect("queued").side(1).peer;
                Poll::Ready(Ok((conn, peer)))
            }
            None => {
                l.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// The listener's handle is gone: its port is free, and the
    /// connections it never accepted are reset.
    pub(crate) fn drop_listener(&mut self, listener: u64, wire: &mut Wire, now: Instant) {
        let Some(l) = self.listeners.remove(&listener) else {
            return;
        };
        self.ports.release(l.host, l.local.port(), listener);
        // Linux resets the connections a closed listener never accepted.
        for conn in l.backlog {
            if let Some(c) = self.conns.get_mut(&conn) {
                c.side(1).dropped = true;
            }
            self.send_rst(conn, 1, wire, now);
            self.forget_if_done(conn);
        }
    }

    /// Connect from `host` (whose address toward the target is `from_ip`)
    /// to `to` on host `target`: side 0 of a new connection, its SYN sent.
    pub(crate) fn connect(
        &mut self,
        host: IpAddr,
        from_ip: IpAddr,
        target: IpAddr,
        to: SocketAddr,
        wire: &mut Wire,
        now: Instant,
    ) -> io::Result<u64> {
        let id = self.id();
        let port = self.ports.bind(host, from_ip, 0, id)?;
        let local = SocketAddr::new(from_ip, port);
        let mut orders = [Order::default(); 2];
        let flight = Flight {
            from: host,
            to: target,
            payload: Payload::Syn { conn: id },
        };
        wire.send(now, flight, Some(&mut orders[1]));
        self.conns.insert(
            id,
            Conn {
                handshake: Handshake::Connecting,
                orders,
                target: (target, to),
                sides: [Some(Side::new(host, local, to)), None],
                connect_waker: None,
            },
        );
        Ok(id)
    }

    /// Has the connect of `conn` been answered?
    pub(crate) fn poll_connected(
        &mut self,
        conn: u64,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        let c = self
            .conns
            .get_mut(&conn)
            .expect("a connection handed out exists");
        if c.side(0).reset {
            return Poll::Ready(Err(os_error(libc::ECONNRESET)));
        }
        match c.handshake {
            Handshake::Established => Poll::Ready(Ok(())),
            Handshake::Refused => Poll::Ready(Err(os_error(libc::ECONNREFUSED))),
            Handshake::Connecting => {
                c.connect_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// (local, peer) addresses of side `side` of `conn`.
    pub(crate) fn addrs(&mut self, conn: u64, side: usize) -> (SocketAddr, SocketAddr) {
        let s = self
            .conns
            .get_mut(&conn)
            .expect("a connection handed out exists")
            .side(side);
        (s.local, s.peer)
    }

    pub(crate) fn poll_read(
        &mut self,
        conn: u64,
        side: usize,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        wakers: &mut Vec<Waker>,
    ) -> Poll<io::Result<usize>> {
        let c = self
            .conns
            .get_mut(&conn)
            .expect("a connection handed out exists");
        let me = c.side(side);
        if me.reset {
            return Poll::Ready(Err(os_error(libc::ECONNRESET)));
        }
        if me.recv.is_empty() {
            if me.peer_fin || me.shut_read || buf.is_empty() {
                return Poll::Ready(Ok(0));
            }
            me.read_waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = buf.len().min(me.recv.len());
        for (dst, src) in buf.iter_mut().zip(me.recv.drain(..n)) {
            *dst = src;
        }
        // Room in our window: the peer's writer may go on.
        if let Some(Some(peer)) = c.sides.get_mut(1 - side) {
            wakers.extend(peer.write_waker.take());
        }
        Poll::Ready(Ok(n))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn poll_write(
        &mut self,
        conn: u64,
        side: usize,
        cx: &mut Context<'_>,
        buf: &[u8],
        wire: &mut Wire,
        now: Instant,
    ) -> Poll<io::Result<usize>> {
        let c = self
            .conns
            .get_mut(&conn)
            .expect("a connection handed out exists");
        let order = &mut c.orders[1 - side];
        let (me, them) = {
            let [a, b] = &mut c.sides;
            if side == 0 {
                (a.as_mut().expect("ours"), b.as_mut())
            } else {
                (b.as_mut().expect("ours"), a.as_mut())
            }
        };
        if me.reset {
            return Poll::Ready(Err(os_error(libc::ECONNRESET)));
        }
        if me.shut_write {
            return Poll::Ready(Err(os_error(libc::EPIPE)));
        }
        let Some(them) = them else {
            return Poll::Ready(Err(os_error(libc::ENOTCONN)));
        };
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let room = WINDOW.saturating_sub(them.recv.len() + them.in_air);
        if room == 0 {
            me.write_waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = buf.len().min(room).min(MAX_SEGMENT);
        them.in_air += n;
        let flight = Flight {
            from: me.host,
            to: them.host,
            payload: Payload::Data {
                conn,
                to: 1 - side,
                bytes: buf[..n].to_vec(),
            },
        };
        wire.send(now, flight, Some(order));
        Poll::Ready(Ok(n))
    }

    pub(crate) fn shutdown(
        &mut self,
        conn: u64,
        side: usize,
        how: Shutdown,
        wire: &mut Wire,
        now: Instant,
    ) -> io::Result<()> {
        let c = self
            .conns
            .get_mut(&conn)
            .expect("a connection handed out exists");
        if c.handshake != Handshake::Established {
            return Err(os_error(libc::ENOTCONN));
        }
        if matches!(how, Shutdown::Read | Shutdown::Both) {
            c.side(side).shut_read = true;
        }
        if matches!(how, Shutdown::Write | Shutdown::Both) {
            self.send_fin(conn, side, wire, now);
        }
        Ok(())
    }

    /// Side `side` sends its FIN, once.
    fn send_fin(&mut self, conn: u64, side: usize, wire: &mut Wire, now: Instant) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let host = c.side(side).host;
        if c.side(side).shut_write || c.side(side).reset {
            return;
        }
        c.side(side).shut_write = true;
        if let Some(Some(them)) = c.sides.get(1 - side) {
            let flight = Flight {
                from: host,
                to: them.host,
                payload: Payload::Fin { conn, to: 1 - side },
            };
            wire.send(now, flight, Some(&mut c.orders[1 - side]));
        }
    }

    /// Side `side` resets the connection toward the other side.
    fn send_rst(&mut self, conn: u64, side: usize, wire: &mut Wire, now: Instant) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let host = c.side(side).host;
        // Toward the other side's host: the target's, for a server side its
        // SYN has not made yet (which the RST then finds missing).
        let to_host = match &c.sides[1 - side] {
            Some(them) => them.host,
            None => c.target.0,
        };
        let flight = Flight {
            from: host,
            to: to_host,
            payload: Payload::Rst { conn, to: 1 - side },
        };
        wire.send(now, flight, Some(&mut c.orders[1 - side]));
    }

    /// Side `side`'s handle is gone: with unread data it resets its peer
    /// (Linux's close), else it sends its FIN.
    pub(crate) fn drop_side(&mut self, conn: u64, side: usize, wire: &mut Wire, now: Instant) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let me = c.side(side);
        me.dropped = true;
        me.read_waker = None;
        me.write_waker = None;
        let (unread, done) = (!me.recv.is_empty(), me.reset || me.shut_write);
        let (host, port) = (me.host, me.local.port());
        if side == 0 {
            c.connect_waker = None;
            self.ports.release(host, port, conn);
        }
        if unread {
            self.send_rst(conn, side, wire, now);
        } else if !done {
            self.send_fin(conn, side, wire, now);
        }
        self.forget_if_done(conn);
    }

    /// Forget `conn` once both its sides are dropped.
    fn forget_if_done(&mut self, conn: u64) {
        let done = self
            .conns
            .get(&conn)
            .is_some_and(|c| c.sides.iter().all(|s| s.as_ref().is_none_or(|s| s.dropped)));
        if done {
            self.conns.remove(&conn);
        }
    }

    /// A stream flight arrived: do what it does, and put the wakers it
    /// satisfies into `wakers`.
    pub(crate) fn arrive(
        &mut self,
        payload: Payload,
        wire: &mut Wire,
        now: Instant,
        wakers: &mut Vec<Waker>,
    ) {
        match payload {
            Payload::Syn { conn } => self.syn(conn, wire, now, wakers),
            Payload::SynAck { conn } | Payload::Refused { conn } => {
                let refused = matches!(payload, Payload::Refused { .. });
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                c.handshake = if refused {
                    Handshake::Refused
                } else {
                    Handshake::Established
                };
                wakers.extend(c.connect_waker.take());
                if !refused && c.side(0).dropped {
                    // The connect was given up: the server learns it.
                    self.send_rst(conn, 0, wire, now);
                }
            }
            Payload::Data { conn, to, bytes } => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                let me = c.side(to);
                me.in_air = me.in_air.saturating_sub(bytes.len());
                if me.reset {
                    return;
                }
                if me.dropped || me.shut_read {
                    // Data for a closed socket: Linux answers with an RST.
                    self.send_rst(conn, to, wire, now);
                    return;
                }
                me.recv.extend(bytes);
                wakers.extend(me.read_waker.take());
            }
            Payload::Fin { conn, to } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    let me = c.side(to);
                    me.peer_fin = true;
                    wakers.extend(me.read_waker.take());
                }
            }
            Payload::Rst { conn, to } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    if let Some(Some(me)) = c.sides.get_mut(to) {
                        me.reset = true;
                        me.recv.clear();
                        me.wake_all(wakers);
                    }
                    if to == 0 && c.handshake == Handshake::Connecting {
                        c.handshake = Handshake::Refused;
                    }
                    wakers.extend(c.connect_waker.take());
                }
                self.forget_if_done(conn);
            }
            Payload::Datagram { .. } => unreachable!("a datagram is UDP's"),
        }
    }

    /// A SYN reached its target host: a listener there queues the server
    /// side and answers; else the client is refused.
    fn syn(&mut self, conn: u64, wire: &mut Wire, now: Instant, wakers: &mut Vec<Waker>) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let (host, to) = c.target;
        let client = c.sides[0].as_ref().expect("the client");
        let (client_host, client_addr) = (client.host, client.local);
        let listener = self
            .ports
            .owner(host, to.ip(), to.port())
            .filter(|id| self.listeners.get(id).is_some_and(|l| l.open));
        let c = self.conns.get_mut(&conn).expect("read above");
        let answer = match listener {
            Some(id) => {
                c.sides[1] = Some(Side::new(host, to, client_addr));
                let l = self.listeners.get_mut(&id).expect("found above");
                l.backlog.push_back(conn);
                wakers.extend(l.waker.take());
                Payload::SynAck { conn }
            }
            None => Payload::Refused { conn },
        };
        let flight = Flight {
            from: host,
            to: client_host,
            payload: answer,
        };
        wire.send(now, flight, Some(&mut c.orders[0]));
    }

    /// The direction's order of a stream flight, for its resend after a
    /// partition.
    pub(crate) fn order_of(&mut self, payload: &Payload) -> Option<&mut Order> {
        let (conn, to) = match *payload {
            Payload::Syn { conn } => (conn, 1),
            Payload::SynAck { conn } | Payload::Refused { conn } => (conn, 0),
            Payload::Data { conn, to, .. }
            | Payload::Fin { conn, to }
            | Payload::Rst { conn, to } => (conn, to),
            Payload::Datagram { .. } => return None,
        };
        self.conns.get_mut(&conn).map(|c| &mut c.orders[to])
    }

    /// Host `host` crashed: its listeners close, every connection with an
    /// end on it is reset at both ends, its ports are free. The ids of
    /// the connections it had, for the wire to forget their flights.
    pub(crate) fn crash(&mut self, host: IpAddr, wakers: &mut Vec<Waker>) -> Vec<u64> {
        for l in self.listeners.values_mut().filter(|l| l.host == host) {
            l.open = false;
            l.backlog.clear();
            wakers.extend(l.waker.take());
        }
        let mut gone = Vec::new();
        for (&id, c) in &mut self.conns {
            let touches = c.target.0 == host || c.sides.iter().flatten().any(|s| s.host == host);
            if !touches {
                continue;
            }
            gone.push(id);
            if c.handshake == Handshake::Connecting {
                c.handshake = Handshake::Refused;
            }
            for s in c.sides.iter_mut().flatten() {
                s.reset = true;
                s.recv.clear();
                s.wake_all(wakers);
            }
            wakers.extend(c.connect_waker.take());
        }
        self.ports.clear(host);
        gone
    }
}
