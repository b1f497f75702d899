//! `pool::hyper::serve` out of descriptors: the connection that came while
//! the table was full is answered with a reset (not left hanging), the
//! accept loop goes on, and serves again once descriptors are free. Its own
//! test binary: it lowers the process's descriptor limit.

use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use pool::net::TcpListener;
use std::convert::Infallible;
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use tests::watchdog;

#[test]
fn serve_answers_the_head_at_emfile_and_serves_once_descriptors_are_free() {
    watchdog("serve: EMFILE", 30, || {
        let p = pool::Builder::new().worker_threads(2).build().unwrap();
        let listener = p.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let service = hyper::service::service_fn(|_: Request<Incoming>| async {
            Ok::<_, Infallible>(Response::new(http_body_util::Full::new(Bytes::from(
                "served",
            ))))
        });
        let server = p.spawn(pool::hyper::serve(listener, service));
        // One request served first: the accept loop is then waiting for the
        // next connection, and no accept races the filling of the table
        // below (an accept at EMFILE meanwhile could lose the listener's
        // spare descriptor to it: `net/spare_fd.rs`).
        assert!(get(addr).ends_with("served"));
        // Its connection's task gone, with its descriptor: only serve is left.
        tests::wait_for(
            "the first connection to close",
            Duration::from_secs(10),
            || p.metrics().alive_tasks == 1,
        );
        // Descriptors run out, but for the one a client connects with: the
        // server's accept of it fails with EMFILE.
        let mut hogs = tests::use_up_descriptors(256);
        drop(hogs.pop());
        let started = Instant::now();
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let err = client.read(&mut [0; 16]).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "the reset took {:?}",
            started.elapsed()
        );
        assert_eq!(p.metrics().accept_errors, 1);
        assert!(!server.is_finished(), "serve did not end on EMFILE");
        drop(client);
        drop(hogs);
        let reply = get(addr);
        assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
        assert!(reply.ends_with("served"), "{reply}");
    });
}

/// One HTTP/1.1 GET of `/`, its whole reply.
fn get(addr: std::net::SocketAddr) -> String {
    let mut client = std::net::TcpStream::connect(addr).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    client.read_to_string(&mut reply).unwrap();
    reply
}
