//! `SimNet`: one seeded pool's simulated network: its wire, its TCP and
//! UDP, the hosts' addresses, and the one timer of the pool's store that
//! brings each flight in at its arrival time.
//!
//! # Invariants
//!
//! * Everything is under one lock, taken by the operations of the sockets
//!   and by the timer's wake; no waker is woken under it (they are
//!   collected and woken after), so a wake that runs a schedule function
//!   never meets the lock.
//! * After every operation that may have sent a flight, the flights due by
//!   now arrive (`settle`) and the timer is armed for the next one. A
//!   flight sent with no latency so arrives within the operation that sent
//!   it, as on loopback; any other arrives at a step of its own, when the
//!   seeded pool's clock reaches it (a quiet pool jumps there), in a
//!   seeded order among the timers due with it.
//! * The network belongs to its pool's driver (its clock and timer store):
//!   once the driver is shut down, nothing arrives any more.

use super::settings::Network;
use super::tcp::{os_error, Tcp};
use super::udp::Udp;
use super::wire::{Flight, Payload, Wire};
use crate::scheduler::io_driver::{Driver, IoDriver};
use crate::seeded::pool_seed::SeededNetwork;
use crate::time::timer_entry::TimerEntry;
use parking_lot::{Mutex, MutexGuard};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Weak};
use std::task::{Context, Wake, Waker};
use std::time::Instant;

/// Mixed into the pool's seed for the network's own generator, so that its
/// draws are not the schedule's.
const NETWORK_SEED: u64 = 0x6e65_7477_6f72_6b00;

/// One seeded pool's simulated network.
pub(crate) struct SimNet {
    /// The pool's driver: its clock, and the store of the network's timer.
    driver: Arc<Driver>,
    state: Mutex<State>,
    /// What the timer's wake calls back (`arrive_due`).
    me: Weak<SimNet>,
}

pub(crate) struct State {
    pub(crate) wire: Wire,
    pub(crate) tcp: Tcp,
    pub(crate) udp: Udp,
    /// The timer armed for the next arrival, and its deadline.
    timer: Option<(TimerEntry, Instant)>,
}

/// What the network's timer wakes: the network, to bring in what is due.
struct Arrivals(Weak<SimNet>);

impl Wake for Arrivals {
    fn wake(self: Arc<Self>) {
        if let Some(net) = self.0.upgrade() {
            let mut wakers = Vec::new();
            net.lock().settle(&net, &mut wakers);
            wakers.into_iter().for_each(Waker::wake);
        }
    }
}

/// The host an address of a task on `host` names: its own for a loopback
/// address, else the address itself.
pub(crate) fn host_named(host: IpAddr, ip: IpAddr) -> IpAddr {
    if ip == IpAddr::V4(Ipv4Addr::LOCALHOST) || ip == IpAddr::V6(Ipv6Addr::LOCALHOST) {
        host
    } else {
        ip
    }
}

/// Can a socket of `host` bind `ip`? (The unspecified address, a loopback
/// one, or the host's own; another host's is `EADDRNOTAVAIL`.)
pub(crate) fn check_bind(host: IpAddr, ip: IpAddr) -> std::io::Result<()> {
    if ip.is_unspecified() || host_named(host, ip) == host {
        Ok(())
    } else {
        Err(os_error(libc::EADDRNOTAVAIL))
    }
}

/// The address a socket of `host` sends from toward `to`: a loopback one
/// toward its own host by a loopback address, its own otherwise.
pub(crate) fn source_ip(host: IpAddr, to: IpAddr) -> IpAddr {
    if host_named(host, to) == host && to != host {
        to
    } else {
        host
    }
}

impl SimNet {
    fn new(settings: Network, seed: u64, driver: Arc<Driver>) -> Arc<SimNet> {
        Arc::new_cyclic(|me| SimNet {
            driver,
            state: Mutex::new(State {
                wire: Wire::new(settings, seed ^ NETWORK_SEED),
                tcp: Tcp::default(),
                udp: Udp::default(),
                timer: None,
            }),
            me: me.clone(),
        })
    }

