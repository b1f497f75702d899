//! reqwest, a tokio-only HTTP client, called from pool tasks: with pool's
//! `tokio-compat` feature (on in this package) every pool thread has tokio's
//! context, so reqwest works unchanged; its sockets and timers are tokio's,
//! driven by the pool's one `-tokio` thread, and its futures run in pool
//! tasks on pool's workers.
//!
//! ```text
//! cargo run -p examples --example reqwest_get -- [URL] [COUNT]
//! ```
//!
//! With no URL it serves the axum example's app on a local port first (on
//! pool, `pool::hyper::serve`) and GETs `/users/1` from it. Prints one line
//! per request: `STATUS BODY`, then `done: COUNT`.

use std::error::Error;
use std::time::Duration;

type BoxError = Box<dyn Error + Send + Sync>;

#[pool::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let url = match args.next() {
        Some(url) => url,
        None => {
            let listener = pool::net::TcpListener::bind("127.0.0.1:0").await?;
            let addr = listener.local_addr()?;
            let app = examples::axum_app::app(Duration::from_secs(5));
            pool::spawn(pool::hyper::serve(listener, app));
            format!("http://{addr}/users/1")
        }
    };
    let count: usize = match args.next() {
        Some(n) => n.parse().map_err(|e| format!("COUNT {n:?}: {e}"))?,
        None => 4,
    };

    let client = reqwest::Client::new();
    let gets: Vec<_> = (0..count)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            pool::spawn(async move {
                let response = client.get(&url).send().await?;
                let status = response.status();
                Ok::<_, reqwest::Error>((status, response.text().await?))
            })
        })
        .collect();
    for get in gets {
        let (status, body) = get.await??;
        println!("{} {body}", status.as_u16());
    }
    println!("done: {count}");
    Ok(())
}
