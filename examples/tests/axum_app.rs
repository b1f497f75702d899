//! The axum example in its own process: every route over real HTTP, the
//! tower timeout layer firing, and a graceful shutdown on Ctrl-C that lets
//! the request in flight finish and refuses new connections.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use tests::{example_binary, watchdog, ListeningServer};

/// One HTTP/1.1 request on a new connection: (status, body, the client's
/// own address).
fn http(addr: &str, method: &str, path: &str, json: Option<&str>) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = json.unwrap_or("");
    let kind = if json.is_some() {
        "content-type: application/json\r\n"
    } else {
        ""
    };
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{kind}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let status = reply[9..12].parse().unwrap();
    let body = reply.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body, s.local_addr().unwrap().to_string())
}

fn start() -> ListeningServer {
    ListeningServer::start(
        std::process::Command::new(example_binary("axum_app")).arg("127.0.0.1:0"),
    )
}

#[test]
fn every_route_over_real_http() {
    watchdog("axum example: routes", 60, || {
        let server = start();
        let addr = server.addr.as_str();
        assert_eq!(http(addr, "GET", "/", None).0, 200);
        assert_eq!(http(addr, "GET", "/", None).1, "hello from axum");

        let (status, body, _) = http(addr, "GET", "/users/1", None);
        assert_eq!((status, body.as_str()), (200, r#"{"id":1,"name":"ada"}"#));

        let (status, body, _) = http(addr, "POST", "/users", Some(r#"{"name":"grace"}"#));
        assert_eq!((status, body.as_str()), (201, r#"{"id":2,"name":"grace"}"#));
        let (status, body, _) = http(addr, "GET", "/users", None);
        assert_eq!(
            (status, body.as_str()),
            (200, r#"[{"id":1,"name":"ada"},{"id":2,"name":"grace"}]"#)
        );
        assert_eq!(http(addr, "POST", "/users", Some(r#"{"nom":1}"#)).0, 422);

        let (status, body, _) = http(addr, "GET", "/users/99", None);
        assert_eq!((status, body.as_str()), (404, r#"{"error":"no user 99"}"#));

        // The peer's address, from pool::hyper::serve.
        let (status, body, me) = http(addr, "GET", "/whoami", None);
        assert_eq!((status, body), (200, me));

        // tokio's timer inside the handler, and tower-http's timeout
        // layer (tokio's timer too) cutting off what takes too long.
        assert_eq!(http(addr, "GET", "/sleep/10", None).1, "slept 10 ms");
        assert_eq!(http(addr, "GET", "/sleep/5000", None).0, 408);
    });
}

#[test]
fn ctrl_c_finishes_the_request_in_flight_and_refuses_new_ones() {
    watchdog("axum example: graceful shutdown", 60, || {
        let server = start();
        let addr = server.addr.clone();
        let in_flight = std::thread::spawn(move || http(&addr, "GET", "/sleep/300", None));
        std::thread::sleep(Duration::from_millis(100));
        server.signal(libc::SIGINT);
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            TcpStream::connect(&server.addr).is_err(),
            "no new connection after Ctrl-C"
        );
        let (status, body, _) = in_flight.join().unwrap();
        assert_eq!((status, body.as_str()), (200, "slept 300 ms"));
        let (status, rest) = server.wait(10);
        assert!(status.success(), "{status}");
        assert_eq!(rest, "shut down\n");
    });
}
