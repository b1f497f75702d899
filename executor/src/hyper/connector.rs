//! `Connector`: hyper-util's legacy client over pool's TCP streams.

use super::rt::Io;
use crate::net::tcp::TcpStream;
use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A connector for `hyper_util::client::legacy::Client` on
/// [`net::TcpStream`](crate::net::TcpStream): plain HTTP with no tokio
/// runtime, host names resolved on a blocking thread
/// ([`net::lookup_host`](crate::net::lookup_host)), `TCP_NODELAY` on.
///
/// For HTTPS, wrap it in a TLS connector that takes any inner connector
/// (hyper-rustls's `HttpsConnector::from((connector, tls_config))`) after
/// [`enforce_http(false)`](Connector::enforce_http).
///
/// # Examples
///
/// ```no_run
/// use http_body_util::Empty;
/// use hyper::body::Bytes;
/// use hyper_util::client::legacy::Client;
///
/// # pool::block_on(async {
/// let client = Client::builder(pool::hyper::Executor::new())
///     .timer(pool::hyper::Timer::new())
///     .build::<_, Empty<Bytes>>(pool::hyper::Connector::new());
/// let response = client.get("http://127.0.0.1:8080/".parse()?).await?;
/// assert!(response.status().is_success());
/// # Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct Connector {
    enforce_http: bool,
    nodelay: bool,
    connect_timeout: Option<Duration>,
}

impl Default for Connector {
    fn default() -> Connector {
        Connector::new()
    }
}

impl Connector {
    /// A connector for `http://` URIs, `TCP_NODELAY` on, no connect timeout.
    pub fn new() -> Connector {
        Connector {
            enforce_http: true,
            nodelay: true,
            connect_timeout: None,
        }
    }

    /// Refuse URIs whose scheme is not `http` (the default, `true`); a TLS
    /// connector wrapping this one sets it to `false` to be handed
    /// `https://` URIs (port 443 unless the URI says).
    pub fn enforce_http(mut self, on: bool) -> Connector {
        self.enforce_http = on;
        self
    }

    /// `TCP_NODELAY` on new connections (default `true`).
    pub fn nodelay(mut self, on: bool) -> Connector {
        self.nodelay = on;
        self
    }

    /// Fail a connect (the name lookup included) that takes longer than
    /// `timeout` with `TimedOut` (default: none).
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Connector {
        self.connect_timeout = timeout;
        self
    }

    async fn connect(self, uri: Uri) -> io::Result<Io<TcpStream>> {
        let scheme = uri.scheme_str().unwrap_or("http");
        if self.enforce_http && scheme != "http" {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "pool::hyper::Connector connects plain http, not `{scheme}://` ({uri}): \
                     wrap it in a TLS connector and call enforce_http(false)"
                ),
            ));
        }
        let host = uri.host().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the URI `{uri}` has no host to connect to"),
            )
        })?;
        // `[::1]` in a URI is the address `::1`.
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri
            .port_u16()
            .unwrap_or(if scheme == "https" { 443 } else { 80 });
        let connect = TcpStream::connect((host, port));
        let stream = match self.connect_timeout {
            Some(limit) => crate::time::timeout(limit, connect).await.map_err(|_| {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connecting to {uri} took longer than {limit:?}"),
                )
            })??,
            None => connect.await?,
        };
        if self.nodelay {
            stream.set_nodelay(true)?;
        }
        Ok(Io::new(stream))
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = Io<TcpStream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Io<TcpStream>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(self.clone().connect(uri))
    }
}

impl Connection for Io<TcpStream> {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}
