//! The echo example as a real server: 100 concurrent clients, 1 000 messages
//! each, nothing lost, and a clean exit on Ctrl-C (SIGINT).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use tests::watchdog;

const CLIENTS: usize = 100;
const MESSAGES: usize = 1_000;

/// Kills the server if the test fails, so no orphan keeps the test's output
/// pipes open.
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn a_hundred_clients_get_every_message_back_and_ctrl_c_stops_the_server() {
    let mut server = Command::new(tests::example_binary("echo"))
        .args(["--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the echo example");
    let pid = server.id();
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    let mut guard = KillOnDrop(Some(server));
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();

    let result = watchdog("echo clients", 120, move || {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let addr = addr.clone();
                std::thread::spawn(move || {
                    let mut stream = TcpStream::connect(&addr).expect("connect");
                    stream.set_nodelay(true).unwrap();
                    let mut back = [0u8; 32];
                    for m in 0..MESSAGES {
                        let msg = format!("{c:>8}:{m:>8}:{:>14}", c * MESSAGES + m);
                        assert_eq!(msg.len(), 32);
                        stream.write_all(msg.as_bytes()).unwrap();
                        stream.read_exact(&mut back).unwrap();
                        assert_eq!(&back, msg.as_bytes(), "client {c} message {m}");
                    }
                    MESSAGES
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|c| c.join().unwrap())
            .sum::<usize>()
    });
    assert_eq!(result, CLIENTS * MESSAGES);

    // Ctrl-C: the server stops accepting, drops its connections, exits 0.
    // SAFETY: `kill` only sends a signal to the child we started.
    let rc = unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let mut server = guard.0.take().unwrap();
    let status = watchdog("echo shutdown", 20, move || server.wait().unwrap());
    assert!(status.success(), "{status:?}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(
        rest.trim(),
        format!("shut down after serving {CLIENTS} connections")
    );
}
