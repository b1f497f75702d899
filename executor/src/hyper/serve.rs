//! `serve`: an accept loop and one task per connection, HTTP/1 and HTTP/2
//! chosen per connection (hyper-util's `auto` builder), with upgrades.
//!
//! # How it behaves
//!
//! * Every accepted connection becomes a task of the current pool; TCP
//!   connections get `TCP_NODELAY` (unless [`Serve::tcp_nodelay`] says not).
//! * An accept error that concerns one connection (reset or aborted before
//!   it was accepted) is skipped. Running out of a resource does not end
//!   the server. Out of descriptors (`EMFILE`, `ENFILE`), pool's listener
//!   has already answered the oldest pending connection with a reset
//!   through its spare descriptor (`net/spare_fd.rs`), and the loop accepts
//!   again at once: each such accept answers one more pending connection,
//!   or finds none and waits for the next, so it cannot spin. A listener
//!   without its spare (lost to another thread, or not pool's) answers no
//!   one and stays readable: then the loop waits 1 ms between tries. So
//!   every pending connection is answered or served within milliseconds,
//!   and serving resumes as soon as open connections free descriptors.
//!   Out of memory (`ENOMEM`, `ENOBUFS`) it waits 1 ms at
//!   first, doubling up to 1 s. Either is written to stderr at most once a
//!   second (`AcceptErrorLog`), with the count since the last line. Any
//!   other error ends `serve` with that error.
//! * Graceful shutdown: when the signal completes, the listener is dropped
//!   (new connections are refused), every open connection is told to finish
//!   (HTTP/1: after its in-flight request, HTTP/2: a GOAWAY), and `serve`
//!   returns once all of them are closed. Bound it with
//!   [`time::timeout`](crate::time::timeout) if a client may hold on.

use super::rt::{Executor, Io, Timer};
use crate::net::spare_fd::is_out_of_descriptors;
use crate::net::tcp::TcpListener;
use crate::net::tcp::TcpStream;
use crate::net::unix::UnixListener;
use crate::net::unix::UnixStream;
use futures::channel::{mpsc, oneshot};
use futures::future::{Either, FutureExt, Shared};
use futures::io::{AsyncRead, AsyncWrite};
use futures::StreamExt;
use hyper::body::{Body, Incoming};
use hyper::{Request, Response};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::error::Error as StdError;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::panic::{AssertUnwindSafe, Location};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

type BoxError = Box<dyn StdError + Send + Sync>;

/// Something [`serve`] accepts connections from: pool's
/// [`TcpListener`] and [`UnixListener`].
pub trait Listener: Send + Sync + 'static {
    /// An accepted connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The peer's address, handed to each request as [`PeerAddr`].
    type Addr: Clone + Send + Sync + 'static;

    /// Accept a connection, or register to be woken when one arrives.
    fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(Self::Io, Self::Addr)>>;

    /// `poll_accept`, for [`serve`] called at `at`: pool's listeners make
    /// the connection's socket there (what a task waiting on it says,
    /// `TaskInfo::waiting_on`). Any other listener's is `poll_accept`.
    #[doc(hidden)]
    fn poll_accept_made_at(
        &self,
        cx: &mut Context<'_>,
        at: &'static Location<'static>,
    ) -> Poll<io::Result<(Self::Io, Self::Addr)>> {
        let _ = at;
        self.poll_accept(cx)
    }

    /// Set `TCP_NODELAY` on `io`, where it applies (not on Unix sockets).
    fn set_nodelay(io: &Self::Io, on: bool) -> io::Result<()>;

    /// Does an accept that fails for want of descriptors answer a pending
    /// connection (pool's listeners, while they hold their spare)? Then
    /// [`serve`] accepts again at once; else it waits 1 ms first, so as not
    /// to spin on a listener that stays readable.
    #[doc(hidden)]
    fn answers_at_emfile(&self) -> bool {
        false
    }
}

impl Listener for TcpListener {
    type Io = TcpStream;
    type Addr = std::net::SocketAddr;

