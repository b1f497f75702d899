//! The load-shedding example in its own process: every request is
//! answered while the load is light; past one worker's capacity some are
//! answered 503 with `Retry-After` (and none is lost), and once the load
//! is gone every request is served again. Its count on Ctrl-C adds up.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use tests::{example_binary, watchdog, ListeningServer};

/// One request on a new connection: (status, the whole reply).
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    (reply[9..12].parse().unwrap(), reply)
}

#[test]
fn it_sheds_past_capacity_with_503_and_serves_again_after() {
    watchdog("shed_load example", 120, || {
        let server = ListeningServer::start(
            std::process::Command::new(example_binary("shed_load")).args([
                "--addr",
                "127.0.0.1:0",
                "--workers",
                "1",
                "--max-delay-ms",
                "10",
            ]),
        );
        let addr = server.addr.clone();
        // Light: one request at a time is always served.
        for _ in 0..10 {
            assert_eq!(get(&addr, "/work?us=200").0, 200);
        }
        // Past capacity: 48 clients at once, each request 3 ms of the one
        // worker's CPU, so a request waits for up to 47 others.
        let clients: Vec<_> = (0..48)
            .map(|_| {
                let addr = addr.clone();
                std::thread::spawn(move || {
                    (0..10)
                        .map(|_| get(&addr, "/work?us=3000"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let (mut ok, mut shed) = (0, 0);
        for c in clients {
            for (status, reply) in c.join().unwrap() {
                match status {
                    200 => ok += 1,
                    503 => {
                        assert!(
                            reply.to_ascii_lowercase().contains("retry-after: 1"),
                            "{reply}"
                        );
                        assert!(reply.contains("overloaded"), "{reply}");
                        shed += 1;
                    }
                    other => panic!("status {other}: {reply}"),
                }
            }
        }
        assert_eq!(ok + shed, 480, "every request was answered");
        assert!(shed > 0, "48 clients on one worker: nothing was shed");
        assert!(ok > 0, "everything was shed");
        // The load is gone: after the pool idles, every request is served.
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..10 {
            assert_eq!(get(&addr, "/work?us=200").0, 200);
        }
        let (status, out) = server.interrupt(30);
        assert!(status.success(), "{status}: {out}");
        assert_eq!(
            out.trim(),
            format!("served {}, shed {shed}", ok + 20),
            "the example's own count"
        );
    });
}
