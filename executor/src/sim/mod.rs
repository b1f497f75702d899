//! A network you can replay: simulated hosts, TCP and UDP inside a seeded
//! pool ([`Builder::seed`] with [`Builder::network`], or
//! `#[pool::test(seed = n, network)]`).
//!
//! In such a pool every [`pool::net`](crate::net) `TcpListener`,
//! `TcpStream` and `UdpSocket` is an in-memory endpoint on a simulated
//! host: the same types and methods, no descriptor. Every byte crosses a
//! simulated link whose latency and loss ([`Network`]) and partitions
//! ([`partition`], [`repair`]) come from the pool's seed, and every
//! operation is a step of the seeded schedule, so a failing run of a
//! service and its clients replays exactly, faults included
//! (`POOL_SEED=n`). The workers, `spawn_blocking`, timers and the network
//! are one schedule.
//!
//! * A task runs on a [`Host`]: the one it was spawned on
//!   ([`Host::spawn`]), its spawner's, or 127.0.1.1. `127.0.0.1` is each
//!   task's own host; binding `0.0.0.0` binds the task's host (its own
//!   address and `127.0.0.1`), port 0 picks a free port.
//! * The errors are Linux loopback's: a connect to an address with no
//!   listener is `ConnectionRefused`; a stream dropped with unread data
//!   resets its peer (`ConnectionReset`), as a crashed host does; a read
//!   after the peer's `shutdown(Write)` is `Ok(0)`; a port in use is
//!   `AddrInUse`, another host's address `AddrNotAvailable`.
//! * TCP keeps its stream: in order, no gaps. A lost segment is resent (a
//!   delay); across a partition a write returns once its bytes are
//!   buffered, and the bytes wait for the repair. UDP datagrams may be
//!   reordered by their latencies, are dropped by a loss or a partition,
//!   and a socket queues 256 before it drops more.
//! * Files, processes, signals, Unix sockets and [`io::Async`] stay refused
//!   (`Unsupported`), and so does a host name lookup: name hosts by IP.
//!
//! See `README.md` beside this file for what is modelled and what is not.
//!
//! # Examples
//!
//! A server, a client on another host, and a partition that holds the
//! client's bytes until the repair:
//!
//! ```
//! use futures::{AsyncReadExt, AsyncWriteExt};
//! use pool::net::{TcpListener, TcpStream};
//! use pool::sim;
//! use std::net::{IpAddr, Ipv4Addr};
//! use std::time::Duration;
//!
//! const SERVER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 1, 10));
//! const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 1, 2));
//!
//! let pool = pool::Builder::new().seed(3).network(sim::Network::new()).build().unwrap();
//! let got = pool.block_on(async {
//!     let listener = sim::host(SERVER)
//!         .spawn(async { TcpListener::bind("0.0.0.0:80").await.unwrap() })
//!         .await
//!         .unwrap();
//!     let server = sim::host(SERVER).spawn(async move {
//!         let (mut conn, _) = listener.accept().await.unwrap();
//!         let mut got = Vec::new();
//!         conn.read_to_end(&mut got).await.unwrap();
//!         got
//!     });
//!     let client = sim::host(CLIENT).spawn(async {
//!         let mut conn = TcpStream::connect("127.0.1.10:80").await.unwrap();
//!         sim::partition(CLIENT, SERVER);
//!         conn.write_all(b"held, then delivered").await.unwrap();
//!         pool::time::sleep(Duration::from_secs(1)).await;
//!         sim::repair(CLIENT, SERVER);
//!     });
//!     client.await.unwrap();
//!     server.await.unwrap()
//! });
//! assert_eq!(got, b"held, then delivered");
//! ```
//!
//! [`Builder::seed`]: crate::Builder::seed
//! [`Builder::network`]: crate::Builder::network
//! [`io::Async`]: crate::io::Async

pub(crate) mod host;
pub(crate) mod network;
pub(crate) mod ports;
pub(crate) mod settings;
pub(crate) mod sockets;
pub(crate) mod tcp;
pub(crate) mod udp;
pub(crate) mod wire;

pub use host::{host, partition, repair, Host};
pub use settings::Network;
