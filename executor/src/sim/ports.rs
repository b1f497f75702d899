//! `Ports`: the ports taken on each simulated host, for one protocol (TCP
//! or UDP), with Linux's rules: a port is taken for an address by a socket
//! bound to that address or to the unspecified one; port 0 picks a free
//! ephemeral port; no port is privileged.

use std::collections::BTreeMap;
use std::io;
use std::net::IpAddr;

/// The first ephemeral port (IANA's range, 49152 to 65535).
const EPHEMERAL: u16 = 49152;

/// The ports of every host, for one protocol.
#[derive(Debug, Default)]
pub(crate) struct Ports {
    /// By host: each port's bindings (the address bound, and who holds
    /// it: a listener's or socket's id).
    taken: BTreeMap<IpAddr, BTreeMap<u16, Vec<(IpAddr, u64)>>>,
    /// By host: the next ephemeral port to try.
    next: BTreeMap<IpAddr, u16>,
}

/// Do bindings of `a` and `b` on one port clash? (Either is unspecified,
/// or they are the same address.)
fn clash(a: IpAddr, b: IpAddr) -> bool {
    a.is_unspecified() || b.is_unspecified() || a == b
}

impl Ports {
    /// Bind `ip` (the host's own address, a loopback one, or the
    /// unspecified one: the caller checked) and `port` on `host` for
    /// `owner`; port 0 picks a free one. The port, or `AddrInUse`.
    pub(crate) fn bind(
        &mut self,
        host: IpAddr,
        ip: IpAddr,
        port: u16,
        owner: u64,
    ) -> io::Result<u16> {
        let ports = self.taken.entry(host).or_default();
        let port = if port == 0 {
            let next = self.next.entry(host).or_insert(EPHEMERAL);
            let free = (0..=u16::MAX - EPHEMERAL)
                .map(|k| {
                    EPHEMERAL
                        + (next.wrapping_sub(EPHEMERAL).wrapping_add(k)
                            % (u16::MAX - EPHEMERAL + 1))
                })
                .find(|p| {
                    ports
                        .get(p)
                        .is_none_or(|b| !b.iter().any(|&(bound, _)| clash(bound, ip)))
                })
                .ok_or_else(|| io::Error::from_raw_os_error(libc::EADDRINUSE))?;
            *next = if free == u16::MAX {
                EPHEMERAL
            } else {
                free + 1
            };
            free
        } else {
            if ports
                .get(&port)
                .is_some_and(|b| b.iter().any(|&(bound, _)| clash(bound, ip)))
            {
                return Err(io::Error::from_raw_os_error(libc::EADDRINUSE));
            }
            port
        };
        ports.entry(port).or_default().push((ip, owner));
        Ok(port)
    }

    /// `owner` lets its port go.
    pub(crate) fn release(&mut self, host: IpAddr, port: u16, owner: u64) {
        if let Some(ports) = self.taken.get_mut(&host) {
            if let Some(bindings) = ports.get_mut(&port) {
                bindings.retain(|&(_, o)| o != owner);
                if bindings.is_empty() {
                    ports.remove(&port);
                }
            }
        }
    }

    /// The owner bound on `host` at `port` that takes what is sent to
    /// `ip`: one bound to `ip` itself first, else one bound to the
    /// unspecified address.
    pub(crate) fn owner(&self, host: IpAddr, ip: IpAddr, port: u16) -> Option<u64> {
        let bindings = self.taken.get(&host)?.get(&port)?;
        bindings
            .iter()
            .find(|&&(bound, _)| bound == ip)
            .or_else(|| bindings.iter().find(|&&(bound, _)| bound.is_unspecified()))
            .map(|&(_, owner)| owner)
    }

    /// A crash: every port of `host` is free.
    pub(crate) fn clear(&mut self, host: IpAddr) {
        self.taken.remove(&host);
    }
}
