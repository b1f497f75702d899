//! tokio-typed clients and servers on pool against the same code on
//! tokio, side by side, interleaved rounds, 2 workers each:
//!
//! * `reqwest`: GETs per second from `C` concurrent tasks sharing one
//!   `reqwest::Client`: in pool tasks (through pool's `tokio-compat`:
//!   reqwest's sockets in the workers' own tokio runtimes) against in tokio
//!   tasks; the server is `http_server --runtime pool` (hello world) in
//!   its own process, the same for both.
//! * `tonic`: unary `SayHello` calls per second, client and server in one
//!   runtime: on pool, `pool::hyper::serve` over tonic's `Routes` and the
//!   generated client over `examples::greeter::channel()` (no tokio at
//!   all); on tokio, tonic's own `transport::Server` and `Channel`, both
//!   with `tcp_nodelay(true)` (pool's server and connector set it).
//! * `library`: how sqlx's SQLite driver (and any library with a thread of
//!   its own) answers a task: the task sends a request over a channel to
//!   the library's thread and awaits a oneshot that the thread fires. No
//!   socket, no tokio task: the runtime's wake of a task from another
//!   thread, and its sleep and wake-up.
//! * `library_spawn`: the same, plus one `tokio::spawn` of an empty task
//!   per call, not awaited (how sqlx returns a pooled connection; hyper-util's
//!   client, `axum::serve` and axum's upgrades spawn as well): what a tokio
//!   task costs on pool's hosted runtimes (`tokio-compat`) against tokio.
//!
//! ```text
//! cargo build --release -p benches --bins
//! target/release/ecosystem [--rounds 5] [--secs 3] [--concurrency 32] [--only reqwest,tonic,library,library_spawn] [--runtime pool|tokio]
//! ```
//!
//! Reports per workload and runtime the medians over rounds of calls/s
//! (and the ratio to tokio), p50 and p99 latency, and the process's CPU
//! time per call.

use benches::args::{names, positive};
use benches::{median, percentile};
use examples::greeter::{channel, GreeterClient, GreeterServer, HelloRequest, MyGreeter};
use std::collections::BTreeMap;
use std::future::Future;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tests::{process_cpu_time, ListeningServer};

const WORKLOADS: [&str; 4] = ["reqwest", "tonic", "library", "library_spawn"];
const RUNTIMES: [&str; 2] = ["pool", "tokio"];
const WARMUP: Duration = Duration::from_millis(300);

struct Args {
    rounds: usize,
    secs: u64,
    concurrency: usize,
    workloads: Vec<String>,
    /// `--runtime`: run only this one (to profile it alone).
    runtimes: Vec<String>,
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "ecosystem: {problem}\nusage: ecosystem [--rounds N] [--secs S] [--concurrency C] [--only {}] [--runtime pool|tokio]",
        WORKLOADS.join(",")
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        rounds: 5,
        secs: 3,
        concurrency: 32,
        workloads: WORKLOADS.iter().map(|w| w.to_string()).collect(),
        runtimes: RUNTIMES.iter().map(|r| r.to_string()).collect(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let it = &mut it;
        match a.as_str() {
            "--rounds" => args.rounds = positive(it, "--rounds", usage) as usize,
            "--secs" => args.secs = positive(it, "--secs", usage),
            "--concurrency" => args.concurrency = positive(it, "--concurrency", usage) as usize,
            "--only" => args.workloads = names(it, "--only", &WORKLOADS, usage),
            "--runtime" => args.runtimes = names(it, "--runtime", &RUNTIMES, usage),
            _ => usage(&format!("unknown option {a:?}")),
        }
    }
    args
}

/// One run: calls per second, p50 and p99 latency (us), CPU per call (us).
struct Run {
    rate: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_per_call_us: f64,
}

