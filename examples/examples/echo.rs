//! A TCP echo server on `pool`'s own I/O driver: `pool::net::TcpListener`,
//! one task per connection spawned with `pool::spawn`, an idle timeout from
//! `pool::time::timeout`, and a clean shutdown on Ctrl-C.
//!
//! ```text
//! cargo run --release -p examples --example echo -- [--addr 127.0.0.1:7000] [--idle-timeout SECS]
//! ```
//!
//! It prints `listening on ADDR` on stdout once it accepts connections (with
//! `--addr 127.0.0.1:0` the OS picks the port), and on Ctrl-C
//! `shut down after serving N connections`.

use futures_lite::{future, AsyncReadExt, AsyncWriteExt};
use pool::net::{TcpListener, TcpStream};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct Args {
    addr: SocketAddr,
    idle_timeout: Duration,
}

fn usage(problem: &str) -> ! {
    eprintln!("echo: {problem}\nusage: echo [--addr HOST:PORT] [--idle-timeout SECS]");
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        addr: "127.0.0.1:7000".parse().expect("a valid default address"),
        idle_timeout: Duration::from_secs(60),
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
            "--idle-timeout" => {
                args.idle_timeout =
                    Duration::from_secs(v.parse().unwrap_or_else(|_| {
                        usage(&format!("--idle-timeout takes seconds, got {v:?}"))
                    }))
            }
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    args
}

/// Echo everything back until the client closes, errs, or stays silent for
/// `idle_timeout`.
async fn echo(mut stream: TcpStream, idle_timeout: Duration) -> io::Result<u64> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut echoed = 0;
    loop {
        let read = pool::time::timeout(idle_timeout, stream.read(&mut buf))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "idle connection"))??;
        if read == 0 {
            return Ok(echoed);
        }
        stream.write_all(&buf[..read]).await?;
        echoed += read as u64;
    }
}

#[pool::main]
async fn main() -> io::Result<()> {
    let args = parse_args();
    let listener = TcpListener::bind(args.addr).await?;
    println!("listening on {}", listener.local_addr()?);
    io::stdout().flush()?;

    // Ctrl-C through the pool's own driver: no signal thread. Listening
    // starts here (the first poll), so a Ctrl-C from now on is seen.
    let mut ctrl_c = std::pin::pin!(pool::signal::ctrl_c());
    futures_lite::future::poll_once(&mut ctrl_c)
        .await
        .transpose()?;

    let served = Arc::new(AtomicU64::new(0));
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
                // Out of descriptors, say: back off, the listener keeps
                // working.
                eprintln!("accept failed: {e}");
                pool::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        served.fetch_add(1, Ordering::Relaxed);
        let idle_timeout = args.idle_timeout;
        // Detached: the connection lives on its own; shutdown drops it.
        drop(pool::spawn(async move {
            if let Err(e) = echo(stream, idle_timeout).await {
                eprintln!("{peer}: {e}");
            }
        }));
    }
    println!(
        "shut down after serving {} connections",
        served.load(Ordering::Relaxed)
    );
    Ok(())
}
