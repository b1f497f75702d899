//! A network you can replay (`pool::sim`): simulated hosts, TCP and UDP
//! inside a seeded pool. Each test names hosts in 127.0.1.x, so that a
//! socket that escaped the simulation would still stay on this machine.

use futures::{AsyncReadExt, AsyncWriteExt};
use pool::net::{TcpListener, TcpStream, UdpSocket};
use pool::sim::{self, Network};
use pool::time::Instant;
use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, Shutdown};
use std::time::Duration;
use tests::watchdog;

const SERVER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 1, 10));
const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 1, 2));
const DEFAULT: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 1, 1));

fn client(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 1, n))
}

/// A seeded pool of 4 logical workers with `net`.
fn pool(seed: u64, net: Network) -> pool::Pool {
    pool::Builder::new()
        .seed(seed)
        .worker_threads(4)
        .network(net)
        .build()
        .unwrap()
}

/// A listener on `host` at `port` (bound by a task on that host).
async fn listen(host: IpAddr, port: u16) -> TcpListener {
    sim::host(host)
        .spawn(async move { TcpListener::bind(("0.0.0.0", port)).await.unwrap() })
        .await
        .unwrap()
}

/// An echo server on `host`:`port`, a task per connection.
async fn echo_server(host: IpAddr, port: u16) {
    let listener = listen(host, port).await;
    sim::host(host).spawn(async move {
        loop {
            let (mut conn, _) = listener.accept().await.unwrap();
            pool::spawn(async move {
                let mut buf = [0; 256];
                loop {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if conn.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        }
    });
}

/// Run `client` on hosts 127.0.1.2 to 127.0.1.4 at once (it is handed
/// its host's last byte), and join their logs in host order.
async fn three_clients<F, Fut>(client_on: F) -> Vec<String>
where
    F: Fn(u8) -> Fut,
    Fut: std::future::Future<Output = Vec<String>> + Send + 'static,
{
    let clients: Vec<_> = (2..5)
        .map(|i| sim::host(client(i)).spawn(client_on(i)))
        .collect();
    let mut log = Vec::new();
    for c in clients {
        log.extend(c.await.unwrap());
    }
    log
}

/// One run of a 1-server, 3-client TCP echo: each client's log of what
/// came back when (virtual time) from where, and the schedule's hash.
fn echo_run(seed: u64) -> (Vec<String>, u64) {
    let pool = pool(seed, Network::new());
    let log = pool.block_on(async {
        echo_server(SERVER, 7).await;
        let start = Instant::now();
        three_clients(|i| async move {
            let mut conn = TcpStream::connect("127.0.1.10:7").await.unwrap();
            let mut log = Vec::new();
            for round in 0..3 {
                let msg = format!("client {i} round {round}");
                conn.write_all(msg.as_bytes()).await.unwrap();
                let mut back = vec![0; msg.len()];
                conn.read_exact(&mut back).await.unwrap();
                assert_eq!(back, msg.as_bytes(), "the echo is what was sent");
                log.push(format!("{msg} back at {:?}", start.elapsed()));
            }
            log
        })
        .await
    });
    (log, pool.schedule_hash())
}

#[test]
fn twenty_seeds_of_an_echo_give_distinct_runs_and_each_replays() {
    watchdog("sim echo seeds", 120, || {
        let runs: Vec<_> = (0..20).map(echo_run).collect();
        let distinct: BTreeSet<_> = runs.iter().collect();
        assert!(
            distinct.len() >= 10,
            "20 seeds gave {} distinct runs (arrivals, virtual times, schedule)",
            distinct.len()
        );
        for (seed, run) in runs.iter().enumerate().take(5) {
            assert_eq!(&echo_run(seed as u64), run, "seed {seed} replays");
        }
    });
}

#[test]
fn a_connection_carries_its_hosts_addresses() {
    watchdog("sim addresses", 30, || {
        pool(1, Network::new()).block_on(async {
            let listener = listen(SERVER, 80).await;
            let accepted = sim::host(SERVER).spawn(async move {
                let (conn, peer) = listener.accept().await.unwrap();
                (conn.local_addr().unwrap(), peer)
            });
            let conn = sim::host(CLIENT)
                .spawn(async { TcpStream::connect("127.0.1.10:80").await.unwrap() })
                .await
                .unwrap();
            let (server_local, peer) = accepted.await.unwrap();
            assert_eq!(server_local, "127.0.1.10:80".parse().unwrap());
            assert_eq!(peer, conn.local_addr().unwrap());
            assert_eq!(peer.ip(), CLIENT, "the client's socket is on its host");
            assert_eq!(conn.peer_addr().unwrap(), "127.0.1.10:80".parse().unwrap());
        });
    });
}

#[test]
fn a_connect_with_no_listener_is_refused() {
    watchdog("sim refused", 30, || {
        pool(2, Network::new()).block_on(async {
            // A host that was never made, and one with no listener there.
            for addr in ["127.0.1.99:80", "127.0.1.1:80"] {
                let err = TcpStream::connect(addr).await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{addr}");
                assert_eq!(err.raw_os_error(), Some(libc::ECONNREFUSED));
            }
        });
    });
}

#[test]
fn a_port_in_use_on_a_host_is_addr_in_use_and_other_hosts_are_free() {
    watchdog("sim addr in use", 30, || {
        pool(3, Network::new()).block_on(async {
            let _first = TcpListener::bind("0.0.0.0:8080").await.unwrap();
            let err = TcpListener::bind("127.0.1.1:8080").await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::AddrInUse);
            // Another host's 8080 is its own.
            let other = listen(SERVER, 8080).await;
            assert_eq!(other.local_addr().unwrap().port(), 8080);
            // Port 0 picks a free one; another host's address is not ours.
            let any = TcpListener::bind("127.0.0.1:0").await.unwrap();
            assert_ne!(any.local_addr().unwrap().port(), 0);
            let err = TcpListener::bind("127.0.1.10:9000").await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::AddrNotAvailable);
            // UDP's ports are apart from TCP's.
            let udp = UdpSocket::bind("0.0.0.0:8080").await.unwrap();
            assert_eq!(udp.local_addr().unwrap().port(), 8080);
        });
    });
}

#[test]
fn loopback_is_the_tasks_own_host() {
    watchdog("sim loopback", 30, || {
        pool(4, Network::new()).block_on(async {
            let listener = listen(SERVER, 9).await;
            // From the server's host, 127.0.0.1 reaches its listener...
            let from_server = sim::host(SERVER).spawn(async {
                let conn = TcpStream::connect("127.0.0.1:9").await.unwrap();
                conn.local_addr().unwrap()
            });
            let (_, peer) = listener.accept().await.unwrap();
            assert_eq!(from_server.await.unwrap(), peer);
            assert!(peer.ip().is_loopback(), "{peer}");
            // ... and from the default host, its own (which has none).
            let err = TcpStream::connect("127.0.0.1:9").await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
        });
    });
}

#[test]
fn a_read_after_the_peers_shutdown_is_zero_and_unread_data_resets() {
    watchdog("sim fin and rst", 30, || {
        pool(5, Network::new()).block_on(async {
            let listener = listen(SERVER, 80).await;
            let server = sim::host(SERVER).spawn(async move {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut got = Vec::new();
                conn.read_to_end(&mut got).await.unwrap();
                assert_eq!(got, b"bye", "the bytes, then the end");
                conn.write_all(b"unread").await.unwrap();
                // The client shut its writing half and reads no more: its
                // drop with our bytes unread resets us.
                let mut buf = [0; 8];
                let err = loop {
                    match conn.read(&mut buf).await {
                        Ok(0) => pool::time::sleep(Duration::from_millis(1)).await,
                        Ok(_) => unreachable!("the client writes nothing more"),
                        Err(e) => break e,
                    }
                };
                assert_eq!(err.kind(), ErrorKind::ConnectionReset);
            });
            let mut conn = sim::host(CLIENT)
                .spawn(async { TcpStream::connect("127.0.1.10:80").await.unwrap() })
                .await
                .unwrap();
            conn.write_all(b"bye").await.unwrap();
            conn.shutdown(Shutdown::Write).unwrap();
            let err = conn.write_all(b"more").await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe, "a write after shutdown");
            // Wait for the server's bytes to arrive, then drop them unread.
            pool::time::sleep(Duration::from_millis(50)).await;
            drop(conn);
            server.await.unwrap();
        });
    });
}