    #[track_caller]
    fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, Self::Addr)>> {
        TcpListener::poll_accept(self, cx)
    }

    fn poll_accept_made_at(
        &self,
        cx: &mut Context<'_>,
        at: &'static Location<'static>,
    ) -> Poll<io::Result<(TcpStream, Self::Addr)>> {
        self.poll_accept_at(cx, at)
    }

    fn set_nodelay(io: &TcpStream, on: bool) -> io::Result<()> {
        io.set_nodelay(on)
    }

    fn answers_at_emfile(&self) -> bool {
        TcpListener::answers_at_emfile(self)
    }
}

impl Listener for UnixListener {
    type Io = UnixStream;
    type Addr = std::os::unix::net::SocketAddr;

    #[track_caller]
    fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(UnixStream, Self::Addr)>> {
        UnixListener::poll_accept(self, cx)
    }

    fn poll_accept_made_at(
        &self,
        cx: &mut Context<'_>,
        at: &'static Location<'static>,
    ) -> Poll<io::Result<(UnixStream, Self::Addr)>> {
        self.poll_accept_at(cx, at)
    }

    fn set_nodelay(_: &UnixStream, _: bool) -> io::Result<()> {
        Ok(())
    }

    fn answers_at_emfile(&self) -> bool {
        UnixListener::answers_at_emfile(self)
    }
}

/// The client's address, in every request's extensions (axum:
/// `Extension<PeerAddr<SocketAddr>>`, or, with pool's cargo feature `axum`,
/// axum's own `ConnectInfo<SocketAddr>`; hyper:
/// `req.extensions().get::<PeerAddr<_>>()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerAddr<A>(pub A);

/// A service [`serve`] can run: a `tower::Service` ([`Tower`]) or a
/// `hyper::service::Service` ([`Hyper`]) of `Request<Incoming>` that
/// answers with an `http::Response`. The marker is inferred; a type that
/// is both needs it named: `serve::<_, _, pool::hyper::Tower>(..)`.
#[diagnostic::on_unimplemented(
    message = "pool::hyper::serve cannot serve `{Self}`: it takes the service itself, one that answers a `Request<Incoming>` with a `Response`",
    label = "not a service of requests",
    note = "pass an axum `Router` as it is (`serve(listener, app)`), or any `tower::Service` or `hyper::service::Service` of `Request<Incoming>`",
    note = "not a make-service such as `app.into_make_service()` or `app.into_make_service_with_connect_info::<SocketAddr>()`: serve already puts the client's address into every request (`pool::hyper::PeerAddr`, and axum's `ConnectInfo` with pool's cargo feature `axum`)"
)]
pub trait IntoHyperService<Marker> {
    /// The service as hyper calls it.
    type Service;

    /// Convert.
    fn into_hyper_service(self) -> Self::Service;
}

/// Marks a `tower::Service` for [`IntoHyperService`].
#[derive(Debug)]
pub enum Tower {}

/// Marks a `hyper::service::Service` for [`IntoHyperService`].
#[derive(Debug)]
pub enum Hyper {}

/// A response `serve` can write: an `http::Response`. (A make-service
/// answers with a service instead, and is refused at the `serve` call.)
/// Public in a private module: nothing outside pool can name it or
/// implement it.
pub trait HttpResponse {}

impl<B> HttpResponse for Response<B> {}

impl<S> IntoHyperService<Tower> for S
where
    S: tower_service::Service<Request<Incoming>> + Clone,
    S::Response: HttpResponse,
{
    type Service = TowerToHyperService<S>;

    fn into_hyper_service(self) -> Self::Service {
        TowerToHyperService::new(self)
    }
}

impl<S> IntoHyperService<Hyper> for S
where
    S: hyper::service::Service<Request<Incoming>> + Clone,
    S::Response: HttpResponse,
{
    type Service = S;

    fn into_hyper_service(self) -> S {
        self
    }
}

