//! hyper 1.x on pool (feature `hyper`): a server for any tower or hyper
//! service, a client connector, and the runtime pieces under both.
//!
//! * [`serve`] serves HTTP/1 and HTTP/2 (with upgrades, such as websockets)
//!   on every connection a [`net::TcpListener`](crate::net::TcpListener) or
//!   [`net::UnixListener`](crate::net::UnixListener) accepts, for an axum
//!   `Router`, tonic's `Routes`, any `tower::Service` or `hyper::service::Service`,
//!   with [`Serve::with_graceful_shutdown`], and a 30 s limit on reading a
//!   request's head ([`Serve::header_read_timeout`]). Each request carries the
//!   client's address as a [`PeerAddr`] extension, and, with pool's cargo
//!   feature `axum`, as axum's `ConnectInfo` too, so axum's
//!   `ConnectInfo<SocketAddr>` extractor works as under `axum::serve`.
//! * [`Connector`] connects hyper-util's client (`hyper_util::client::legacy::Client`)
//!   over [`net::TcpStream`](crate::net::TcpStream), resolving names off the workers.
//! * [`Io`] turns any futures-io stream into hyper's `rt::Read` + `rt::Write`;
//!   [`Executor`] spawns hyper's background futures on the current pool;
//!   [`Timer`] gives hyper `pool::time` sleeps.
//!
//! None of them needs a tokio runtime.
//!
//! # Examples
//!
//! ```no_run
//! use http_body_util::Full;
//! use hyper::body::{Bytes, Incoming};
//! use hyper::{Request, Response};
//! use std::convert::Infallible;
//!
//! async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
//!     Ok(Response::new(Full::new(Bytes::from("hello"))))
//! }
//!
//! #[pool::main]
//! async fn main() -> std::io::Result<()> {
//!     let listener = pool::net::TcpListener::bind("127.0.0.1:8080").await?;
//!     pool::hyper::serve(listener, hyper::service::service_fn(hello))
//!         .with_graceful_shutdown(async {
//!             let _ = pool::signal::ctrl_c().await;
//!         })
//!         .await
//! }
//! ```

pub(crate) mod connector;
pub(crate) mod rt;
pub(crate) mod serve;

pub use connector::Connector;
pub use rt::{Executor, Io, Timer};
pub use serve::{serve, Hyper, IntoHyperService, Listener, PeerAddr, Serve, Tower};
