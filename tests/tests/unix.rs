//! Unix sockets on the pool's driver: streams, listeners, datagrams, and the
//! errors a bad path gets.

use futures::{AsyncReadExt, AsyncWriteExt};
use pool::net::{UnixDatagram, UnixListener, UnixStream};
use pool::Builder;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use tests::watchdog;

/// A fresh socket path in the temporary directory, removed when dropped.
struct SocketPath(PathBuf);

impl SocketPath {
    fn new(what: &str) -> SocketPath {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("pool-{}-{what}-{n}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        SocketPath(path)
    }
}

impl Drop for SocketPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn pool() -> pool::Pool {
    Builder::new().worker_threads(2).build().unwrap()
}

#[test]
fn a_listener_echoes_for_many_clients_at_once() {
    watchdog("unix echo", 30, || {
        let path = SocketPath::new("echo");
        let p = pool();
        p.block_on(async {
            let listener = UnixListener::bind(&path.0).unwrap();
            assert_eq!(
                listener.local_addr().unwrap().as_pathname(),
                Some(path.0.as_path())
            );
            let server = pool::spawn(async move {
                for _ in 0..20 {
                    let (mut conn, _) = listener.accept().await.unwrap();
                    pool::spawn(async move {
                        let mut buf = [0u8; 1024];
                        loop {
                            let n = conn.read(&mut buf).await.unwrap();
                            if n == 0 {
                                break;
                            }
                            conn.write_all(&buf[..n]).await.unwrap();
                        }
                    });
                }
            });
            let clients: Vec<_> = (0..20u8)
                .map(|i| {
                    let path = path.0.clone();
                    pool::spawn(async move {
                        let mut s = UnixStream::connect(&path).await.unwrap();
                        let msg = vec![i; 10_000];
                        s.write_all(&msg).await.unwrap();
                        let mut back = vec![0u8; msg.len()];
                        s.read_exact(&mut back).await.unwrap();
                        assert_eq!(back, msg);
                    })
                })
                .collect();
            for c in clients {
                c.await.unwrap();
            }
            server.await.unwrap();
        });
    });
}

#[test]
fn a_pair_talks_both_ways_and_shutdown_ends_the_peers_reads() {
    watchdog("unix pair", 30, || {
        pool().block_on(async {
            let (mut a, mut b) = UnixStream::pair().unwrap();
            // More than a socket buffer holds: the writer must wait for the
            // reader through the driver.
            let big = vec![7u8; 4 << 20];
            let writer = pool::spawn(async move {
                a.write_all(&big).await.unwrap();
                a.shutdown(std::net::Shutdown::Write).unwrap();
                a
            });
            let mut got = Vec::new();
            b.read_to_end(&mut got).await.unwrap();
            assert_eq!(got.len(), 4 << 20);
            assert!(got.iter().all(|&x| x == 7));
            let mut a = writer.await.unwrap();
            b.write_all(b"back").await.unwrap();
            let mut four = [0u8; 4];
            a.read_exact(&mut four).await.unwrap();
            assert_eq!(&four, b"back");
        });
    });
}

#[test]
fn std_sockets_convert_and_work_on_the_driver() {
    watchdog("unix try_from", 30, || {
        let path = SocketPath::new("tryfrom");
        pool().block_on(async {
            let std_listener = std::os::unix::net::UnixListener::bind(&path.0).unwrap();
            let listener = UnixListener::try_from(std_listener).unwrap();
            let (std_a, std_b) = std::os::unix::net::UnixStream::pair().unwrap();
            let mut a = UnixStream::try_from(std_a).unwrap();
            let mut b = UnixStream::try_from(std_b).unwrap();
            // Converted streams are non-blocking: a read with nothing to
            // read waits on the driver instead of blocking the worker.
            let reader = pool::spawn(async move {
                let mut buf = [0u8; 5];
                b.read_exact(&mut buf).await.unwrap();
                buf
            });
            pool::time::sleep(std::time::Duration::from_millis(20)).await;
            a.write_all(b"hello").await.unwrap();
            assert_eq!(&reader.await.unwrap(), b"hello");
            let client = std::thread::spawn({
                let path = path.0.clone();
                move || std::os::unix::net::UnixStream::connect(path).unwrap()
            });
            let (_conn, _) = listener.accept().await.unwrap();
            client.join().unwrap();
        });
    });
}

#[test]
fn datagrams_by_path_and_by_pair() {
    watchdog("unix datagram", 30, || {
        let server_path = SocketPath::new("dgram-server");
        let client_path = SocketPath::new("dgram-client");
        pool().block_on(async {
            let server = UnixDatagram::bind(&server_path.0).unwrap();
            let client = UnixDatagram::bind(&client_path.0).unwrap();
            let echo = pool::spawn(async move {
                let mut buf = [0u8; 64];
                let (n, from) = server.recv_from(&mut buf).await.unwrap();
                let from = from.as_pathname().unwrap().to_path_buf();
                server.send_to(&buf[..n], from).await.unwrap();
            });
            client.send_to(b"ping", &server_path.0).await.unwrap();
            let mut buf = [0u8; 64];
            let n = client.recv(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"ping");
            echo.await.unwrap();

            let (a, b) = UnixDatagram::pair().unwrap();
            let recv = pool::spawn(async move {
                let mut buf = [0u8; 64];
                let n = b.recv(&mut buf).await.unwrap();
                buf[..n].to_vec()
            });
            pool::time::sleep(std::time::Duration::from_millis(10)).await;
            a.send(b"one datagram").await.unwrap();
            assert_eq!(recv.await.unwrap(), b"one datagram");
        });
    });
}

#[test]
fn a_path_too_long_says_how_long_it_may_be() {
    let long = std::env::temp_dir().join("x".repeat(200));
    let err = UnixListener::bind(&long).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("107"), "{err}");
    let err = UnixDatagram::bind(&long).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    let err = pool().block_on(UnixStream::connect(&long)).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
}

#[test]
fn binding_a_path_that_exists_says_to_remove_it() {
    let path = SocketPath::new("inuse");
    let p = pool();
    let _first = p.block_on(async { UnixListener::bind(&path.0) }).unwrap();
    let err = p
        .block_on(async { UnixListener::bind(&path.0) })
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
    let message = err.to_string();
    assert!(
        message.contains(&*path.0.to_string_lossy()) && message.contains("remove"),
        "{message}"
    );
}

#[test]
fn connecting_to_a_missing_path_is_not_found_naming_it() {
    let path = SocketPath::new("missing");
    let err = pool().block_on(UnixStream::connect(&path.0)).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    assert!(
        err.to_string().contains(&*path.0.to_string_lossy()),
        "{err}"
    );
}

#[test]
fn a_pending_read_ends_with_an_error_when_its_pool_is_dropped() {
    watchdog("unix stream outlives its pool", 30, || {
        let p = pool();
        let (a, _b) = p.block_on(async { UnixStream::pair() }).unwrap();
        let reader = std::thread::spawn(move || {
            let mut a = a;
            // Off the pool: the read waits on the pool's driver, which goes
            // away under it.
            futures::executor::block_on(async {
                let mut buf = [0u8; 1];
                a.read(&mut buf).await
            })
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(p);
        let result = reader.join().unwrap();
        assert!(
            result.is_err(),
            "a read on a dropped pool's driver: {result:?}"
        );
    });
}