/// Serve HTTP/1 and HTTP/2 on every connection `listener` accepts, each in
/// a task of the current pool; see the [module docs](super) and
/// [`Serve`]. Await it (it runs until its listener fails for good, or
/// until its graceful shutdown is done).
///
/// # Examples
///
/// An axum app (`axum::Router` is a `tower::Service`):
///
/// ```ignore
/// let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
/// let listener = pool::net::TcpListener::bind("127.0.0.1:3000").await?;
/// pool::hyper::serve(listener, app).await?;
/// ```
#[track_caller]
pub fn serve<L, S, M>(listener: L, service: S) -> Serve<L, S::Service>
where
    L: Listener,
    S: IntoHyperService<M>,
{
    Serve {
        state: State::Setup(Setup {
            listener,
            service: service.into_hyper_service(),
            nodelay: true,
            header_read_timeout: Some(HEADER_READ_TIMEOUT),
            shutdown: None,
            at: Location::caller(),
        }),
    }
}

/// The server [`serve`] returns: set it up, then `.await` it or spawn it
/// (it is a `Future`, `Send` and `'static`).
#[must_use = "a server does nothing until it is awaited or spawned"]
pub struct Serve<L, S> {
    state: State<L, S>,
}

enum State<L, S> {
    /// Not polled yet: the settings can still change.
    Setup(Setup<L, S>),
    /// Running.
    Running(Pin<Box<dyn Future<Output = io::Result<()>> + Send>>),
    /// Returned its result.
    Done,
}

struct Setup<L, S> {
    listener: L,
    service: S,
    nodelay: bool,
    /// `Serve::header_read_timeout`: checked when the server starts.
    header_read_timeout: Option<Duration>,
    shutdown: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Where the user called `serve`: the spawn site of its connections'
    /// tasks (the dump and a stall report name the user's line, not
    /// pool's).
    at: &'static Location<'static>,
}

impl<L, S> fmt::Debug for Serve<L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Setup(_) => "not started",
            State::Running(_) => "running",
            State::Done => "done",
        };
        f.debug_struct("Serve").field("state", &state).finish()
    }
}

impl<L, S> Serve<L, S> {
    fn setup(&mut self) -> &mut Setup<L, S> {
        match &mut self.state {
            State::Setup(setup) => setup,
            _ => unreachable!("a Serve is set up by value, before its first poll"),
        }
    }

    /// When `signal` completes: stop accepting, let every open connection
    /// finish, then return `Ok(())`.
    pub fn with_graceful_shutdown<F>(mut self, signal: F) -> Serve<L, S>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.setup().shutdown = Some(Box::pin(signal));
        self
    }

    /// Set `TCP_NODELAY` on every accepted TCP connection (the default:
    /// responses go out without waiting for Nagle's algorithm).
    pub fn tcp_nodelay(mut self, on: bool) -> Serve<L, S> {
        self.setup().nodelay = on;
        self
    }

    /// How long an HTTP/1 connection may take to send a request's head
    /// (its request line and headers), counted from when the server starts
    /// to read it, the wait of an idle keep-alive connection included;
    /// past it the connection is closed. The default, 30 seconds, protects
    /// against clients that trickle their headers in to hold connections
    /// (slowloris). `None` turns it off, as under `axum::serve`, which
    /// gives hyper no timer: each request then registers no timer (on a
    /// small JSON route, 3% of the server's CPU per request).
    ///
    /// # Errors
    ///
    /// Zero is refused when the server starts: awaiting it returns an
    /// `io::Error` of kind `InvalidInput` (every connection would close
    /// before its first request).
    pub fn header_read_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Serve<L, S> {
        self.setup().header_read_timeout = timeout.into();
        self
    }
}

// The running server is boxed: `Serve` moves nothing pinned.
impl<L, S> Unpin for Serve<L, S> {}

impl<L, S, B> Future for Serve<L, S>
where
    L: Listener,
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Setup(setup) => self.state = State::Running(Box::pin(run(setup))),
                State::Running(mut running) => {
                    let poll = running.as_mut().poll(cx);
                    if poll.is_pending() {
                        self.state = State::Running(running);
                    }
                    return poll;
                }
                State::Done => panic!("pool::hyper::Serve polled after it returned"),
            }
        }
    }
}

/// Is this accept error about one connection only (try the next at once)?
fn concerns_one_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

/// Is this accept error a resource running out (wait, then try again)?
fn out_of_resources(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::ENOBUFS)
    )
}

