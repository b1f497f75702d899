//! The service example under real signals, in its own process: it serves on
//! TCP and on a Unix socket, reloads on SIGHUP, and on SIGTERM stops
//! accepting, lets the open connection finish, stops its helper and exits 0.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;
use tests::{example_binary, watchdog, ListeningServer};

fn ask(stream: &mut (impl Write + std::io::Read), line: &str) -> String {
    stream.write_all(format!("{line}\n").as_bytes()).unwrap();
    let mut reply = String::new();
    let mut reader = BufReader::new(stream);
    reader.read_line(&mut reply).unwrap();
    reply.trim_end().to_string()
}

#[test]
fn serves_tcp_and_unix_reloads_on_sighup_and_drains_on_sigterm() {
    watchdog("service example", 60, || {
        let dir = std::env::temp_dir();
        let pid = std::process::id();
        let sock = dir.join(format!("pool-service-test-{pid}.sock"));
        let config = dir.join(format!("pool-service-test-{pid}.conf"));
        std::fs::write(&config, "hello\n").unwrap();
        let mut server = ListeningServer::start(
            std::process::Command::new(example_binary("service"))
                .args(["--addr", "127.0.0.1:0", "--unix"])
                .arg(&sock)
                .arg("--config")
                .arg(&config)
                .args(["--helper", "sleep 600"]),
        );
        assert_eq!(server.read_line(), format!("unix {}", sock.display()));

        let mut tcp = TcpStream::connect(&server.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut unix = UnixStream::connect(&sock).unwrap();
        unix.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        assert_eq!(ask(&mut tcp, "one"), "hello one");
        assert_eq!(ask(&mut unix, "two"), "hello two");

        // SIGHUP: the new greeting, on the connections already open.
        std::fs::write(&config, "bonjour\n").unwrap();
        server.signal(libc::SIGHUP);
        assert_eq!(server.read_line(), "reloaded: bonjour");
        assert_eq!(ask(&mut tcp, "three"), "bonjour three");

        // SIGTERM while a request is in flight on the Unix connection.
        unix.write_all(b"slow\n").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        server.signal(libc::SIGTERM);
        let draining = server.read_line();
        assert!(
            draining.starts_with("draining on SIGTERM: 2 open"),
            "{draining}"
        );
        // No longer accepting, on either socket.
        let refused = TcpStream::connect(&server.addr).unwrap_err();
        assert_eq!(
            refused.kind(),
            std::io::ErrorKind::ConnectionRefused,
            "{refused}"
        );
        assert!(!sock.exists(), "the socket file is removed when draining");
        // The request in flight is answered.
        let mut reply = String::new();
        BufReader::new(&mut unix).read_line(&mut reply).unwrap();
        assert_eq!(reply, "bonjour slow\n");
        // The open connections finish when their clients close.
        drop(unix);
        drop(tcp);
        let (status, rest) = server.wait(20);
        assert!(status.success(), "{status}: {rest}");
        assert!(rest.contains("helper stopped: signal: 9"), "{rest}");
        assert!(rest.trim_end().ends_with("drained"), "{rest}");
        let _ = std::fs::remove_file(&config);
    });
}

#[test]
fn ctrl_c_with_nothing_open_exits_at_once() {
    watchdog("service example on Ctrl-C", 60, || {
        let sock =
            std::env::temp_dir().join(format!("pool-service-ctrlc-{}.sock", std::process::id()));
        let mut server = ListeningServer::start(
            std::process::Command::new(example_binary("service"))
                .args(["--addr", "127.0.0.1:0", "--unix"])
                .arg(&sock),
        );
        server.read_line();
        let (status, rest) = server.interrupt(20);
        assert!(status.success(), "{status}: {rest}");
        assert!(rest.starts_with("draining on SIGINT: 0 open"), "{rest}");
        assert!(!sock.exists());
    });
}
