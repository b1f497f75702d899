//! `pool::hyper::serve` and `pool::hyper::Connector`: HTTP/1 and HTTP/2,
//! tower and hyper services, the peer's address, upgrades, Unix sockets,
//! graceful shutdown; all on pool, no tokio runtime.

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use pool::hyper::{Connector, Executor, PeerAddr, Timer};
use pool::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;
use tests::watchdog;

type Body = Full<Bytes>;

fn pool() -> pool::Pool {
    pool::Builder::new().worker_threads(2).build().unwrap()
}

fn text(s: impl Into<String>) -> Response<Body> {
    Response::new(Full::new(Bytes::from(s.into())))
}

/// Says the path and the peer's address.
async fn whoami(req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let peer = req.extensions().get::<PeerAddr<SocketAddr>>().map(|p| p.0);
    Ok(text(format!("{} from {peer:?}", req.uri().path())))
}

fn client(http2: bool) -> Client<Connector, Empty<Bytes>> {
    Client::builder(Executor::new())
        .timer(Timer::new())
        .http2_only(http2)
        .build(Connector::new())
}

async fn get(client: &Client<Connector, Empty<Bytes>>, url: &str) -> (StatusCode, String) {
    let response = client.get(url.parse().unwrap()).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// A raw HTTP/1.1 request on a std socket; the whole reply (the server
/// closes after it).
fn raw_request(addr: SocketAddr, request: &str) -> (String, SocketAddr) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    (reply, s.local_addr().unwrap())
}

/// `raw_request` of `GET path` (the connection closed after it), on a
/// blocking thread: the whole reply, and the client's own address.
async fn raw_get(addr: SocketAddr, path: &str) -> (String, SocketAddr) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    pool::spawn_blocking(move || raw_request(addr, &request))
        .await
        .unwrap()
}

#[test]
fn a_hyper_service_over_http1_and_http2_with_the_peer_address() {
    watchdog("serve: hyper service", 30, || {
        pool().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = pool::spawn(pool::hyper::serve(
                listener,
                hyper::service::service_fn(whoami),
            ));
            let url = format!("http://{addr}/a");
            for http2 in [false, true] {
                let (status, body) = get(&client(http2), &url).await;
                assert_eq!(status, StatusCode::OK);
                assert!(body.starts_with("/a from Some(127.0.0.1:"), "{body}");
            }
            // The address is this connection's peer, the client's own.
            let (reply, local) = raw_get(addr, "/b").await;
            assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
            assert!(
                reply.ends_with(&format!("/b from Some({local})")),
                "{reply}"
            );
            assert!(!server.is_finished(), "the server goes on");
        });
    });
}

#[test]
fn a_tower_service_is_served_too() {
    watchdog("serve: tower service", 30, || {
        pool().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let service = tower::service_fn(|req: Request<Incoming>| async move {
                Ok::<_, Infallible>(text(format!("tower {}", req.method())))
            });
            let _server = pool::spawn(pool::hyper::serve(listener, service));
            let (status, body) = get(&client(false), &format!("http://{addr}/")).await;
            assert_eq!((status, body.as_str()), (StatusCode::OK, "tower GET"));
        });
    });
}

#[test]
fn an_upgraded_connection_is_handed_to_the_service() {
    watchdog("serve: upgrade", 30, || {
        pool().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            // Answers `Upgrade: echo` with 101, then echoes bytes.
            let service = hyper::service::service_fn(|mut req: Request<Incoming>| async move {
                let upgrade = hyper::upgrade::on(&mut req);
                pool::spawn(async move {
                    let upgraded = upgrade.await.unwrap();
                    let mut io = FuturesIo(upgraded);
                    let mut buf = [0; 4];
                    futures::AsyncReadExt::read_exact(&mut io, &mut buf)
                        .await
                        .unwrap();
                    futures::AsyncWriteExt::write_all(&mut io, &buf)
                        .await
                        .unwrap();
                });
                let mut response = Response::new(Full::new(Bytes::new()));
                *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
                response
                    .headers_mut()
                    .insert("upgrade", "echo".parse().unwrap());
                response
                    .headers_mut()
                    .insert("connection", "upgrade".parse().unwrap());
                Ok::<_, Infallible>(response)
            });
            let _server = pool::spawn(pool::hyper::serve(listener, service));
            let reply = pool::spawn_blocking(move || {
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                s.write_all(
                    b"GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n",
                )
                .unwrap();
                let mut head = Vec::new();
                while !head.ends_with(b"\r\n\r\n") {
                    let mut byte = [0];
                    s.read_exact(&mut byte).unwrap();
                    head.push(byte[0]);
                }
                s.write_all(b"ping").unwrap();
                let mut echo = [0; 4];
                s.read_exact(&mut echo).unwrap();
                (String::from_utf8(head).unwrap(), echo)
            })
            .await
            .unwrap();
            assert!(reply.0.starts_with("HTTP/1.1 101"), "{}", reply.0);
            assert_eq!(&reply.1, b"ping");
        });
    });
}

