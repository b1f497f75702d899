//! Host names are resolved on a blocking thread, IP literals where they are.

use pool::net::{lookup_host, TcpListener, TcpStream, UdpSocket};
use pool::Builder;
use std::io;

#[test]
fn lookup_host_resolves_names_and_reports_unknown_ones() {
    let p = Builder::new().worker_threads(2).build().unwrap();
    p.block_on(async {
        let addrs: Vec<_> = lookup_host("localhost:8080").await.unwrap().collect();
        assert!(!addrs.is_empty());
        assert!(
            addrs
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 8080),
            "{addrs:?}"
        );
        let literal: Vec<_> = lookup_host("[::1]:9").await.unwrap().collect();
        assert_eq!(literal, ["[::1]:9".parse().unwrap()]);
        let Err(err) = lookup_host("no port here").await else {
            panic!("a host without a port resolved");
        };
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        // `.invalid` never resolves (RFC 6761).
        assert!(lookup_host("pool-test.invalid:80").await.is_err());
    });
}

#[test]
fn ip_literals_stay_on_the_worker_and_host_names_go_to_a_blocking_thread() {
    let p = Builder::new().worker_threads(2).build().unwrap();
    p.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let _s = TcpStream::connect(format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        let _s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let _u = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        assert_eq!(
            pool::Handle::current().metrics().blocking_threads,
            0,
            "an IP literal needs no lookup thread"
        );
        let _s = TcpStream::connect(("localhost", port)).await;
        assert!(
            pool::Handle::current().metrics().blocking_threads >= 1,
            "a host name is looked up on a blocking thread"
        );
    });
}
