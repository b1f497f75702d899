//! A counter service and a client that retries, with a bug only a
//! partition shows: the client retries an `ADD` that timed out, though the
//! server may have applied it (or will, once the partition heals), so one
//! addition counts twice. The whole system (server host, client host, the
//! partition between them) runs in a seeded pool with a simulated network
//! (`pool::sim`): a seed sweep finds a run that loses the count, and
//! `POOL_SEED` replays it exactly.
//!
//! The protocol is one line each way: `ADD <id> <n>` and `TOTAL <t>`. The
//! fixed server (`Server::Deduplicating`) remembers the ids it applied and
//! answers a retry without applying it again.

use futures::io::BufReader;
use futures::{AsyncBufReadExt, AsyncWriteExt};
use pool::net::{TcpListener, TcpStream};
use pool::sim;
use pool::time::Instant;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// The counter's host, and the client's.
pub const SERVER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 1, 10));
pub const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 1, 2));

/// Additions the client makes, one at a time.
pub const ADDS: u64 = 5;

/// How long the client waits for an answer before it retries.
const CLIENT_TIMEOUT: Duration = Duration::from_millis(100);

/// The client's pause between two additions.
const THINK: Duration = Duration::from_millis(20);

/// When the partition between client and server begins, and how long it
/// lasts (longer than the client's timeout: it retries meanwhile).
const PARTITION_AT: Duration = Duration::from_millis(60);
const PARTITION_FOR: Duration = Duration::from_millis(300);

/// Which server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    /// Applies every `ADD` it reads: a retried one counts twice.
    Naive,
    /// Applies an id once, and answers its retries with the total.
    Deduplicating,
}

/// What one run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The server's total at the end (`ADDS` when nothing counted twice).
    pub total: u64,
    /// The requests the client sent, retries included.
    pub sent: u64,
    /// What happened when, in virtual time.
    pub log: Vec<String>,
    /// The schedule's hash (`Pool::schedule_hash`).
    pub schedule_hash: u64,
}

/// Serve the counter on `listener`, a task per connection; the total is
/// shared through `total`.
async fn serve(
    listener: TcpListener,
    server: Server,
    total: std::sync::Arc<std::sync::Mutex<(u64, BTreeSet<u64>)>>,
) {
    loop {
        let Ok((conn, _)) = listener.accept().await else {
            return;
        };
        let total = std::sync::Arc::clone(&total);
        pool::spawn(async move {
            let mut conn = BufReader::new(conn);
            let mut line = String::new();
            while conn.read_line(&mut line).await.is_ok_and(|n| n > 0) {
                let mut words = line.split_whitespace().skip(1);
                let id: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                let n: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                let now = {
                    let mut t = total.lock().unwrap();
                    if server == Server::Naive || t.1.insert(id) {
                        t.0 += n;
                    }
                    t.0
                };
                if conn
                    .get_mut()
                    .write_all(format!("TOTAL {now}\n").as_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
                line.clear();
            }
        });
    }
}

/// One request on a fresh connection: the total it answered, or `None`
/// on a timeout or a reset.
async fn request(id: u64) -> Option<u64> {
    let attempt = async {
        let conn = TcpStream::connect((SERVER, 9000)).await.ok()?;
        let mut conn = BufReader::new(conn);
        conn.get_mut()
            .write_all(format!("ADD {id} 1\n").as_bytes())
            .await
            .ok()?;
        let mut line = String::new();
        conn.read_line(&mut line).await.ok()?;
        line.trim().strip_prefix("TOTAL ")?.parse().ok()
    };
    pool::time::timeout(CLIENT_TIMEOUT, attempt)
        .await
        .ok()
        .flatten()
}

/// One run of the system under `seed`.
pub fn run(seed: u64, server: Server) -> Outcome {
    let pool = pool::Builder::new()
        .seed(seed)
        .network(sim::Network::new())
        .build()
        .expect("a seeded pool with a network");
    let (total, sent, log) = pool.block_on(async move {
        let start = Instant::now();
        let state = std::sync::Arc::new(std::sync::Mutex::new((0, BTreeSet::new())));
        let listener = sim::host(SERVER)
            .spawn(async { TcpListener::bind("0.0.0.0:9000").await })
            .await
            .unwrap()
            .expect("the counter's port");
        sim::host(SERVER).spawn(serve(listener, server, std::sync::Arc::clone(&state)));
        // The chaos: cut client from server for a while.
        let chaos = pool::spawn(async {
            pool::time::sleep(PARTITION_AT).await;
            sim::partition(CLIENT, SERVER);
            pool::time::sleep(PARTITION_FOR).await;
            sim::repair(CLIENT, SERVER);
        });
        let client = sim::host(CLIENT).spawn(async move {
            let mut sent = 0;
            let mut log = Vec::new();
            for id in 1..=ADDS {
                loop {
                    sent += 1;
                    match request(id).await {
                        Some(t) => {
                            log.push(format!(
                                "{:?}: ADD {id} answered TOTAL {t}",
                                start.elapsed()
                            ));
                            break;
                        }
                        None => log.push(format!(
                            "{:?}: ADD {id} timed out; retrying",
                            start.elapsed()
                        )),
                    }
                }
                pool::time::sleep(THINK).await;
            }
            (sent, log)
        });
        let (sent, log) = client.await.unwrap();
        chaos.await.unwrap();
        // Let every segment still in the air arrive.
        pool::time::sleep(Duration::from_secs(1)).await;
        let total = state.lock().unwrap().0;
        (total, sent, log)
    });
    Outcome {
        total,
        sent,
        log,
        schedule_hash: pool.schedule_hash(),
    }
}
