//! An axum JSON app on pool, with no tokio runtime of its own: the
//! `Router` (routes, shared state, tower-http's timeout layer) is plain
//! axum (`examples/src/axum_app.rs`); the one pool-specific line is
//! `pool::hyper::serve`. Ctrl-C shuts it down gracefully: it stops
//! accepting and lets the requests in flight finish.
//!
//! The timeout layer and `/sleep` use tokio's timer: the `tokio-compat`
//! feature of pool (on in this package) gives every pool thread tokio's
//! context, so they work unchanged.
//!
//! ```text
//! cargo run --release -p examples --example axum_app -- [ADDR]   # default 127.0.0.1:3000
//! curl localhost:3000/users/1
//! curl -XPOST -H 'content-type: application/json' -d '{"name":"grace"}' localhost:3000/users
//! ```
//!
//! Prints `listening on ADDR`, then `shut down` after a graceful shutdown.

use std::time::Duration;

#[pool::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1);
    let addr = addr.as_deref().unwrap_or("127.0.0.1:3000");
    let listener = pool::net::TcpListener::bind(addr).await?;
    println!("listening on {}", listener.local_addr()?);
    let app = examples::axum_app::app(Duration::from_millis(500));

    pool::hyper::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = pool::signal::ctrl_c().await;
        })
        .await?;
    println!("shut down");
    Ok(())
}
