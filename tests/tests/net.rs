//! `pool::net` on the pool's own I/O driver: TCP echo with many clients,
//! UDP round trips, OS errors passed through, cancellation, I/O from a
//! plain thread, sockets outliving their pool.

use futures::{AsyncReadExt, AsyncWriteExt};
use pool::net::{TcpListener, TcpStream, UdpSocket};
use pool::Builder;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tests::watchdog;

fn pool(workers: usize) -> pool::Pool {
    Builder::new().worker_threads(workers).build().unwrap()
}

/// A server that echoes every connection until EOF.
async fn echo_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    pool::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            pool::spawn(async move {
                let (mut r, mut w) = (&stream, &stream);
                futures::io::copy(&mut r, &mut w).await.unwrap();
            });
        }
    });
    addr
}

#[test]
fn tcp_echo_with_many_concurrent_clients_returns_every_byte() {
    watchdog("tcp echo", 60, || {
        for workers in [1, 2, 4] {
            let p = pool(workers);
            p.block_on(async {
                let addr = echo_server().await;
                let clients: Vec<_> = (0..64u32)
                    .map(|c| {
                        pool::spawn(async move {
                            let s = TcpStream::connect(addr).await.unwrap();
                            s.set_nodelay(true).unwrap();
                            // 64 KiB each, in uneven writes, read back whole.
                            let data: Vec<u8> = (0..65_536u32).map(|i| (i * 7 + c) as u8).collect();
                            let (mut r, mut w) = (&s, &s);
                            let writer = async {
                                for chunk in data.chunks(1000 + c as usize) {
                                    w.write_all(chunk).await.unwrap();
                                }
                            };
                            let mut back = vec![0; data.len()];
                            let reader = r.read_exact(&mut back);
                            let ((), read) = futures::join!(writer, reader);
                            read.unwrap();
                            assert!(back == data, "client {c} got other bytes back");
                        })
                    })
                    .collect();
                for c in clients {
                    c.await.unwrap();
                }
            });
        }
    });
}

#[test]
fn udp_round_trips() {
    watchdog("udp", 30, || {
        let p = pool(2);
        p.block_on(async {
            let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let server_addr = server.local_addr().unwrap();
            pool::spawn(async move {
                let mut buf = [0; 64];
                loop {
                    let (n, from) = server.recv_from(&mut buf).await.unwrap();
                    server.send_to(&buf[..n], from).await.unwrap();
                }
            });
            let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let mut buf = [0; 64];
            for i in 0..200u32 {
                let msg = i.to_le_bytes();
                client.send_to(&msg, server_addr).await.unwrap();
                let (n, from) = client.recv_from(&mut buf).await.unwrap();
                assert_eq!((&buf[..n], from), (&msg[..], server_addr));
            }
        });
    });
}

#[test]
fn several_tasks_waiting_on_one_udp_socket_are_all_woken() {
    watchdog("udp shared", 30, || {
        let p = pool(2);
        p.block_on(async {
            let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
            let addr = socket.local_addr().unwrap();
            let receivers: Vec<_> = (0..4)
                .map(|_| {
                    let socket = socket.clone();
                    pool::spawn(async move {
                        let mut buf = [0; 8];
                        socket.recv_from(&mut buf).await.unwrap().0
                    })
                })
                .collect();
            // Let all four wait before anything arrives.
            pool::time::sleep(Duration::from_millis(50)).await;
            let sender = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            for _ in 0..4 {
                sender.send_to(b"x", addr).await.unwrap();
            }
            for r in receivers {
                assert_eq!(r.await.unwrap(), 1);
            }
        });
    });
}

#[test]
fn os_errors_come_through_unchanged() {
    watchdog("os errors", 30, || {
        let p = pool(2);
        p.block_on(async {
            let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = taken.local_addr().unwrap();
            let err = TcpListener::bind(addr).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
            drop(taken);
            // Nothing listens there any more.
            let err = TcpStream::connect(addr).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
            let err = UdpSocket::bind("not an address").await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        });
    });
}

#[test]
fn a_peer_reset_comes_through_as_connection_reset() {
    watchdog("peer reset", 30, || {
        let p = pool(2);
        p.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut client = TcpStream::connect(listener.local_addr().unwrap())
                .await
                .unwrap();
            let (server, _) = listener.accept().await.unwrap();
            // SO_LINGER with a zero timeout: close sends a reset.
            let std_server: std::net::TcpStream = {
                use std::os::fd::{AsRawFd, FromRawFd};
                // SAFETY: `dup` gives a new descriptor we own.
                unsafe { std::net::TcpStream::from_raw_fd(libc::dup(server.as_raw_fd())) }
            };
            drop(server);
            tests::reset_on_close(&std_server);
            drop(std_server);
            let mut buf = [0; 8];
            let err = client.read(&mut buf).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
        });
    });
}