/// One client loop: calls `call` until `stop`, timing the calls made after
/// `measure_from`.
async fn client_loop<F, Fut>(call: F, measure_from: Instant, stop: Instant) -> Vec<f64>
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut lat = Vec::with_capacity(1 << 14);
    loop {
        let t = Instant::now();
        if t >= stop {
            return lat;
        }
        call().await;
        if t >= measure_from {
            lat.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
}

/// Runs `loops` (one client loop each) with `spawn`, then sums them up.
fn measure<S>(args: &Args, spawn: S) -> Run
where
    S: FnOnce(Instant, Instant) -> Vec<Vec<f64>>,
{
    let measure_from = Instant::now() + WARMUP;
    let stop = measure_from + Duration::from_secs(args.secs);
    // CPU is counted from the end of the warm-up.
    let watcher = std::thread::spawn(move || {
        std::thread::sleep(measure_from.saturating_duration_since(Instant::now()));
        process_cpu_time()
    });
    let lats = spawn(measure_from, stop);
    let cpu_after = process_cpu_time();
    let cpu_before = watcher.join().unwrap();
    let mut all: Vec<f64> = lats.into_iter().flatten().collect();
    let n = all.len() as f64;
    Run {
        rate: n / args.secs as f64,
        p50_us: percentile(&mut all, 50.0),
        p99_us: percentile(&mut all, 99.0),
        cpu_per_call_us: (cpu_after - cpu_before).as_secs_f64() * 1e6 / n,
    }
}

fn reqwest_on(runtime: &str, url: &str, args: &Args) -> Run {
    let client = reqwest::Client::new();
    let call = {
        let url = url.to_owned();
        move || {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let response = client.get(&url).send().await.expect("GET");
                response.bytes().await.expect("body");
            }
        }
    };
    run_clients(runtime, args, call)
}

/// The `library` workloads: a thread that answers each request by firing
/// its oneshot, and the call that sends one and awaits the answer (then
/// spawns an empty tokio task when `spawn`). The thread ends when the last
/// call's sender is dropped.
fn library_on(runtime: &str, args: &Args, spawn: bool) -> Run {
    let (requests, inbox) = std::sync::mpsc::channel::<tokio::sync::oneshot::Sender<u64>>();
    let library = std::thread::spawn(move || {
        let mut n = 0u64;
        for answer in inbox {
            n += 1;
            let _ = answer.send(n);
        }
    });
    let call = move || {
        let requests = requests.clone();
        async move {
            let (answer, reply) = tokio::sync::oneshot::channel();
            requests.send(answer).expect("the library thread runs");
            reply.await.expect("the library answers");
            if spawn {
                drop(tokio::spawn(async {}));
            }
        }
    };
    let run = run_clients(runtime, args, call);
    library.join().unwrap();
    run
}

/// `args.concurrency` client loops of `call`, on a fresh 2-worker pool or
/// tokio runtime.
fn run_clients<F, Fut>(runtime: &str, args: &Args, call: F) -> Run
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    if runtime == "pool" {
        on_pool(
            &pool::Builder::new().worker_threads(2).build().unwrap(),
            args,
            call,
        )
    } else {
        on_tokio(&tokio_runtime(), args, call)
    }
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `args.concurrency` client loops of `call` as tasks of `p`.
fn on_pool<F, Fut>(p: &pool::Pool, args: &Args, call: F) -> Run
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    measure(args, |from, stop| {
        p.block_on(async {
            let loops: Vec<_> = (0..args.concurrency)
                .map(|_| pool::spawn(client_loop(call.clone(), from, stop)))
                .collect();
            let mut out = Vec::new();
            for l in loops {
                out.push(l.await.unwrap());
            }
            out
        })
    })
}

/// `args.concurrency` client loops of `call` as tasks of `rt`.
fn on_tokio<F, Fut>(rt: &tokio::runtime::Runtime, args: &Args, call: F) -> Run
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    measure(args, |from, stop| {
        rt.block_on(async {
            let loops: Vec<_> = (0..args.concurrency)
                .map(|_| tokio::spawn(client_loop(call.clone(), from, stop)))
                .collect();
            let mut out = Vec::new();
            for l in loops {
                out.push(l.await.unwrap());
            }
            out
        })
    })
}