/// The accept errors of running out of a resource, written to stderr at
/// most once a second: the first at once, the others counted into the next
/// line.
#[derive(Default)]
struct AcceptErrorLog {
    last: Option<std::time::Instant>,
    unreported: u64,
}

impl AcceptErrorLog {
    /// `e`, out of descriptors if `descriptors` (else out of memory).
    fn note(&mut self, e: &io::Error, descriptors: bool) {
        let now = std::time::Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < Duration::from_secs(1))
        {
            self.unreported += 1;
            return;
        }
        let more = match std::mem::take(&mut self.unreported) {
            0 => String::new(),
            n => format!(" (and {n} more since the last report)"),
        };
        let what = if descriptors {
            "the oldest pending connection was answered with a reset; serving goes on as \
             descriptors free (raise `ulimit -n`, or hold fewer connections open)"
        } else {
            "serving goes on after a pause"
        };
        eprintln!("pool::hyper::serve: accept failed: {e}{more}; {what}");
        self.last = Some(now);
    }
}

/// `Serve::header_read_timeout`'s default (hyper's own, written down here
/// so that it does not change with hyper's).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

const FIRST_BACKOFF: Duration = Duration::from_millis(1);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

async fn run<L, S, B>(setup: Setup<L, S>) -> io::Result<()>
where
    L: Listener,
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let Setup {
        listener,
        service,
        nodelay,
        header_read_timeout,
        shutdown,
        at,
    } = setup;
    if header_read_timeout == Some(Duration::ZERO) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "pool::hyper::serve: header_read_timeout is zero, so every connection would close \
             before its first request: give it a duration above zero, or None for no timeout",
        ));
    }
    let mut builder = auto::Builder::new(Executor::new());
    builder
        .http1()
        .timer(Timer::new())
        .header_read_timeout(header_read_timeout);
    builder.http2().timer(Timer::new());

    // Graceful shutdown: `closing` completes for every connection when
    // `close` is dropped; `alive` ends when the last connection drops its
    // sender. Without a signal the loop below never breaks, and the
    // connections get no `closing` (an error return leaves them running).
    let mut signal = shutdown;
    let (close, closing) = oneshot::channel::<()>();
    let closed = Arc::new(AtomicBool::new(false));
    let closing = signal.is_some().then(|| Closing {
        closed: Arc::clone(&closed),
        signal: closing.shared(),
        registered: None,
    });
    // Fires the signal when dropped: below, or by an error return.
    let close = Close {
        closed,
        _sender: close,
    };
    let (alive_tx, mut alive) = mpsc::channel::<()>(0);
    // Has the shutdown signal come (never, without one)?
    let mut signalled = move |cx: &mut Context<'_>| match signal.as_mut() {
        Some(signal) => signal.as_mut().poll(cx),
        None => Poll::Pending,
    };

    let mut backoff = FIRST_BACKOFF;
    let mut error_log = AcceptErrorLog::default();
    loop {
        let accepted = poll_fn(|cx| {
            if signalled(cx).is_ready() {
                return Poll::Ready(None);
            }
            listener.poll_accept_made_at(cx, at).map(Some)
        })
        .await;
        let (io, peer) = match accepted {
            None => break,
            Some(Ok(conn)) => {
                backoff = FIRST_BACKOFF;
                conn
            }
            Some(Err(e)) if concerns_one_connection(&e) => continue,
            Some(Err(e)) if out_of_resources(&e) => {
                let descriptors = is_out_of_descriptors(&e);
                error_log.note(&e, descriptors);
                if descriptors && listener.answers_at_emfile() {
                    continue;
                }
                let wait_for = if descriptors { FIRST_BACKOFF } else { backoff };
                // Keep the shutdown signal heard while waiting.
                let wait = pin!(crate::time::sleep(wait_for));
                let stop = pin!(poll_fn(&mut signalled));
                if let Either::Right(_) = futures::future::select(wait, stop).await {
                    break;
                }
                if !descriptors {
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                continue;
            }
            Some(Err(e)) => return Err(e),
        };
        if nodelay {
            // A connection that is already gone fails its first read: no
            // reason to refuse it here.
            let _ = L::set_nodelay(&io, true);
        }
        let service = AddPeer {
            inner: service.clone(),
            peer: PeerAddr(peer),
        };
        let builder = builder.clone();
        let closing = closing.clone();
        let alive = alive_tx.clone();
        let connection = async move {
            // Held until the connection is done (`alive` above).
            let _alive = alive;
            let mut closing = closing;
            let mut conn = pin!(builder.serve_connection_with_upgrades(Io::new(io), service));
            let finished = poll_fn(|cx| {
                if conn.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(true);
                }
                if closing
                    .as_mut()
                    .is_some_and(|closing| closing.poll_closed(cx))
                {
                    return Poll::Ready(false);
                }
                Poll::Pending
            })
            .await;
            if !finished {
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
            }
        };
        drop(crate::free_fns::spawn_at(
            async move {
                // A handler's panic closes its connection (the client sees it
                // closed with no reply): say so, in pool's words, with what to
                // do when it is tokio code that found no tokio runtime
                // (`JoinError`'s message). The panic hook has already printed
                // where it panicked.
                if let Err(payload) = AssertUnwindSafe(connection).catch_unwind().await {
                    eprintln!(
                        "pool::hyper::serve: closed a connection whose {}",
                        crate::task::error::JoinError::panic(payload)
                    );
                }
            },
            at,
            None,
        ));
    }

    // Stop accepting, then tell every connection and wait for them all.
    drop(listener);
    drop(close);
    drop(alive_tx);
    while alive.next().await.is_some() {}
    Ok(())
}