#[test]
fn latency_is_drawn_in_its_range_and_a_stream_keeps_its_order() {
    watchdog("sim latency", 60, || {
        let net = Network::new().latency(Duration::from_millis(10), Duration::from_millis(30));
        pool(6, net).block_on(async {
            let listener = listen(SERVER, 80).await;
            let server = sim::host(SERVER).spawn(async move {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut got = Vec::new();
                conn.read_to_end(&mut got).await.unwrap();
                got
            });
            let start = Instant::now();
            let mut conn = TcpStream::connect("127.0.1.10:80").await.unwrap();
            // A handshake: two crossings.
            let rtt = start.elapsed();
            assert!(
                rtt >= Duration::from_millis(20) && rtt <= Duration::from_millis(60),
                "{rtt:?}"
            );
            for i in 0..200u32 {
                conn.write_all(&i.to_be_bytes()).await.unwrap();
            }
            drop(conn);
            let got = server.await.unwrap();
            let expected: Vec<u8> = (0..200u32).flat_map(u32::to_be_bytes).collect();
            assert_eq!(
                got, expected,
                "in order, no gaps, whatever each segment's latency"
            );
        });
    });
}

#[test]
fn a_lost_tcp_segment_is_resent_and_a_lost_datagram_is_gone() {
    watchdog("sim loss", 60, || {
        let net = Network::new().loss(0.3);
        pool(7, net).block_on(async {
            // UDP: about 30% of 400 datagrams lost.
            let rx = sim::host(SERVER)
                .spawn(async { UdpSocket::bind("0.0.0.0:53").await.unwrap() })
                .await
                .unwrap();
            let tx = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            let mut got = 0;
            for i in 0..400u16 {
                let n = tx.send_to(&i.to_be_bytes(), "127.0.1.10:53").await.unwrap();
                assert_eq!(n, 2, "a send returns the length, lost or not");
                // Under the socket's queue of 256: the receiver reads as we go.
                if i % 100 == 99 {
                    pool::time::sleep(Duration::from_millis(10)).await;
                    got += drain(&rx).await;
                }
            }
            assert!((200..360).contains(&got), "{got} of 400 datagrams arrived");
            // TCP: every byte, in order.
            echo_server(SERVER, 7).await;
            let mut conn = TcpStream::connect("127.0.1.10:7").await.unwrap();
            let start = Instant::now();
            for round in 0..20u8 {
                conn.write_all(&[round; 10]).await.unwrap();
                let mut back = [0; 10];
                conn.read_exact(&mut back).await.unwrap();
                assert_eq!(back, [round; 10]);
            }
            assert!(
                start.elapsed() > Duration::from_millis(200),
                "some segment of 40 was lost and resent (200 ms each): {:?}",
                start.elapsed()
            );
        });
    });
}

