//! The reference service in its own process, served each way (pool's
//! `serve`, tokio's `axum::serve` inside a pool, tokio): every route over
//! real HTTP (JSON, the static file plain and gzipped, the database found
//! and not found, the reqwest proxy, the timeout), a WebSocket echo, and a
//! graceful shutdown on Ctrl-C.

use examples::reference::{BLOB_BYTES, USERS};
use tests::client::{get, WsClient, BINARY, CLOSE, TEXT};
use tests::{example_binary, watchdog, ListeningServer};

fn start(runtime: &str, upstream: Option<&str>) -> ListeningServer {
    let mut cmd = std::process::Command::new(example_binary("reference_service"));
    cmd.args(["--runtime", runtime, "--workers", "2"]);
    if let Some(url) = upstream {
        cmd.args(["--upstream", url]);
    }
    ListeningServer::start(&mut cmd)
}

fn every_route(runtime: &str) {
    // An upstream for /proxy: the same service on tokio (the tokio run's
    // own /json when it is the one under test).
    let upstream = start("tokio", None);
    let upstream_url = format!("http://{}/json", upstream.addr);
    let server = start(runtime, Some(&upstream_url));
    let addr = server.addr.as_str();

    let json = get(addr, "/json", &[]).unwrap();
    assert_eq!(json.status, 200, "{json:?}");
    assert_eq!(
        json.text(),
        format!(r#"{{"message":"hello from the reference service","users":{USERS}}}"#)
    );

    let blob = get(addr, "/static/blob.txt", &[]).unwrap();
    assert_eq!((blob.status, blob.body.len()), (200, BLOB_BYTES));
    assert!(blob.text().starts_with("The quick brown fox"));
    let gzipped = get(addr, "/static/blob.txt", &["accept-encoding: gzip"]).unwrap();
    assert_eq!(gzipped.status, 200);
    assert!(
        gzipped.headers.contains("content-encoding: gzip"),
        "{}",
        gzipped.headers
    );
    assert!(
        gzipped.body.len() < BLOB_BYTES / 10,
        "{} bytes",
        gzipped.body.len()
    );

    for id in [1, 7, USERS] {
        let user = get(addr, &format!("/users/{id}"), &[]).unwrap();
        assert_eq!(user.status, 200);
        assert_eq!(user.text(), format!(r#"{{"id":{id},"name":"user-{id}"}}"#));
    }
    let missing = get(addr, "/users/100000", &[]).unwrap();
    assert_eq!(missing.status, 404);
    assert_eq!(missing.text(), r#"{"error":"no user 100000"}"#);

    let proxied = get(addr, "/proxy", &[]).unwrap();
    assert_eq!((proxied.status, proxied.text()), (200, json.text()));

    assert_eq!(get(addr, "/sleep/10", &[]).unwrap().text(), "slept 10 ms");
    assert_eq!(get(addr, "/sleep/5000", &[]).unwrap().status, 408);

    // Several sockets at once, each echoing text and binary messages.
    let mut sockets: Vec<WsClient> = (0..4)
        .map(|_| WsClient::connect(addr, "/ws").unwrap())
        .collect();
    for round in 0..50u32 {
        for (i, ws) in sockets.iter_mut().enumerate() {
            let text = format!("socket {i} round {round}");
            ws.send(TEXT, text.as_bytes()).unwrap();
            assert_eq!(ws.recv().unwrap(), (TEXT, text.into_bytes()));
            let big = vec![round as u8; 70_000];
            assert_eq!(ws.echo(&big).unwrap(), (BINARY, big));
        }
    }
    for ws in &mut sockets {
        ws.send(CLOSE, &[]).unwrap();
        assert_eq!(ws.recv().unwrap().0, CLOSE);
    }

    // On a pool, the pool's own figures: every request above ran on it.
    let metrics = get(addr, "/metrics", &[]).unwrap();
    if runtime == "tokio" {
        assert_eq!(metrics.status, 404);
    } else {
        assert_eq!(metrics.status, 200, "{metrics:?}");
        let text = metrics.text();
        assert!(text.contains("pool_workers 2\n"), "{text}");
        let value = |series: &str| -> f64 {
            text.lines()
                .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {series} in {text}"))
        };
        // Under pool::hyper::serve every connection is a pool task; under
        // axum::serve they are tokio's tasks, on the workers' runtimes.
        let spawned = value("pool_tasks_spawned_total");
        if runtime == "pool" {
            assert!(
                spawned >= 10.0,
                "{spawned} tasks spawned for all those requests"
            );
        }
        // Either way the workers did the work, and it shows as busy time.
        let busy = value("pool_worker_busy_seconds_total{worker=\"0\"}")
            + value("pool_worker_busy_seconds_total{worker=\"1\"}");
        assert!(busy > 0.01, "{runtime}: the workers' busy time {busy} s");
    }

    let (status, rest) = server.interrupt(30);
    assert!(status.success(), "{runtime}: {status}: {rest}");
    assert_eq!(rest.trim(), "shut down");
}

#[test]
fn every_route_on_pool_serve() {
    watchdog("reference service on pool::hyper::serve", 120, || {
        every_route("pool")
    });
}

#[test]
fn every_route_with_axum_serve_inside_a_pool() {
    watchdog("reference service, axum::serve in a pool", 120, || {
        every_route("pool-axum-serve")
    });
}

#[test]
fn every_route_on_tokio() {
    watchdog("reference service on tokio", 120, || every_route("tokio"));
}
