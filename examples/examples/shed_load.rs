//! Shedding load with pool's load signal: an axum app whose middleware
//! answers 503 (with `Retry-After`) while a task woken now would wait
//! longer than `--max-delay-ms` for a worker
//! ([`pool::Handle::schedule_delay`]), so the requests it takes keep a
//! short queue instead of every request growing slow together.
//!
//! ```text
//! cargo run --release -p examples --example shed_load -- [--addr 127.0.0.1:8080] [--workers N] [--max-delay-ms 20]
//! curl 'http://127.0.0.1:8080/work?us=500'    # spins 500 us of CPU, then answers
//! wrk -t2 -c256 -d10s 'http://127.0.0.1:8080/work?us=500'   # past capacity: some 503s
//! ```
//!
//! It prints `listening on ADDR` once it accepts connections; on Ctrl-C it
//! shuts down gracefully and prints `served N, shed M`.

use axum::extract::Query;
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    addr: SocketAddr,
    workers: Option<usize>,
    max_delay: Duration,
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "shed_load: {problem}\nusage: shed_load [--addr HOST:PORT] [--workers N] [--max-delay-ms MS]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        addr: "127.0.0.1:8080".parse().expect("a valid default address"),
        workers: None,
        max_delay: Duration::from_millis(20),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let v = it
            .next()
            .unwrap_or_else(|| usage(&format!("{a} needs a value")));
        let number = || -> u64 {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{a} takes a number, got {v:?}")))
        };
        match a.as_str() {
            "--addr" => {
                args.addr = v
                    .parse()
                    .unwrap_or_else(|_| usage(&format!("--addr takes HOST:PORT, got {v:?}")))
            }
            "--workers" => args.workers = Some(number() as usize),
            "--max-delay-ms" => args.max_delay = Duration::from_millis(number()),
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    args
}

/// What the middleware decided, counted.
#[derive(Default)]
struct Counts {
    served: AtomicU64,
    shed: AtomicU64,
}

#[derive(serde::Deserialize)]
struct Work {
    us: Option<u64>,
}

/// Spin `us` microseconds of CPU: the request's work.
async fn work(Query(w): Query<Work>) -> String {
    let d = Duration::from_micros(w.us.unwrap_or(0));
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
    format!("worked {d:?}\n")
}

/// The whole of load shedding: one read of the pool's load signal per
/// request, before any work is done for it.
async fn shed(
    max_delay: Duration,
    counts: Arc<Counts>,
    req: axum::extract::Request,
    next: Next,
) -> Response {
    let delay = pool::Handle::current().schedule_delay();
    if delay > max_delay {
        counts.shed.fetch_add(1, Ordering::Relaxed);
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            format!("overloaded: tasks wait {delay:?} for a worker (limit {max_delay:?})\n"),
        )
            .into_response();
    }
    counts.served.fetch_add(1, Ordering::Relaxed);
    next.run(req).await
}

fn main() -> std::io::Result<()> {
    let args = parse_args();
    let mut builder = pool::Builder::new();
    if let Some(n) = args.workers {
        builder = builder.worker_threads(n);
    }
    let pool = builder.build()?;
    let counts = Arc::new(Counts::default());
    let app = {
        let counts = Arc::clone(&counts);
        let max_delay = args.max_delay;
        Router::new()
            .route("/work", get(work))
            .layer(middleware::from_fn(move |req, next| {
                shed(max_delay, Arc::clone(&counts), req, next)
            }))
    };
    pool.block_on(async {
        let listener = pool::net::TcpListener::bind(args.addr).await?;
        println!("listening on {}", listener.local_addr()?);
        pool::hyper::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = pool::signal::ctrl_c().await;
            })
            .await
    })?;
    println!(
        "served {}, shed {}",
        counts.served.load(Ordering::Relaxed),
        counts.shed.load(Ordering::Relaxed)
    );
    Ok(())
}