/// Receive what `socket` has queued (a round of sleeps ends it): how many.
async fn drain(socket: &UdpSocket) -> usize {
    let mut n = 0;
    let mut buf = [0; 16];
    while let Ok(Ok(_)) =
        pool::time::timeout(Duration::from_millis(1), socket.recv_from(&mut buf)).await
    {
        n += 1;
    }
    n
}

#[test]
fn a_partition_holds_tcp_until_the_repair_and_drops_udp() {
    watchdog("sim partition", 30, || {
        pool(8, Network::new()).block_on(async {
            let listener = listen(SERVER, 80).await;
            let server = sim::host(SERVER).spawn(async move {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut buf = [0; 4];
                conn.read_exact(&mut buf).await.unwrap();
                Instant::now()
            });
            let udp_rx = sim::host(SERVER)
                .spawn(async { UdpSocket::bind("0.0.0.0:53").await.unwrap() })
                .await
                .unwrap();
            let mut conn = TcpStream::connect("127.0.1.10:80").await.unwrap();
            sim::partition(DEFAULT, SERVER);
            conn.write_all(b"wait").await.unwrap();
            let udp = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            assert_eq!(udp.send_to(b"gone", "127.0.1.10:53").await.unwrap(), 4);
            pool::time::sleep(Duration::from_secs(60)).await;
            let repaired = Instant::now();
            sim::repair(DEFAULT, SERVER);
            let arrived = server.await.unwrap();
            assert!(arrived > repaired, "the bytes waited for the repair");
            let mut buf = [0; 8];
            let got = pool::time::timeout(Duration::from_secs(1), udp_rx.recv_from(&mut buf)).await;
            assert!(got.is_err(), "the datagram was dropped by the partition");
        });
    });
}

