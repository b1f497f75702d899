//! The echo example as a real server: 100 concurrent clients, 1 000 messages
//! each, nothing lost, and a clean exit on Ctrl-C (SIGINT).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use tests::{watchdog, ListeningServer};

const CLIENTS: usize = 100;
const MESSAGES: usize = 1_000;

#[test]
fn a_hundred_clients_get_every_message_back_and_ctrl_c_stops_the_server() {
    let server = ListeningServer::start(
        Command::new(tests::example_binary("echo"))
            .args(["--addr", "127.0.0.1:0"])
            .stderr(Stdio::null()),
    );
    let addr = server.addr.clone();

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
    let (status, rest) = server.interrupt(20);
    assert!(status.success(), "{status:?}");
    assert_eq!(
        rest.trim(),
        format!("shut down after serving {CLIENTS} connections")
    );
}