#[test]
fn a_dropped_pending_read_leaves_the_socket_usable() {
    watchdog("cancelled read", 30, || {
        let p = pool(2);
        p.block_on(async {
            let addr = echo_server().await;
            let mut s = TcpStream::connect(addr).await.unwrap();
            let mut buf = [0; 4];
            // A read that cannot complete, cancelled by a timeout.
            let r = pool::time::timeout(Duration::from_millis(20), s.read(&mut buf)).await;
            assert!(r.is_err(), "nothing was sent, yet the read completed");
            s.write_all(b"ping").await.unwrap();
            s.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"ping");
        });
    });
}

#[test]
fn io_from_a_plain_thread_through_block_on() {
    watchdog("plain thread io", 30, || {
        let p = pool(2);
        let addr = p.block_on(echo_server());
        // This thread is no worker: the pool's workers drive its socket.
        let handle = p.handle();
        let mut s = p.block_on(async { TcpStream::connect(addr).await.unwrap() });
        pool::block_on(async {
            s.write_all(b"from a plain thread").await.unwrap();
            let mut buf = [0; 19];
            s.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"from a plain thread");
        });
        drop(handle);
    });
}

#[test]
fn std_sockets_convert() {
    watchdog("try_from", 30, || {
        let p = pool(1);
        p.block_on(async {
            let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = std_listener.local_addr().unwrap();
            let listener = TcpListener::try_from(std_listener).unwrap();
            let std_client = std::net::TcpStream::connect(addr).unwrap();
            let mut client = TcpStream::try_from(std_client).unwrap();
            let (mut server, peer) = listener.accept().await.unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            client.write_all(b"abc").await.unwrap();
            let mut buf = [0; 3];
            server.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"abc");
        });
    });
}

#[test]
fn sockets_outliving_their_pool_fail_instead_of_hanging() {
    watchdog("outliving sockets", 30, || {
        let p = pool(2);
        let (listener, mut client, udp) = p.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let client = TcpStream::connect(listener.local_addr().unwrap())
                .await
                .unwrap();
            let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            (listener, client, udp)
        });
        // A plain thread waits on a read while the pool goes away.
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let r = pool::block_on(async {
                let mut buf = [0; 1];
                client.read(&mut buf).await
            });
            tx.send(()).unwrap();
            r
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(p);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("a read pending when its pool was dropped never returned");
        assert!(waiter.join().unwrap().is_err());
        pool::block_on(async {
            assert!(listener.accept().await.is_err());
            let mut buf = [0; 1];
            assert!(udp.recv_from(&mut buf).await.is_err());
        });
    });
}

#[test]
fn async_io_sockets_and_timers_keep_working_on_pool() {
    watchdog("async-io on pool", 30, || {
        let p = pool(2);
        p.block_on(async {
            let listener =
                async_io::Async::<std::net::TcpListener>::bind(([127, 0, 0, 1], 0)).unwrap();
            let addr = listener.get_ref().local_addr().unwrap();
            let server = pool::spawn(async move {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = [0; 4];
                s.read_exact(&mut buf).await.unwrap();
                async_io::Timer::after(Duration::from_millis(5)).await;
                s.write_all(&buf).await.unwrap();
            });
            let mut c = async_io::Async::<std::net::TcpStream>::connect(addr)
                .await
                .unwrap();
            c.write_all(b"ping").await.unwrap();
            let mut buf = [0; 4];
            c.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"ping");
            server.await.unwrap();
        });
    });
}

#[test]
fn data_and_the_peers_close_in_one_event_end_the_read_instead_of_hanging() {
    watchdog("data and FIN in one event", 30, || {
        // One worker, so that it can be kept busy while data and FIN arrive:
        // the driver then reports both in one event, and the short read of
        // the data must not clear the close with it.
        let p = pool(1);
        let listener = p.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut conn, _) = p.block_on(listener.accept()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        p.spawn(async move {
            let mut got = Vec::new();
            conn.read_to_end(&mut got).await.unwrap();
            tx.send(got).unwrap();
        });
        tests::wait_until_asleep(&p);
        let (busy_tx, busy_rx) = std::sync::mpsc::channel();
        p.spawn(async move {
            busy_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(100));
        });
        busy_rx.recv().unwrap();
        io::Write::write_all(&mut client, b"last words").unwrap();
        drop(client);
        let got = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("read_to_end saw the end of file");
        assert_eq!(got, b"last words");
    });
}
