//! The HTTP example as a real server: HTTP/1.1 keep-alive requests from
//! plain sockets, HTTP/2 requests from hyper's client on pool, a 404, and a
//! graceful exit on Ctrl-C (SIGINT).

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use tests::{watchdog, ListeningServer};

/// One HTTP/1.1 request on a kept-alive connection; the response's status
/// line and body.
fn get(stream: &mut TcpStream, path: &str) -> (String, String) {
    write!(stream, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (status.trim().to_string(), String::from_utf8(body).unwrap())
}

#[test]
fn http1_and_http2_requests_are_served_and_ctrl_c_stops_the_server() {
    let server = ListeningServer::start(
        Command::new(tests::example_binary("http"))
            .args(["--addr", "127.0.0.1:0", "--workers", "2"])
            .stderr(Stdio::null()),
    );
    let addr = server.addr.clone();

    let a = addr.clone();
    watchdog("http/1.1 clients", 60, move || {
        let clients: Vec<_> = (0..8)
            .map(|_| {
                let a = a.clone();
                std::thread::spawn(move || {
                    let mut s = TcpStream::connect(&a).unwrap();
                    for _ in 0..50 {
                        assert_eq!(
                            get(&mut s, "/"),
                            ("HTTP/1.1 200 OK".into(), "Hello, World!".into())
                        );
                    }
                    assert_eq!(get(&mut s, "/work?us=50").1, "Hello, World!");
                    assert_eq!(get(&mut s, "/nope").0, "HTTP/1.1 404 Not Found");
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
    });

    let a = addr.clone();
    watchdog("http/2 client", 60, move || {
        let pool = pool::Builder::new().worker_threads(1).build().unwrap();
        pool.block_on(async move {
            let stream = pool::net::TcpStream::connect(a.as_str()).await.unwrap();
            let (mut sender, conn) =
                hyper::client::conn::http2::Builder::new(pool::hyper::Executor::new())
                    .timer(pool::hyper::Timer::new())
                    .handshake(pool::hyper::Io::new(stream))
                    .await
                    .unwrap();
            pool::spawn(conn);
            for _ in 0..20 {
                let req = hyper::Request::get(format!("http://{a}/"))
                    .body(Empty::<Bytes>::new())
                    .unwrap();
                let resp = sender.send_request(req).await.unwrap();
                assert_eq!(resp.version(), hyper::Version::HTTP_2);
                assert_eq!(resp.status(), 200);
                let body = resp.into_body().collect().await.unwrap().to_bytes();
                assert_eq!(&body[..], b"Hello, World!");
            }
        });
    });

    // Ctrl-C: the server stops accepting, finishes its connections, exits 0.
    let (status, rest) = server.interrupt(20);
    assert!(status.success(), "{status:?}");
    assert_eq!(rest.trim(), "shut down after serving 9 connections");
}