#[test]
fn a_crash_aborts_the_hosts_tasks_and_resets_its_peers() {
    watchdog("sim crash", 30, || {
        pool(9, Network::new()).block_on(async {
            let listener = listen(SERVER, 80).await;
            let server = sim::host(SERVER).spawn(async move {
                let (_conn, _) = listener.accept().await.unwrap();
                std::future::pending::<()>().await
            });
            let mut conn = TcpStream::connect("127.0.1.10:80").await.unwrap();
            pool::time::sleep(Duration::from_millis(20)).await;
            sim::host(SERVER).crash();
            assert!(
                server.await.unwrap_err().is_cancelled(),
                "its task was aborted"
            );
            let mut buf = [0; 4];
            let err = conn.read(&mut buf).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ConnectionReset);
            // Nobody listens there any more; a restart listens again.
            let err = TcpStream::connect("127.0.1.10:80").await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
            let again = listen(SERVER, 80).await;
            let accepted = sim::host(SERVER).spawn(async move { again.accept().await.is_ok() });
            TcpStream::connect("127.0.1.10:80").await.unwrap();
            assert!(accepted.await.unwrap());
        });
    });
}

#[test]
fn a_tasks_spawns_stay_on_its_host() {
    watchdog("sim host of spawns", 30, || {
        pool(10, Network::new()).block_on(async {
            let local = sim::host(CLIENT).spawn(async {
                pool::spawn(async {
                    let s = UdpSocket::bind("0.0.0.0:0").await.unwrap();
                    let to = UdpSocket::bind("127.0.0.1:0").await.unwrap();
                    s.send_to(b"x", to.local_addr().unwrap()).await.unwrap();
                    let mut buf = [0; 1];
                    let (_, from) = to.recv_from(&mut buf).await.unwrap();
                    from
                })
                .await
                .unwrap()
            });
            let from = local.await.unwrap();
            // Sent through 127.0.0.1 on the client's host.
            assert!(from.ip().is_loopback());
            let here = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            let there = sim::host(CLIENT)
                .spawn(async { UdpSocket::bind("0.0.0.0:0").await.unwrap() })
                .await
                .unwrap();
            // A socket stays on the host that made it, awaited here.
            there
                .send_to(b"y", ("127.0.1.1", here.local_addr().unwrap().port()))
                .await
                .unwrap();
            let mut buf = [0; 1];
            let (_, from) = here.recv_from(&mut buf).await.unwrap();
            assert_eq!(from.ip(), CLIENT);
        });
    });
}

#[test]
fn a_udp_socket_queues_256_datagrams_and_drops_the_rest() {
    watchdog("sim udp queue", 30, || {
        pool(11, Network::new()).block_on(async {
            let rx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let tx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            for i in 0..300u16 {
                tx.send_to(&i.to_be_bytes(), rx.local_addr().unwrap())
                    .await
                    .unwrap();
            }
            pool::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(drain(&rx).await, 256);
        });
    });
}

#[test]
fn a_network_needs_a_seeded_pool_and_settings_in_range() {
    for (builder, says) in [
        (
            pool::Builder::new().network(Network::new()),
            "Builder::seed",
        ),
        (
            pool::Builder::new().seed(1).network(
                Network::new().latency(Duration::from_millis(5), Duration::from_millis(1)),
            ),
            "latency",
        ),
        (
            pool::Builder::new()
                .seed(1)
                .network(Network::new().loss(1.5)),
            "loss",
        ),
    ] {
        let err = builder.build().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains(says), "{err}");
    }
}

