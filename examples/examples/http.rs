//! An HTTP server on `pool`: hyper 1.x over `pool::net`, with `pool::hyper`'s
//! `Io`, `Executor` and `Timer` and nothing else in between. It speaks
//! HTTP/1.1 and HTTP/2 (prior knowledge, told apart by the first bytes),
//! and shuts down gracefully on Ctrl-C: it stops accepting, lets every
//! connection finish the requests in flight (for up to 5 s), and exits.
//!
//! ```text
//! cargo run --release -p examples --example http -- [--addr 127.0.0.1:8080] [--workers N]
//! curl http://127.0.0.1:8080/            # Hello, World!
//! curl http://127.0.0.1:8080/work?us=10  # spins 10 us of CPU first
//! ```
//!
//! It prints `listening on ADDR` once it accepts connections (with `--addr
//! 127.0.0.1:0` the OS picks the port), and on Ctrl-C `shut down after
//! serving N connections`.

use examples::http::hello;
use futures_lite::future;
use hyper::service::service_fn;
use hyper_util::server::conn::auto;
use pool::hyper::{Executor, Io, Timer};
use pool::net::TcpListener;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::Duration;

/// How long connections get to finish after Ctrl-C.
const GRACE: Duration = Duration::from_secs(5);

struct Args {
    addr: SocketAddr,
    workers: Option<usize>,
}

fn usage(problem: &str) -> ! {
    eprintln!("http: {problem}\nusage: http [--addr HOST:PORT] [--workers N]");
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        addr: "127.0.0.1:8080".parse().expect("a valid default address"),
        workers: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let v = it
            .next()
            .unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--addr" => {
                args.addr = v
                    .parse()
                    .unwrap_or_else(|_| usage(&format!("--addr takes HOST:PORT, got {v:?}")))
            }
            "--workers" => {
                args.workers = Some(
                    v.parse()
                        .unwrap_or_else(|_| usage(&format!("--workers takes a number, got {v:?}"))),
                )
            }
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    args
}

async fn serve(addr: SocketAddr) -> io::Result<u64> {
    let listener = TcpListener::bind(addr).await?;
    println!("listening on {}", listener.local_addr()?);
    io::stdout().flush()?;

    // Ctrl-C through the pool's own driver: no signal thread. Listening
    // starts here (the first poll), so a Ctrl-C from now on is seen.
    let mut ctrl_c = std::pin::pin!(pool::signal::ctrl_c());
    futures_lite::future::poll_once(&mut ctrl_c)
        .await
        .transpose()?;
    // Closed (all senders dropped) when the server starts shutting down:
    // every connection then finishes gracefully.
    let (closing_tx, closing) = async_channel::bounded::<()>(1);

    let mut builder = auto::Builder::new(Executor::new());
    builder.http1().timer(Timer::new());
    builder.http2().timer(Timer::new());

    let mut connections = Vec::new();
    let mut served = 0;
    loop {
        let accepted = future::or(async { Some(listener.accept().await) }, async {
            let _ = ctrl_c.as_mut().await;
            None
        })
        .await;
        let Some(accepted) = accepted else { break };
        let (stream, peer) = match accepted {
            Ok(conn) => conn,
            Err(e) => {
                // Out of descriptors, say: the listener keeps working.
                eprintln!("accept failed: {e}");
                pool::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        served += 1;
        stream.set_nodelay(true)?;
        let builder = builder.clone();
        let closing = closing.clone();
        connections.retain(|c: &pool::JoinHandle<()>| !c.is_finished());
        connections.push(pool::spawn(async move {
            let conn = builder.serve_connection(Io::new(stream), service_fn(hello));
            let mut conn = std::pin::pin!(conn);
            let finished = future::or(async { Some(conn.as_mut().await) }, async {
                let _ = closing.recv().await;
                None
            })
            .await;
            let result = match finished {
                Some(result) => result,
                None => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                eprintln!("{peer}: {e}");
            }
        }));
    }
    drop(closing_tx);
    let all = async {
        for c in connections {
            let _ = c.await;
        }
    };
    if pool::time::timeout(GRACE, all).await.is_err() {
        eprintln!("some connections did not finish within {GRACE:?}; dropping them");
    }
    Ok(served)
}

fn main() -> io::Result<()> {
    let args = parse_args();
    let mut builder = pool::Builder::new();
    if let Some(n) = args.workers {
        builder = builder.worker_threads(n);
    }
    let pool = builder.build()?;
    let served = pool.block_on(serve(args.addr))?;
    println!("shut down after serving {served} connections");
    Ok(())
}