/// hyper's `Upgraded` (hyper's rt traits) as futures-io, for the test.
struct FuturesIo(hyper::upgrade::Upgraded);

impl futures::AsyncRead for FuturesIo {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut [u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let mut rb = hyper::rt::ReadBuf::new(buf);
        std::task::ready!(hyper::rt::Read::poll_read(
            std::pin::Pin::new(&mut self.0),
            cx,
            rb.unfilled()
        ))?;
        std::task::Poll::Ready(Ok(rb.filled().len()))
    }
}

impl futures::AsyncWrite for FuturesIo {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        hyper::rt::Write::poll_write(std::pin::Pin::new(&mut self.0), cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        hyper::rt::Write::poll_flush(std::pin::Pin::new(&mut self.0), cx)
    }

    fn poll_close(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        hyper::rt::Write::poll_shutdown(std::pin::Pin::new(&mut self.0), cx)
    }
}

#[test]
fn a_unix_listener_is_served_with_its_peer_address() {
    watchdog("serve: unix", 30, || {
        let dir = std::env::temp_dir().join(format!("pool-hyper-serve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("http.sock");
        let _ = std::fs::remove_file(&path);
        pool().block_on(async {
            let listener = UnixListener::bind(&path).unwrap();
            let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
                let peer = req
                    .extensions()
                    .get::<PeerAddr<std::os::unix::net::SocketAddr>>()
                    .is_some();
                Ok::<_, Infallible>(text(format!("unix peer {peer}")))
            });
            let _server = pool::spawn(pool::hyper::serve(listener, service));
            let stream = UnixStream::connect(&path).await.unwrap();
            let (mut sender, conn) =
                hyper::client::conn::http1::handshake(pool::hyper::Io::new(stream))
                    .await
                    .unwrap();
            pool::spawn(conn);
            let request = Request::get("/").body(Empty::<Bytes>::new()).unwrap();
            let response = sender.send_request(request).await.unwrap();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&body[..], b"unix peer true");
        });
        std::fs::remove_dir_all(&dir).unwrap();
    });
}

#[test]
fn graceful_shutdown_finishes_the_request_in_flight_and_refuses_new_ones() {
    watchdog("serve: graceful shutdown", 30, || {
        pool().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (arrived_tx, arrived) = futures::channel::oneshot::channel::<()>();
            let arrived_tx = std::sync::Mutex::new(Some(arrived_tx));
            let arrived_tx = std::sync::Arc::new(arrived_tx);
            let service = hyper::service::service_fn(move |_: Request<Incoming>| {
                let arrived_tx = arrived_tx.clone();
                async move {
                    if let Some(tx) = arrived_tx.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                    pool::time::sleep(Duration::from_millis(300)).await;
                    Ok::<_, Infallible>(text("finished"))
                }
            });
            let (stop_tx, stop) = futures::channel::oneshot::channel::<()>();
            let server = pool::spawn(
                pool::hyper::serve(listener, service).with_graceful_shutdown(async move {
                    let _ = stop.await;
                }),
            );
            let in_flight =
                pool::spawn(
                    async move { get(&client(false), &format!("http://{addr}/slow")).await },
                );
            arrived.await.unwrap();
            stop_tx.send(()).unwrap();
            // The listener closes: a new connection is refused (retry while
            // the accept loop is getting there).
            let mut refused = false;
            for _ in 0..200 {
                if TcpStream::connect(addr).await.is_err() {
                    refused = true;
                    break;
                }
                pool::time::sleep(Duration::from_millis(5)).await;
            }
            assert!(refused, "new connections are refused after the signal");
            let (status, body) = in_flight.await.unwrap();
            assert_eq!((status, body.as_str()), (StatusCode::OK, "finished"));
            // And the server returns once that connection closed.
            pool::time::timeout(Duration::from_secs(5), server)
                .await
                .expect("serve returns after its last connection")
                .unwrap()
                .unwrap();
        });
    });
}