#[test]
fn the_sim_functions_outside_a_network_pool_say_what_they_need() {
    let panic = std::panic::catch_unwind(|| sim::host(SERVER)).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("Builder::new().seed(n).network"),
        "{message}"
    );
    // A seeded pool without a network still refuses sockets.
    let pool = pool::Builder::new().seed(1).build().unwrap();
    let err = pool
        .block_on(async { TcpListener::bind("127.0.0.1:0").await })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
}

#[test]
fn files_processes_and_descriptors_stay_refused_with_a_network() {
    pool(12, Network::new()).block_on(async {
        let err = pool::fs::read("/etc/hostname").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        let err = pool::process::Command::new("true")
            .status()
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        let err = pool::net::UnixListener::bind("/tmp/pool-sim-refused.sock").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        let err = TcpStream::connect("localhost:80").await.unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::Unsupported,
            "host names are not looked up"
        );
        let message = err.to_string();
        assert!(
            message.contains("`localhost:80`") && message.contains("by its address"),
            "{message}"
        );
    });
}

#[pool::test(seed = 7, network)]
async fn the_test_attribute_gives_a_network() {
    let listener = TcpListener::bind("0.0.0.0:1").await.unwrap();
    assert_eq!(
        listener.local_addr().unwrap().port(),
        1,
        "no port is privileged"
    );
    let conn = TcpStream::connect("127.0.1.1:1").await.unwrap();
    let (_, peer) = listener.accept().await.unwrap();
    assert_eq!(peer, conn.local_addr().unwrap());
}

/// An HTTP service (`pool::hyper::serve`) on one host and hyper's client
/// (`pool::hyper::Connector`) on three others, under one seed: the
/// service sees each client's address, and the run replays.
fn http_run(seed: u64) -> (Vec<String>, u64) {
    use http_body_util::{BodyExt, Empty, Full};
    use hyper::body::{Bytes, Incoming};
    use hyper::{Request, Response};
    use hyper_util::client::legacy::Client;
    use pool::hyper::{Connector, Executor, PeerAddr, Timer};
    use std::net::SocketAddr;

    async fn whoami(
        req: Request<Incoming>,
    ) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
        let peer = req
            .extensions()
            .get::<PeerAddr<SocketAddr>>()
            .map(|p| p.0.ip());
        let body = format!("{} from {peer:?}", req.uri().path());
        Ok(Response::new(Full::new(Bytes::from(body))))
    }

    let pool = pool(seed, Network::new());
    let log = pool.block_on(async {
        let listener = listen(SERVER, 80).await;
        sim::host(SERVER).spawn(pool::hyper::serve(
            listener,
            hyper::service::service_fn(whoami),
        ));
        let start = Instant::now();
        three_clients(|i| async move {
            let client: Client<Connector, Empty<Bytes>> = Client::builder(Executor::new())
                .timer(Timer::new())
                .build(Connector::new());
            let mut log = Vec::new();
            for n in 0..2 {
                let url = format!("http://127.0.1.10/{i}/{n}").parse().unwrap();
                let response = client.get(url).await.unwrap();
                let body = response.into_body().collect().await.unwrap().to_bytes();
                log.push(format!(
                    "{} at {:?}",
                    String::from_utf8(body.to_vec()).unwrap(),
                    start.elapsed()
                ));
            }
            log
        })
        .await
    });
    (log, pool.schedule_hash())
}

#[test]
fn an_http_service_and_its_clients_run_and_replay_under_a_seed() {
    watchdog("sim http", 60, || {
        let (log, hash) = http_run(21);
        assert_eq!(log.len(), 6);
        for i in 2..5 {
            assert!(
                log.iter()
                    .any(|l| l.starts_with(&format!("/{i}/1 from Some(127.0.1.{i})"))),
                "{log:?}"
            );
        }
        assert_eq!(http_run(21), (log, hash), "seed 21 replays");
    });
}
