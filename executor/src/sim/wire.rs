//! `Wire`: what crosses a simulated network. Every segment and datagram is
//! a `Flight` from one host to another, in a queue ordered by its arrival
//! time; the wire draws each flight's latency and loss from the network's
//! seeded generator, holds what a partition stops, and lets it go at the
//! repair.
//!
//! # Invariants
//!
//! * Every draw comes from `rng`, in the order the flights are sent, which
//!   is the seeded order of the pool's steps: a seed replays its latencies
//!   and losses.
//! * A reliable flight (a TCP segment) arrives no earlier than the one sent
//!   before it in its direction (`Order`), and is never dropped: a loss
//!   costs it a retransmission's delay, a partition holds it until the
//!   repair. A datagram may arrive before one sent earlier, and is dropped
//!   by a loss or by a partition it meets.
//! * The queue is keyed by (arrival, sequence): flights with one arrival
//!   time are taken in the order they were sent.

use super::settings::Network;
use crate::scheduler::worker::search::XorShift64Star;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// The first retransmission timeout of a lost TCP segment (Linux's
/// `TCP_RTO_MIN`); each further loss of the same segment doubles it.
const RTO: Duration = Duration::from_millis(200);

/// Losses of one segment after which it is not resent again (Linux's
/// `tcp_retries2`): it waits in the queue for ever, as a stalled
/// connection does. Only a loss rate near 1 reaches it.
const MAX_RETRIES: u32 = 15;

/// A flight's payload: what happens when it arrives (`network.rs`).
#[derive(Debug)]
pub(crate) enum Payload {
    /// A connection's SYN reaches the server's host.
    Syn { conn: u64 },
    /// The server's SYN-ACK reaches the client: connected.
    SynAck { conn: u64 },
    /// No listener answered the SYN: the client's connect is refused.
    Refused { conn: u64 },
    /// Bytes of a stream reach side `to` of `conn`.
    Data {
        conn: u64,
        to: usize,
        bytes: Vec<u8>,
    },
    /// The other side shut its writing half: side `to` reads its end.
    Fin { conn: u64, to: usize },
    /// The other side reset the connection.
    Rst { conn: u64, to: usize },
    /// A UDP datagram for the socket bound at `to` (on host `Flight::to`).
    Datagram {
        to: std::net::SocketAddr,
        from: std::net::SocketAddr,
        data: Vec<u8>,
    },
}

/// One segment or datagram between two hosts.
#[derive(Debug)]
pub(crate) struct Flight {
    pub(crate) from: IpAddr,
    pub(crate) to: IpAddr,
    pub(crate) payload: Payload,
}

impl Flight {
    /// Is it a TCP segment: ordered, resent, held by a partition?
    fn reliable(&self) -> bool {
        !matches!(self.payload, Payload::Datagram { .. })
    }
}

/// A direction of a stream: the arrival of the last segment sent in it,
/// which the next one may not precede.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Order(Option<Instant>);

/// The wire of one simulated network.
pub(crate) struct Wire {
    settings: Network,
    rng: XorShift64Star,
    /// Flights in the air, by (arrival, sequence).
    queue: BTreeMap<(Instant, u64), Flight>,
    /// Reliable flights a partition stopped, in the order they arrived at
    /// it.
    held: Vec<Flight>,
    /// The pairs of hosts cut from each other, each as (lower, higher).
    partitions: BTreeSet<(IpAddr, IpAddr)>,
    next_seq: u64,
}

/// A pair of hosts as `partitions` keys it.
fn link(a: IpAddr, b: IpAddr) -> (IpAddr, IpAddr) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

impl Wire {
    pub(crate) fn new(settings: Network, seed: u64) -> Wire {
        Wire {
            settings,
            rng: XorShift64Star::new(seed),
            queue: BTreeMap::new(),
            held: Vec::new(),
            partitions: BTreeSet::new(),
            next_seq: 0,
        }
    }

    /// A draw in `0.0..1.0`.
    fn unit(&self) -> f64 {
        (self.rng.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One crossing's latency, drawn in the settings' range.
    fn latency(&self) -> Duration {
        let (min, max) = self.settings.latency;
        let span = (max - min).as_nanos() as u64;
        let extra = if span == 0 {
            0
        } else {
            self.rng.next() % (span + 1)
        };
        min + Duration::from_nanos(extra)
    }

    /// Is this crossing lost?
    fn lost(&self) -> bool {
        self.settings.loss > 0.0 && self.unit() < self.settings.loss
    }

    /// Send `flight` at `now`; `order` is its direction's, for a stream's
    /// segment. False if it was lost (a datagram): nothing is in the air.
    pub(crate) fn send(&mut self, now: Instant, flight: Flight, order: Option<&mut Order>) -> bool {
        let mut arrival = now + self.latency();
        if flight.reliable() {
            // Each loss is a retransmission timeout later, doubling.
            let mut rto = RTO;
            let mut losses = 0;
            while self.lost() {
                losses += 1;
                if losses > MAX_RETRIES {
                    return true; // never arrives: a stalled stream
                }
                arrival += rto;
                rto *= 2;
            }
            if let Some(order) = order {
                arrival = arrival.max(order.0.unwrap_or(arrival));
                order.0 = Some(arrival);
            }
        } else if self.lost() {
            return false;
        }
        self.push(arrival, flight);
        true
    }

    fn push(&mut self, arrival: Instant, flight: Flight) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queue.insert((arrival, seq), flight);
    }

    /// The arrival of the next flight in the air.
    pub(crate) fn next_arrival(&self) -> Option<Instant> {
        self.queue.keys().next().map(|&(at, _)| at)
    }

    /// The next flight that has arrived by `now` and crossed no partition.
    /// A reliable one that meets a partition is held for the repair; a
    /// datagram that meets one is dropped.
    pub(crate) fn take_due(&mut self, now: Instant) -> Option<Flight> {
        loop {
            let (&key, _) = self.queue.iter().next()?;
            if key.0 > now {
                return None;
            }
            let flight = self.queue.remove(&key).expect("the key was just read");
            if !self.partitions.contains(&link(flight.from, flight.to)) {
                return Some(flight);
            }
            if flight.reliable() {
                self.held.push(flight);
            }
        }
    }

    /// Cut `a` from `b`.
    pub(crate) fn partition(&mut self, a: IpAddr, b: IpAddr) {
        self.partitions.insert(link(a, b));
    }

    /// Join `a` and `b` again, and give back what the partition held
    /// between them, in the order it was held: the caller resends each
    /// flight (`send`), with a fresh latency and its stream's order.
    pub(crate) fn repair(&mut self, a: IpAddr, b: IpAddr) -> Vec<Flight> {
        if !self.partitions.remove(&link(a, b)) {
            return Vec::new();
        }
        let (back, kept) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|f| link(f.from, f.to) == link(a, b));
        self.held = kept;
        back
    }

    /// Forget every flight `gone` says belongs to what a crash took away.
    pub(crate) fn forget(&mut self, mut gone: impl FnMut(&Flight) -> bool) {
        self.queue.retain(|_, f| !gone(f));
        self.held.retain(|f| !gone(f));
    }
}