/// An idle keep-alive connection is closed by the signal: its task last
/// polled the signal long before (a connection polls it once per waker,
/// then reads a flag), so the signal's wake is what reaches it.
#[test]
fn graceful_shutdown_closes_an_idle_keep_alive_connection() {
    watchdog("serve: graceful shutdown of an idle connection", 30, || {
        pool().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (stop_tx, stop) = futures::channel::oneshot::channel::<()>();
            let server = pool::spawn(
                pool::hyper::serve(listener, hyper::service::service_fn(whoami))
                    .with_graceful_shutdown(async move {
                        let _ = stop.await;
                    }),
            );
            // Two requests answered on one connection, which stays open.
            let mut socket = pool::spawn_blocking(move || {
                let mut socket = std::net::TcpStream::connect(addr).unwrap();
                socket
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                for _ in 0..2 {
                    socket
                        .write_all(b"GET /idle HTTP/1.1\r\nHost: x\r\n\r\n")
                        .unwrap();
                    let mut reply = Vec::new();
                    let mut buf = [0u8; 1024];
                    // The body is `/idle from Some(ADDRESS)`.
                    while !reply.ends_with(b")") {
                        let n = socket.read(&mut buf).unwrap();
                        assert!(n > 0, "the connection is answered, not closed");
                        reply.extend_from_slice(&buf[..n]);
                    }
                }
                socket
            })
            .await
            .unwrap();
            pool::time::sleep(Duration::from_millis(50)).await;
            stop_tx.send(()).unwrap();
            let read = pool::spawn_blocking(move || socket.read(&mut [0u8; 64]))
                .await
                .unwrap();
            assert_eq!(
                read.expect("the server closes the idle connection within 10 s"),
                0,
                "the idle connection is closed with no more bytes"
            );
            pool::time::timeout(Duration::from_secs(5), server)
                .await
                .expect("serve returns once the idle connection closed")
                .unwrap()
                .unwrap();
        });
    });
}

#[test]
fn the_connector_refuses_https_unless_told_and_resolves_names() {
    watchdog("connector", 30, || {
        pool().block_on(async {
            use tower::ServiceExt;
            let err = Connector::new()
                .oneshot("https://example.invalid/".parse().unwrap())
                .await
                .unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains("enforce_http(false)"), "{err}");

            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let _server = pool::spawn(pool::hyper::serve(
                listener,
                hyper::service::service_fn(whoami),
            ));
            let (status, body) = get(&client(false), &format!("http://localhost:{port}/n")).await;
            assert_eq!(status, StatusCode::OK);
            assert!(body.starts_with("/n from"), "{body}");
        });
    });
}

/// With pool's `axum` feature, axum's own `ConnectInfo<SocketAddr>`
/// extractor works under `pool::hyper::serve` (without it, axum answers
/// 500: "Missing request extension").
#[test]
fn axum_connect_info_is_the_peer_address() {
    use axum::extract::ConnectInfo;
    watchdog("serve: axum ConnectInfo", 30, || {
        pool().block_on(async {
            let app = axum::Router::new().route(
                "/",
                axum::routing::get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move {
                    format!("peer {peer}")
                }),
            );
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = pool::spawn(pool::hyper::serve(listener, app));
            let (reply, local) = raw_get(addr, "/").await;
            assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
            assert!(reply.ends_with(&format!("peer {local}")), "{reply}");
            server.abort();
        });
    });
}

