//! Running out of file descriptors: `accept` answers the connection at the
//! head of the backlog with a reset through the listener's spare
//! descriptor, counts the error and returns it; the other pending
//! connections stay queued and are accepted once descriptors are free; with
//! nothing pending an accept on a full table waits, it does not spin. Its
//! own test binary: it lowers the process's descriptor limit.

use pool::net::TcpListener;
use pool::Builder;
use std::io::Read;
use std::time::Duration;
use tests::watchdog;

/// A client's read of a connection the server reset: `ConnectionReset`, not
/// a hang (the read times out after 5 s, which fails the test).
fn assert_reset(client: &mut std::net::TcpStream) {
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let got = client.read(&mut [0; 16]);
    let err = got.expect_err("the head of the backlog was answered with a reset");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}");
}

#[test]
fn accept_at_emfile_resets_the_head_keeps_the_rest_and_never_spins() {
    watchdog("fd exhaustion", 30, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        let metrics = || p.metrics().accept_errors;
        p.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            // Three connections wait in the backlog while descriptors run out.
            let mut first = std::net::TcpStream::connect(addr).unwrap();
            let second = std::net::TcpStream::connect(addr).unwrap();
            let third = std::net::TcpStream::connect(addr).unwrap();
            let hogs = tests::use_up_descriptors(256);
            let err = listener.accept().await.unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EMFILE), "{err}");
            assert_eq!(metrics(), 1);
            // The head of the backlog got its answer: a reset.
            assert_reset(&mut first);
            // The rest stayed queued: accepted, in order, once descriptors free.
            drop(hogs);
            let (_conn, peer) = listener.accept().await.unwrap();
            assert_eq!(peer, second.local_addr().unwrap());
            let (_conn3, peer) = listener.accept().await.unwrap();
            assert_eq!(peer, third.local_addr().unwrap());

            // A full table and nothing pending: the accept waits for a
            // connection, counting nothing and burning no CPU.
            let hogs = tests::use_up_descriptors(256);
            tests::assert_accept_waits_without_spinning(listener.accept()).await;
            assert_eq!(metrics(), 1, "an empty backlog is no accept error");
            // A connection that comes meanwhile is answered at once.
            let accept = pool::spawn(async move { listener.accept().await.map(|_| ()) });
            // A descriptor for the client itself (the table is full).
            let mut hogs = hogs;
            drop(hogs.pop());
            let mut late = std::net::TcpStream::connect(addr).unwrap();
            let err = accept.await.unwrap().unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EMFILE), "{err}");
            assert_reset(&mut late);
            assert_eq!(metrics(), 2);
            drop(hogs);
        });
        tests::set_soft_limit(libc::RLIMIT_NOFILE, None);
    });
}