/// The sending side of the graceful-shutdown signal: dropping it sets the
/// flag, then drops the sender, which wakes every connection that polled
/// the signal; a connection that sees that wake reads the flag set.
struct Close {
    closed: Arc<AtomicBool>,
    _sender: oneshot::Sender<()>,
}

impl Drop for Close {
    fn drop(&mut self) {
        // Release: pairs with `poll_closed`'s Acquire load. The fields
        // (the sender) drop after this body.
        self.closed.store(true, Ordering::Release);
    }
}

/// A connection's view of the graceful-shutdown signal. The signal is a
/// `Shared` future that every connection polls: each poll of it takes its
/// lock and records the poller's waker (160 CPU cycles a request, one lock
/// for every connection of the server, in a `perf` profile of the
/// reference service's `/json`). So it is polled only when the
/// connection's task polls it with a new waker (once per connection in a
/// pool task), and otherwise the flag, set before the signal wakes its
/// pollers, says whether it came.
struct Closing {
    closed: Arc<AtomicBool>,
    signal: Shared<oneshot::Receiver<()>>,
    /// The waker the signal holds for this connection.
    registered: Option<Waker>,
}

impl Clone for Closing {
    /// The signal for one more connection, which has not polled it yet.
    fn clone(&self) -> Closing {
        Closing {
            closed: Arc::clone(&self.closed),
            signal: self.signal.clone(),
            registered: None,
        }
    }
}

impl Closing {
    /// Whether the shutdown signal came; if not, `cx` is woken when it
    /// does.
    fn poll_closed(&mut self, cx: &mut Context<'_>) -> bool {
        // Acquire: pairs with `Close`'s Release store before the signal
        // fires; the wake that follows it is what orders a poll after it.
        if self.closed.load(Ordering::Acquire) {
            return true;
        }
        if self
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            return false;
        }
        self.registered = Some(cx.waker().clone());
        self.signal.poll_unpin(cx).is_ready()
    }
}

/// Puts the peer's address into every request of one connection.
#[derive(Clone)]
struct AddPeer<S, A> {
    inner: S,
    peer: PeerAddr<A>,
}

impl<S, A> hyper::service::Service<Request<Incoming>> for AddPeer<S, A>
where
    S: hyper::service::Service<Request<Incoming>>,
    A: Clone + Send + Sync + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn call(&self, mut req: Request<Incoming>) -> S::Future {
        req.extensions_mut().insert(self.peer.clone());
        // axum's `ConnectInfo<A>` extractor reads this (what `axum::serve`
        // with `into_make_service_with_connect_info` would insert).
        #[cfg(feature = "axum")]
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(self.peer.0.clone()));
        self.inner.call(req)
    }
}