/// A handler that panics closes its own connection (the client gets no
/// reply; serve says why on stderr, in pool's words) and nothing else: the
/// server keeps serving the next connection.
#[test]
fn a_panicking_handler_closes_its_connection_and_the_server_goes_on() {
    watchdog("serve: handler panics", 30, || {
        pool().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
                if req.uri().path() == "/panic" {
                    panic!("handler bug");
                }
                Ok::<_, Infallible>(text("fine"))
            });
            let server = pool::spawn(pool::hyper::serve(listener, service));
            assert_eq!(raw_get(addr, "/panic").await.0, "", "a reply after a panic");
            let (reply, _) = raw_get(addr, "/ok").await;
            assert!(
                reply.starts_with("HTTP/1.1 200") && reply.ends_with("fine"),
                "{reply}"
            );
            assert!(!server.is_finished(), "serve ended with a handler's panic");
            server.abort();
        });
    });
}

/// A connection's task was spawned by pool, for the user: its spawn site
/// (in the dump, a stall report, the console) is the user's `serve` call,
/// not a line inside pool.
#[test]
fn a_connection_task_is_spawned_at_the_serve_call() {
    watchdog("serve: the spawn site", 30, || {
        pool().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            // The handler says where its own task (the connection's) was spawned.
            let service = tower::service_fn(|_: Request<Incoming>| async move {
                let id = pool::task_id().expect("a handler runs in a task");
                let tasks = pool::Handle::current().tasks();
                let me = tasks.iter().find(|t| t.id == id).expect("listed");
                Ok::<_, Infallible>(text(me.spawned_at.to_string()))
            });
            let serve_line = line!() + 1;
            let _server = pool::spawn(pool::hyper::serve(listener, service));
            let (status, body) = get(&client(false), &format!("http://{addr}/")).await;
            assert_eq!(status, StatusCode::OK);
            assert!(
                body.ends_with(&format!("hyper_serve.rs:{serve_line}:39")),
                "the connection's task was spawned at {body}"
            );
        });
    });
}

/// Half a request head on a std socket to `addr`, then `hold` of silence:
/// how long the server took to close the connection (`None`: still open
/// after `hold`, and then the rest of the head is answered).
fn trickled_head(addr: SocketAddr, hold: Duration) -> Option<Duration> {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n").unwrap();
    let sent = std::time::Instant::now();
    s.set_read_timeout(Some(hold)).unwrap();
    let mut buf = [0u8; 1024];
    match s.read(&mut buf) {
        Ok(0) => return Some(sent.elapsed()),
        Ok(n) => panic!(
            "the server answered half a head: {:?}",
            String::from_utf8_lossy(&buf[..n])
        ),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Some(sent.elapsed()),
        Err(e) => assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{e}"
        ),
    }
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"Connection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    None
}

/// `Serve::header_read_timeout`: a connection that sends half a head is
/// closed once the timeout passes; with `None` it waits for the rest; zero
/// is refused with `InvalidInput` when the server starts.
#[test]
fn the_header_read_timeout_closes_a_trickling_connection_and_can_be_turned_off() {
    watchdog("serve: header read timeout", 30, || {
        pool().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = pool::spawn(
                pool::hyper::serve(listener, hyper::service::service_fn(whoami))
                    .header_read_timeout(Duration::from_millis(200)),
            );
            let closed = pool::spawn_blocking(move || trickled_head(addr, Duration::from_secs(5)))
                .await
                .unwrap()
                .expect("a connection with half a head is closed after 200 ms, not held 5 s");
            assert!(
                closed >= Duration::from_millis(150),
                "closed after {closed:?}, before the 200 ms timeout"
            );
            server.abort();

            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = pool::spawn(
                pool::hyper::serve(listener, hyper::service::service_fn(whoami))
                    .header_read_timeout(None),
            );
            let closed =
                pool::spawn_blocking(move || trickled_head(addr, Duration::from_millis(500)))
                    .await
                    .unwrap();
            assert_eq!(closed, None, "with no timeout the head's rest is awaited");
            server.abort();

            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let refused = pool::hyper::serve(listener, hyper::service::service_fn(whoami))
                .header_read_timeout(Duration::ZERO)
                .await
                .expect_err("a zero header read timeout is refused");
            assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
            assert!(
                refused.to_string().contains("header_read_timeout"),
                "{refused}"
            );
        });
    });
}
