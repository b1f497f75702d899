//! `Host`, `host`, `partition` and `repair`: what a test does to the
//! simulated network of its seeded pool.

use super::network::{host_named, SimNet};
use crate::scheduler::registry::Registry;
use crate::scheduler::spawn::spawn_task;
use crate::seeded::pool_seed::SeededNetwork;
use crate::task::join_handle::JoinHandle;
use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::panic::Location;
use std::sync::Arc;

/// One simulated machine of the current pool's network, named by its
/// address: what its tasks' sockets bind and connect from.
///
/// A task runs on the host it was spawned on ([`Host::spawn`]), or on its
/// spawner's; a task not spawned on one, and the `block_on` future (so a
/// `#[pool::test]` body), are on 127.0.1.1. `127.0.0.1` is each task's own
/// host.
///
/// # Examples
///
/// ```
/// use futures::{AsyncReadExt, AsyncWriteExt};
/// use pool::net::{TcpListener, TcpStream};
/// use std::net::{IpAddr, Ipv4Addr};
///
/// let pool = pool::Builder::new().seed(7).network(pool::sim::Network::new()).build().unwrap();
/// pool.block_on(async {
///     let server = pool::sim::host(IpAddr::V4(Ipv4Addr::new(127, 0, 1, 10)));
///     let listener = server
///         .spawn(async { TcpListener::bind("0.0.0.0:7000").await })
///         .await
///         .unwrap()
///         .unwrap();
///     server.spawn(async move {
///         let (mut conn, _) = listener.accept().await.unwrap();
///         let mut byte = [0];
///         conn.read_exact(&mut byte).await.unwrap();
///         conn.write_all(&byte).await.unwrap();
///     });
///     // This future is on 127.0.1.1.
///     let mut client = TcpStream::connect("127.0.1.10:7000").await.unwrap();
///     assert_eq!(client.local_addr().unwrap().ip(), IpAddr::V4(Ipv4Addr::new(127, 0, 1, 1)));
///     client.write_all(b"!").await.unwrap();
///     let mut echoed = [0];
///     client.read_exact(&mut echoed).await.unwrap();
///     assert_eq!(&echoed, b"!");
/// });
/// ```
#[derive(Clone)]
pub struct Host {
    registry: Arc<Registry>,
    addr: IpAddr,
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Host").field("addr", &self.addr).finish()
    }
}

/// The current pool's registry and network, or a panic that says what
/// `what` needs.
#[track_caller]
fn current(what: &str) -> (Arc<Registry>, Arc<SimNet>, IpAddr) {
    let found = crate::context::current::try_current().and_then(|registry| {
        let seeded = registry.seeded()?;
        let network: &SeededNetwork = seeded.network()?;
        let net = SimNet::of(network, seeded.seed());
        let here = network.host_of(crate::context::pool_cells::task_id());
        Some((Arc::clone(&registry), net, here))
    });
    found.unwrap_or_else(|| {
        panic!(
            "pool::sim::{what} needs a seeded pool with a simulated network, and this is not \
             one: build it with Builder::new().seed(n).network(pool::sim::Network::new()), or \
             write #[pool::test(seed = n, network)], and call it from its block_on future or \
             its tasks"
        )
    })
}

/// A host's own address, as named by a task on `here`: `127.0.0.1` is
/// `here`; the unspecified address names no host.
#[track_caller]
fn named(here: IpAddr, addr: IpAddr, what: &str) -> IpAddr {
    assert!(
        !addr.is_unspecified(),
        "pool::sim::{what}: {addr} names no host; name one by its address, such as 127.0.1.2"
    );
    host_named(here, addr)
}

/// The current pool's simulated host at `addr` (made on first use);
/// `127.0.0.1` is the calling task's own host.
///
/// # Panics
///
/// Outside a seeded pool with a network ([`Builder::network`]), and for the
/// unspecified address.
///
/// [`Builder::network`]: crate::Builder::network
#[track_caller]
pub fn host(addr: IpAddr) -> Host {
    let (registry, _, here) = current("host");
    Host {
        addr: named(here, addr, "host"),
        registry,
    }
}

impl Host {
    /// Spawn a task on this host: its sockets bind and connect from this
    /// host's address, and the tasks it spawns are on it too.
    #[track_caller]
    pub fn spawn<F>(&self, f: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let handle = spawn_task(&self.registry, f, Location::caller());
        if let Some(network) = self.registry.seeded().and_then(|s| s.network()) {
            network.set_host(handle.id(), self.addr);
        }
        handle
    }

    /// Crash this host: its tasks are aborted (as [`JoinHandle::abort`]
    /// does), its sockets close, the streams of its peers are reset
    /// (`ConnectionReset`) and what was in the air to or from it is lost.
    /// The host can be spawned on again afterwards: a restart, with nothing
    /// kept.
    pub fn crash(&self) {
        let Some(seeded) = self.registry.seeded() else {
            return;
        };
        let Some(network) = seeded.network() else {
            return;
        };
        let net = SimNet::of(network, seeded.seed());
        net.with(|s, _, wakers| s.crash(self.addr, wakers));
        let doomed = network.tasks_on(self.addr);
        let wakers = self
            .registry
            .tasks()
            .abort_where(None, |h| doomed.contains(&h.id().as_u64()));
        wakers.into_iter().for_each(std::task::Waker::wake);
    }

    /// This host's address.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }
}

/// Cut hosts `a` and `b` from each other: TCP segments between them wait
/// (a write returns once its bytes are buffered; they arrive after the
/// [`repair`]), UDP datagrams are dropped. `127.0.0.1` is the calling
/// task's host.
///
/// # Panics
///
/// Outside a seeded pool with a network, and for the unspecified address.
#[track_caller]
pub fn partition(a: IpAddr, b: IpAddr) {
    let (_, net, here) = current("partition");
    let (a, b) = (named(here, a, "partition"), named(here, b, "partition"));
    net.with(|s, _, _| s.partition(a, b));
}

/// Join hosts `a` and `b` again after a [`partition`]: what waited is
/// sent, each segment with a fresh latency, in its stream's order.
///
/// # Panics
///
/// Outside a seeded pool with a network, and for the unspecified address.
#[track_caller]
pub fn repair(a: IpAddr, b: IpAddr) {
    let (_, net, here) = current("repair");
    let (a, b) = (named(here, a, "repair"), named(here, b, "repair"));
    net.with(|s, now, _| s.repair(a, b, now));
}
