//! Running out of file descriptors: `accept` returns the OS's error and the
//! listener keeps working once descriptors are free. Its own test binary:
//! it lowers the process's descriptor limit.

use pool::net::TcpListener;
use pool::Builder;
use std::fs::File;
use std::io;
use tests::watchdog;

/// Lower the soft limit on open descriptors to `n`.
fn set_fd_limit(n: u64) {
    tests::set_soft_limit(libc::RLIMIT_NOFILE, Some(n));
}

#[test]
fn accept_reports_emfile_and_the_listener_works_again_once_descriptors_are_free() {
    watchdog("fd exhaustion", 30, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        p.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            // A connection waits in the backlog while descriptors run out.
            let client = std::net::TcpStream::connect(addr).unwrap();
            set_fd_limit(256);
            let mut hogs = Vec::new();
            loop {
                match File::open("/dev/null") {
                    Ok(f) => hogs.push(f),
                    Err(e) if e.raw_os_error() == Some(libc::EMFILE) => break,
                    Err(e) => panic!("unexpected error while using up descriptors: {e}"),
                }
            }
            let err = listener.accept().await.unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EMFILE), "{err}");
            // Again, without a new event: the listener did not lose the
            // pending connection's readiness.
            let err = listener.accept().await.unwrap_err();
            assert_eq!(
                err.kind(),
                io::Error::from_raw_os_error(libc::EMFILE).kind()
            );
            drop(hogs);
            let (_conn, peer) = listener.accept().await.unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
        });
    });
}
