//! A service as it runs in production, on `pool`'s own driver with no other
//! thread: it listens on TCP and on a Unix socket, reloads its settings on
//! SIGHUP, runs a helper process beside it, and on SIGTERM or Ctrl-C drains:
//! it stops accepting, lets open connections finish (up to a deadline),
//! stops its helper, and exits 0.
//!
//! ```text
//! cargo run --release -p examples --example service -- \
//!     [--addr 127.0.0.1:7100] [--unix /tmp/service.sock] [--config FILE] \
//!     [--helper 'sleep 3600'] [--drain-secs 30]
//! ```
//!
//! The protocol is one line in, one line out: the reply is the config
//! file's first line (the greeting, `hello` without a file) followed by the
//! request line. A line `slow` is answered after a second, so a drain has
//! something to wait for.
//!
//! On stdout it prints `listening on ADDR` first, then `unix PATH`, and
//! then one line per event: `reloaded: GREETING`, `draining: N open`,
//! `helper stopped: STATUS`, `drained`.

use futures::future;
use futures::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, FutureExt};
use pool::net::{TcpListener, UnixListener};
use pool::process::Command;
use pool::signal::unix::{signal, SignalKind};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

struct Args {
    addr: SocketAddr,
    unix: PathBuf,
    config: Option<PathBuf>,
    helper: String,
    drain: Duration,
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "service: {problem}\nusage: service [--addr HOST:PORT] [--unix PATH] [--config FILE] \
         [--helper COMMAND] [--drain-secs SECS]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        addr: "127.0.0.1:7100".parse().expect("a valid default address"),
        unix: std::env::temp_dir().join("pool-service.sock"),
        config: None,
        helper: "sleep 3600".into(),
        drain: Duration::from_secs(30),
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
                    .unwrap_or_else(|_| usage(&format!("--addr takes IP:PORT, got {v:?}")))
            }
            "--unix" => args.unix = v.into(),
            "--config" => args.config = Some(v.into()),
            "--helper" => args.helper = v,
            "--drain-secs" => {
                args.drain =
                    Duration::from_secs(v.parse().unwrap_or_else(|_| {
                        usage(&format!("--drain-secs takes seconds, got {v:?}"))
                    }))
            }
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    args
}

/// The settings a SIGHUP reloads.
type Settings = Arc<RwLock<String>>;

/// The greeting: the config file's first line (read on a blocking thread,
/// as any file I/O), or `hello`.
async fn load_greeting(config: &Option<PathBuf>) -> io::Result<String> {
    let Some(path) = config.clone() else {
        return Ok("hello".into());
    };
    let text = pool::spawn_blocking(move || std::fs::read_to_string(path))
        .await
        .map_err(io::Error::other)??;
    Ok(text.lines().next().unwrap_or("").to_string())
}

/// Serve one connection: a reply per line until the client closes.
async fn serve(io: impl AsyncRead + AsyncWrite + Unpin, settings: Settings) -> io::Result<()> {
    let (read, mut write) = futures::AsyncReadExt::split(io);
    let mut lines = futures::io::BufReader::new(read).lines();
    while let Some(line) = futures::StreamExt::next(&mut lines).await {
        let line = line?;
        if line == "slow" {
            pool::time::sleep(Duration::from_secs(1)).await;
        }
        let greeting = settings.read().expect("settings lock").clone();
        write
            .write_all(format!("{greeting} {line}\n").as_bytes())
            .await?;
    }
    Ok(())
}

/// What woke the accept loop.
enum Event {
    Accepted(io::Result<pool::JoinHandle<()>>),
    Reload,
    Stop(&'static str),
}

#[pool::main]
async fn main() -> io::Result<()> {
    let args = parse_args();
    // Signals first: from here on SIGTERM, SIGINT and SIGHUP are ours.
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;

    let settings: Settings = Arc::new(RwLock::new(load_greeting(&args.config).await?));
    let tcp = TcpListener::bind(args.addr).await?;
    // A socket file left by a previous run that did not get to drain.
    if std::os::unix::net::UnixStream::connect(&args.unix).is_err() {
        let _ = std::fs::remove_file(&args.unix);
    }
    let unix = UnixListener::bind(&args.unix)?;
    println!("listening on {}", tcp.local_addr()?);
    println!("unix {}", args.unix.display());
    io::stdout().flush()?;

    // The helper beside the service, stopped when it drains (and killed if
    // the service itself goes away first).
    // Run directly, not through `sh -c`: a kill must reach the helper
    // itself, not a shell that leaves it running.
    let mut words = args.helper.split_whitespace();
    let program = words
        .next()
        .unwrap_or_else(|| usage("--helper needs a command"));
    let mut helper = Command::new(program)
        .args(words)
        .kill_on_drop(true)
        .spawn()?;

    let mut connections: Vec<pool::JoinHandle<()>> = Vec::new();
    let why = loop {
        let event = futures::select! {
            accepted = tcp.accept().fuse() => Event::Accepted(accepted.map(|(stream, peer)| {
                let _ = stream.set_nodelay(true);
                let settings = settings.clone();
                pool::spawn(async move {
                    if let Err(e) = serve(stream, settings).await {
                        eprintln!("{peer}: {e}");
                    }
                })
            })),
            accepted = unix.accept().fuse() => Event::Accepted(accepted.map(|(stream, _)| {
                let settings = settings.clone();
                pool::spawn(async move {
                    if let Err(e) = serve(stream, settings).await {
                        eprintln!("unix client: {e}");
                    }
                })
            })),
            _ = hup.recv().fuse() => Event::Reload,
            _ = term.recv().fuse() => Event::Stop("SIGTERM"),
            _ = int.recv().fuse() => Event::Stop("SIGINT"),
        };
        match event {
            Event::Accepted(Ok(conn)) => {
                connections.retain(|c| !c.is_finished());
                connections.push(conn);
            }
            Event::Accepted(Err(e)) => {
                // Out of descriptors, say: report it, back off, keep
                // accepting (the pending connection is still there).
                eprintln!("accept failed: {e}");
                pool::time::sleep(Duration::from_millis(100)).await;
            }
            Event::Reload => match load_greeting(&args.config).await {
                Ok(greeting) => {
                    // In force before it is announced: a client that reads
                    // the line and asks at once gets the new greeting.
                    *settings.write().expect("settings lock") = greeting.clone();
                    println!("reloaded: {greeting}");
                }
                // A bad config keeps the old settings.
                Err(e) => eprintln!("reload failed, keeping the old settings: {e}"),
            },
            Event::Stop(why) => break why,
        }
        io::stdout().flush()?;
    };

    // Drain: stop accepting (a client now gets "refused" or "no such
    // file"), then let the open connections finish, up to the deadline.
    drop(tcp);
    drop(unix);
    let _ = std::fs::remove_file(&args.unix);
    connections.retain(|c| !c.is_finished());
    println!("draining on {why}: {} open", connections.len());
    io::stdout().flush()?;
    let all = future::join_all(connections);
    if pool::time::timeout(args.drain, all).await.is_err() {
        println!("drain deadline passed: closing what is left");
    }
    helper.kill()?;
    println!("helper stopped: {}", helper.wait().await?);
    println!("drained");
    Ok(())
}