fn say_hello_call<T>(
    client: GreeterClient<T>,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Clone + Send + 'static
where
    T: tonic::client::GrpcService<tonic::body::Body> + Clone + Send + Sync + 'static,
    T::Future: Send,
    T::ResponseBody: tonic::codegen::Body<Data = tonic::codegen::Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
    T::Error: Into<tonic::codegen::StdError>,
{
    move || {
        let mut client = client.clone();
        Box::pin(async move {
            let reply = client
                .say_hello(HelloRequest {
                    name: "pool".to_owned(),
                })
                .await
                .expect("SayHello");
            assert_eq!(reply.into_inner().message, "Hello pool!");
        })
    }
}

fn tonic_on(runtime: &str, args: &Args) -> Run {
    if runtime == "pool" {
        // Server and client on the pool itself.
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let p = pool::Builder::new().worker_threads(2).build().unwrap();
        let handle = p.handle();
        let server = handle.spawn(async move {
            let listener = pool::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let routes = tonic::service::Routes::new(GreeterServer::new(MyGreeter));
            pool::hyper::serve(listener, routes).await.unwrap();
        });
        let addr = addr_rx.recv().unwrap();
        let client =
            GreeterClient::with_origin(channel(), format!("http://{addr}").parse().unwrap());
        let run = on_pool(&p, args, say_hello_call(client));
        drop(server);
        drop(p);
        run
    } else {
        let rt = tokio_runtime();
        let incoming = rt
            .block_on(async {
                tonic::transport::server::TcpIncoming::bind("127.0.0.1:0".parse().unwrap())
            })
            .unwrap();
        let addr = incoming.local_addr().unwrap();
        // The server's `tcp_nodelay` is not applied to an incoming of one's
        // own: set it here (without it, p99 is a 40 ms delayed ACK).
        let incoming = incoming.with_nodelay(Some(true));
        rt.spawn(
            tonic::transport::Server::builder()
                .tcp_nodelay(true)
                .add_service(GreeterServer::new(MyGreeter))
                .serve_with_incoming(incoming),
        );
        let channel = rt
            .block_on(
                tonic::transport::Channel::from_shared(format!("http://{addr}"))
                    .unwrap()
                    .tcp_nodelay(true)
                    .connect(),
            )
            .unwrap();
        on_tokio(&rt, args, say_hello_call(GreeterClient::new(channel)))
    }
}

fn hello_server() -> ListeningServer {
    let binary = std::env::current_exe()
        .unwrap()
        .with_file_name("http_server");
    if !binary.exists() {
        eprintln!(
            "ecosystem: {} not found: build it with `cargo build --release -p benches --bins`",
            binary.display()
        );
        std::process::exit(2);
    }
    ListeningServer::start(
        Command::new(binary)
            .args(["--runtime", "pool", "--workers", "2"])
            .stderr(Stdio::inherit()),
    )
}

fn main() {
    let args = parse_args();
    println!(
        "ecosystem: {} round(s) of {} s (after {} ms of warm-up), {} concurrent calls, 2 workers per runtime",
        args.rounds,
        args.secs,
        WARMUP.as_millis(),
        args.concurrency
    );
    for workload in &args.workloads {
        let server = (workload == "reqwest").then(hello_server);
        let url = server.as_ref().map(|s| format!("http://{}/", s.addr));
        let mut runs: BTreeMap<&str, Vec<Run>> = BTreeMap::new();
        for round in 0..args.rounds {
            let order = if round % 2 == 0 {
                ["pool", "tokio"]
            } else {
                ["tokio", "pool"]
            };
            for runtime in order
                .into_iter()
                .filter(|r| args.runtimes.iter().any(|a| a == r))
            {
                let run = match workload.as_str() {
                    "reqwest" => reqwest_on(runtime, url.as_deref().unwrap(), &args),
                    "library" => library_on(runtime, &args, false),
                    "library_spawn" => library_on(runtime, &args, true),
                    _ => tonic_on(runtime, &args),
                };
                eprintln!(
                    "  {workload} round {round} {runtime}: {:.0}/s p50 {:.0} us p99 {:.0} us",
                    run.rate, run.p50_us, run.p99_us
                );
                runs.entry(runtime).or_default().push(run);
            }
        }
        let med =
            |rs: &[Run], f: fn(&Run) -> f64| median(&mut rs.iter().map(f).collect::<Vec<_>>());
        let tokio_rate = runs.get("tokio").map_or(f64::NAN, |rs| med(rs, |r| r.rate));
        println!("\n### {workload}\n");
        println!(
            "| runtime | calls/s (median) | vs tokio | p50 | p99 | CPU per call (whole process) |"
        );
        println!("|---|--:|--:|--:|--:|--:|");
        for (runtime, rs) in &runs {
            let rate = med(rs, |r| r.rate);
            println!(
                "| {runtime} | {rate:.0} | {:.2} | {:.0} us | {:.0} us | {:.1} us |",
                rate / tokio_rate,
                med(rs, |r| r.p50_us),
                med(rs, |r| r.p99_us),
                med(rs, |r| r.cpu_per_call_us),
            );
        }
    }
}