    /// The network of the current pool (made on first use) and the host of
    /// the task running here, if the current pool is a seeded one with a
    /// network.
    pub(crate) fn current() -> Option<(Arc<SimNet>, IpAddr)> {
        crate::context::current::with_current(|registry| {
            let seeded = registry.seeded()?;
            let network = seeded.network()?;
            let net = Self::of(network, seeded.seed());
            Some((net, network.host_of(crate::context::pool_cells::task_id())))
        })
    }

    /// The network `network` keeps, made now if this is its first use.
    pub(crate) fn of(network: &SeededNetwork, seed: u64) -> Arc<SimNet> {
        let any = network.sim(|| {
            let driver = crate::context::current::enabled_driver();
            SimNet::new(network.settings().clone(), seed, driver)
        });
        Arc::clone(any)
            .downcast::<SimNet>()
            .unwrap_or_else(|_| unreachable!("a pool's network is a SimNet"))
    }

    /// The pool's time.
    pub(crate) fn now(&self) -> Instant {
        self.driver.clock().now()
    }

    /// The network's state, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Run `op` on the state at the pool's current time, then bring in
    /// what is due and wake what that satisfies (after the lock).
    pub(crate) fn with<R>(&self, op: impl FnOnce(&mut State, Instant, &mut Vec<Waker>) -> R) -> R {
        let mut wakers = Vec::new();
        let out = {
            let mut state = self.lock();
            let out = op(&mut state, self.now(), &mut wakers);
            if let Some(me) = self.me.upgrade() {
                state.settle(&me, &mut wakers);
            }
            out
        };
        wakers.into_iter().for_each(Waker::wake);
        out
    }
}

impl State {
    /// Bring in every flight due by now, then arm the timer for the next.
    fn settle(&mut self, net: &Arc<SimNet>, wakers: &mut Vec<Waker>) {
        if net.driver.is_shut_down() {
            self.timer = None;
            return;
        }
        let now = net.now();
        while let Some(flight) = self.wire.take_due(now) {
            self.arrive(flight, now, wakers);
        }
        let Some(next) = self.wire.next_arrival() else {
            self.timer = None;
            return;
        };
        if self.timer.as_ref().is_some_and(|&(_, at)| at == next) {
            return;
        }
        let mut entry = TimerEntry::on(Arc::clone(&net.driver));
        let waker = Waker::from(Arc::new(Arrivals(Arc::downgrade(net))));
        // `next` is later than now (what was due arrived above): the poll
        // registers the timer.
        let _ = entry.poll_until(next, &mut Context::from_waker(&waker));
        self.timer = Some((entry, next));
    }

    /// A flight arrived: hand it to its protocol.
    fn arrive(&mut self, flight: Flight, now: Instant, wakers: &mut Vec<Waker>) {
        match flight.payload {
            Payload::Datagram { .. } => self.udp.arrive(flight.to, flight.payload, wakers),
            payload => self.tcp.arrive(payload, &mut self.wire, now, wakers),
        }
    }

    /// Cut `a` from `b`.
    pub(crate) fn partition(&mut self, a: IpAddr, b: IpAddr) {
        self.wire.partition(a, b);
    }

    /// Join `a` and `b` again: what the partition held is resent now.
    pub(crate) fn repair(&mut self, a: IpAddr, b: IpAddr, now: Instant) {
        for flight in self.wire.repair(a, b) {
            let order = self.tcp.order_of(&flight.payload);
            self.wire.send(now, flight, order);
        }
    }

    /// Host `host` crashed: its sockets close, its peers' streams reset,
    /// and what was in the air to or from it is lost.
    pub(crate) fn crash(&mut self, host: IpAddr, wakers: &mut Vec<Waker>) {
        let conns = self.tcp.crash(host, wakers);
        self.udp.crash(host, wakers);
        self.wire.forget(|f| {
            f.from == host
                || f.to == host
                || match f.payload {
                    Payload::Syn { conn }
                    | Payload::SynAck { conn }
                    | Payload::Refused { conn }
                    | Payload::Data { conn, .. }
                    | Payload::Fin { conn, .. }
                    | Payload::Rst { conn, .. } => conns.contains(&conn),
                    Payload::Datagram { .. } => false,
                }
        });
    }
}
