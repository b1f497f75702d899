//! The reference service (`examples/src/reference.rs`: axum with
//! tower-http's trace, compression, timeout and `ServeDir`, sqlx on
//! SQLite, a reqwest proxy route, a WebSocket echo) served three ways:
//!
//! * `--runtime pool` (the default): `pool::hyper::serve` on a pool;
//! * `--runtime pool-no-head-timeout`: the same with
//!   `Serve::header_read_timeout(None)`, as `axum::serve` has no such
//!   timeout;
//! * `--runtime pool-axum-serve`: tokio's own `axum::serve`, with a tokio
//!   `TcpListener`, inside a pool (what code written for tokio does);
//! * `--runtime tokio`: `axum::serve` on tokio's multi-thread runtime.
//!
//! ```text
//! cargo run --release -p examples --example reference_service -- \
//!     [--runtime pool|pool-no-head-timeout|pool-axum-serve|tokio] [--workers 2] [--addr 127.0.0.1:0] \
//!     [--upstream URL] [--dir DIR] [--console ADDR]
//! curl localhost:PORT/users/7
//! ```
//!
//! It writes its database and static file into DIR (default: a fresh
//! directory under the system's temporary one, removed at exit), prints
//! `listening on ADDR`, and on Ctrl-C shuts down gracefully and prints
//! `shut down`. `/proxy` GETs `--upstream` (default: its own `/json`).
//! On a pool it also answers `/metrics`: the pool's figures in Prometheus'
//! text (`Handle::prometheus_collector`); with `--console ADDR`
//! (`127.0.0.1:6669`, say) it serves tokio-console there too, and prints
//! `console on ADDR`: `tokio-console http://ADDR` lists its tasks.

use examples::reference::{router, Files};
use std::path::PathBuf;

struct Args {
    runtime: String,
    workers: usize,
    addr: String,
    upstream: Option<String>,
    dir: Option<PathBuf>,
    console: Option<String>,
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "reference_service: {problem}\nusage: reference_service [--runtime pool|pool-no-head-timeout|pool-axum-serve|tokio] \
         [--workers N] [--addr ADDR] [--upstream URL] [--dir DIR] [--console ADDR]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        runtime: "pool".to_owned(),
        workers: 2,
        addr: "127.0.0.1:0".to_owned(),
        upstream: None,
        dir: None,
        console: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{a} takes a value")))
        };
        match a.as_str() {
            "--runtime" => args.runtime = value(),
            "--workers" => {
                args.workers = value()
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| usage("--workers takes a positive number"))
            }
            "--addr" => args.addr = value(),
            "--upstream" => args.upstream = Some(value()),
            "--dir" => args.dir = Some(PathBuf::from(value())),
            "--console" => args.console = Some(value()),
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    if !["pool", "pool-no-head-timeout", "pool-axum-serve", "tokio"]
        .contains(&args.runtime.as_str())
    {
        usage(&format!("unknown runtime {:?}", args.runtime));
    }
    args
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The `/proxy` target: `--upstream`, or the service's own `/json`.
fn upstream(args: &Args, addr: std::net::SocketAddr) -> String {
    args.upstream
        .clone()
        .unwrap_or_else(|| format!("http://{addr}/json"))
}

/// On a pool, the service also answers `/metrics` (Prometheus' text,
/// `Handle::prometheus_collector`): the pool's own figures beside the app.
fn with_pool_metrics(app: axum::Router) -> axum::Router {
    let Some(handle) = pool::Handle::try_current() else {
        return app;
    };
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(handle.prometheus_collector()));
    let registry = std::sync::Arc::new(registry);
    app.route(
        "/metrics",
        axum::routing::get(move || async move {
            let mut body = String::new();
            match prometheus_client::encoding::text::encode(&mut body, &registry) {
                Ok(()) => Ok((
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    body,
                )),
                Err(_) => Err(axum::http::StatusCode::INTERNAL_SERVER_ERROR),
            }
        }),
    )
}

async fn on_pool(args: &Args, files: &Files) -> Result<(), Error> {
    let listener = pool::net::TcpListener::bind(args.addr.as_str()).await?;
    let addr = listener.local_addr()?;
    let app = with_pool_metrics(router(files, upstream(args, addr)).await?);
    println!("listening on {addr}");
    let serve = pool::hyper::serve(listener, app);
    let serve = if args.runtime == "pool-no-head-timeout" {
        serve.header_read_timeout(None)
    } else {
        serve
    };
    serve
        .with_graceful_shutdown(async {
            let _ = pool::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// tokio's `axum::serve`: on pool (`pool-axum-serve`) or tokio; Ctrl-C
/// through tokio's signal handling either way.
async fn axum_serve(args: &Args, files: &Files) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(args.addr.as_str()).await?;
    let addr = listener.local_addr()?;
    let app = with_pool_metrics(router(files, upstream(args, addr)).await?);
    println!("listening on {addr}");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = pool::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

fn main() -> Result<(), Error> {
    let args = parse_args();
    let (dir, remove) = match &args.dir {
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!("pool-reference-{}", std::process::id())),
            true,
        ),
    };
    let served = match args.runtime.as_str() {
        "tokio" => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.workers)
            .enable_all()
            .build()?
            .block_on(async {
                let files = Files::create(&dir).await.map_err(|e| e.to_string())?;
                axum_serve(&args, &files).await
            }),
        runtime => {
            let mut builder = pool::Builder::new().worker_threads(args.workers);
            if let Some(addr) = &args.console {
                builder = builder.console(addr);
            }
            let pool = builder.build()?;
            if let Some(addr) = pool.console_addr() {
                println!("console on {addr}");
            }
            pool.block_on(async {
                let files = Files::create(&dir).await.map_err(|e| e.to_string())?;
                if runtime != "pool-axum-serve" {
                    on_pool(&args, &files).await
                } else {
                    axum_serve(&args, &files).await
                }
            })
        }
    };
    if remove {
        let _ = std::fs::remove_dir_all(&dir);
    }
    served?;
    println!("shut down");
    Ok(())
}
