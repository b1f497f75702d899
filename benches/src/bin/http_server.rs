//! The server side of `http_load`: a hyper 1.x HTTP/1.1 hello-world server
//! (or a TCP echo server) on one of four runtimes, 2 worker threads each.
//!
//! ```text
//! http_server --runtime pool|pool-async-io|tokio|smol [--echo] [--workers N] [--unix PATH]
//! http_server --runtime pool|tokio --axum [--workers N]
//! ```
//!
//! With `--axum` it serves the axum example's app (`examples::axum_app`,
//! JSON routes, shared state, tower-http's timeout layer): on pool with
//! `pool::hyper::serve` (the timeout's tokio timer through pool's
//! `tokio-compat`), on tokio with `axum::serve`.
//!
//! With `--unix PATH` (pool and tokio) it listens on a Unix socket at PATH
//! instead, and prints `listening on unix:PATH`.
//!
//! * `pool`: pool's own driver (`pool::net`, `pool::hyper::Io`).
//! * `pool-async-io`: pool's workers, I/O through async-io's reactor thread
//!   (`async_io::Async`, the same `Io` adapter).
//! * `tokio`: tokio's multi-thread runtime, hyper-util's `TokioIo`.
//! * `smol`: async-executor run by N threads, each in
//!   `async_io::block_on(ex.run(..))`.
//!
//! The service is the HTTP example's (`examples::http::hello`): requests to
//! `/work?us=N` spin N microseconds of CPU before answering. No runtime gets
//! a hyper timer (no header-read timeout): the same work on
//! each. It prints `listening on ADDR` and serves until killed.

use async_io::Async;
use examples::http::hello;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use hyper::service::service_fn;
use std::future::Future;
use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;

fn usage(problem: &str) -> ! {
    eprintln!("http_server: {problem}\nusage: http_server --runtime pool|pool-async-io|tokio|smol [--echo] [--workers N] [--unix PATH]");
    std::process::exit(2)
}

fn listening(addr: impl std::fmt::Display) {
    println!("listening on {addr}");
    std::io::stdout().flush().unwrap();
}

/// Echo until EOF over any futures-io stream.
async fn echo_io<S: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin>(mut s: S) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf).await {
        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// Serve hyper's HTTP/1.1 on a futures-io stream, spawning with `exec`.
async fn http1_io<S>(stream: S)
where
    S: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin + Send + 'static,
{
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(pool::hyper::Io::new(stream), service_fn(hello))
        .await;
}

/// Echo or HTTP on a futures-io stream.
async fn serve_io<S>(stream: S, echo: bool)
where
    S: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin + Send + 'static,
{
    if echo {
        echo_io(stream).await
    } else {
        http1_io(stream).await
    }
}

/// Echo or HTTP on a tokio stream.
async fn serve_tokio<S>(mut stream: S, echo: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    if echo {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut buf = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    } else {
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service_fn(hello))
            .await;
    }
}

fn run_pool(workers: usize, echo: bool, unix: Option<PathBuf>) {
    let p = pool::Builder::new()
        .worker_threads(workers)
        .build()
        .unwrap();
    p.block_on(async {
        if let Some(path) = unix {
            let listener = pool::net::UnixListener::bind(&path).unwrap();
            listening(format!("unix:{}", path.display()));
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                drop(pool::spawn(serve_io(stream, echo)));
            }
        }
        let listener = pool::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listening(listener.local_addr().unwrap());
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            drop(pool::spawn(serve_io(stream, echo)));
        }
    });
}

fn run_pool_async_io(workers: usize, echo: bool) {
    let p = pool::Builder::new()
        .worker_threads(workers)
        .build()
        .unwrap();
    p.block_on(async {
        let listener = Async::<TcpListener>::bind(([127, 0, 0, 1], 0)).unwrap();
        listening(listener.get_ref().local_addr().unwrap());
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.get_ref().set_nodelay(true).unwrap();
            drop(pool::spawn(serve_io(stream, echo)));
        }
    });
}

fn run_tokio(workers: usize, echo: bool, unix: Option<PathBuf>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_io()
        .build()
        .unwrap();
    rt.block_on(async {
        if let Some(path) = unix {
            let listener = tokio::net::UnixListener::bind(&path).unwrap();
            listening(format!("unix:{}", path.display()));
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                tokio::spawn(serve_tokio(stream, echo));
            }
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listening(listener.local_addr().unwrap());
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            tokio::spawn(serve_tokio(stream, echo));
        }
    });
}

/// The axum app's request timeout: never reached by the benchmark.
const AXUM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

fn run_pool_axum(workers: usize) {
    let p = pool::Builder::new()
        .worker_threads(workers)
        .build()
        .unwrap();
    p.block_on(async {
        let listener = pool::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listening(listener.local_addr().unwrap());
        let app = examples::axum_app::app(AXUM_TIMEOUT);
        pool::hyper::serve(listener, app).await.unwrap();
    });
}

fn run_tokio_axum(workers: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listening(listener.local_addr().unwrap());
        let app = examples::axum_app::app(AXUM_TIMEOUT);
        axum::serve(listener, app).await.unwrap();
    });
}

fn run_smol(workers: usize, echo: bool) {
    let ex = Arc::new(async_executor::Executor::new());
    for i in 0..workers {
        let ex = ex.clone();
        std::thread::Builder::new()
            .name(format!("smol-{i}"))
            .spawn(move || async_io::block_on(ex.run(std::future::pending::<()>())))
            .unwrap();
    }
    let serve = {
        let ex = ex.clone();
        async move {
            let listener = Async::<TcpListener>::bind(([127, 0, 0, 1], 0)).unwrap();
            listening(listener.get_ref().local_addr().unwrap());
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                stream.get_ref().set_nodelay(true).unwrap();
                let conn: std::pin::Pin<Box<dyn Future<Output = ()> + Send>> = if echo {
                    Box::pin(echo_io(stream))
                } else {
                    Box::pin(http1_io(stream))
                };
                ex.spawn(conn).detach();
            }
        }
    };
    // The accept loop runs on the executor too: this thread only waits.
    let accept = ex.spawn(serve);
    async_io::block_on(accept);
}

fn main() {
    let mut runtime = None;
    let mut echo = false;
    let mut workers = 2;
    let mut unix = None;
    let mut axum = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runtime" => runtime = it.next(),
            "--unix" => {
                unix = Some(PathBuf::from(
                    it.next().unwrap_or_else(|| usage("--unix takes a path")),
                ))
            }
            "--echo" => echo = true,
            "--axum" => axum = true,
            "--workers" => {
                workers = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage("--workers takes a number"))
            }
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    let tcp_only = |run: fn(usize, bool)| {
        if unix.is_some() {
            usage("--unix is for --runtime pool or tokio");
        }
        run(workers, echo)
    };
    if axum {
        if echo || unix.is_some() {
            usage("--axum serves HTTP over TCP: no --echo, no --unix");
        }
        match runtime.as_deref() {
            Some("pool") => run_pool_axum(workers),
            Some("tokio") => run_tokio_axum(workers),
            _ => usage("--axum is for --runtime pool or tokio"),
        }
        return;
    }
    match runtime.as_deref() {
        Some("pool") => run_pool(workers, echo, unix),
        Some("pool-async-io") => tcp_only(run_pool_async_io),
        Some("tokio") => run_tokio(workers, echo, unix),
        Some("smol") => tcp_only(run_smol),
        _ => usage("--runtime is pool, pool-async-io, tokio or smol"),
    }
}
