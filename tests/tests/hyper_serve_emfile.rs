//! `pool::hyper::serve` out of descriptors: the accept loop waits and tries
//! again instead of ending. Its own test binary: it lowers the process's
//! descriptor limit.

use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use pool::net::TcpListener;
use std::convert::Infallible;
use std::io::{Read, Write};
use std::time::Duration;
use tests::watchdog;

#[test]
fn serve_backs_off_on_emfile_and_serves_once_descriptors_are_free() {
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
        // Descriptors run out, but for the one a client connects with: the
        // server's accept of it fails with EMFILE.
        let mut hogs = tests::use_up_descriptors(256);
        drop(hogs.pop());
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        // Several accepts fail meanwhile (1, 2, 4, ... ms apart).
        std::thread::sleep(Duration::from_millis(100));
        assert!(!server.is_finished(), "serve did not end on EMFILE");
        drop(hogs);
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut reply = String::new();
        client.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
        assert!(reply.ends_with("served"), "{reply}");
    });
}
