//! Running out of file descriptors: `accept` returns the OS's error and the
//! listener keeps working once descriptors are free. Its own test binary:
//! it lowers the process's descriptor limit.

use pool::net::TcpListener;
use pool::Builder;
use std::io;
use tests::watchdog;

#[test]
fn accept_reports_emfile_and_the_listener_works_again_once_descriptors_are_free() {
    watchdog("fd exhaustion", 30, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        p.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            // A connection waits in the backlog while descriptors run out.
            let client = std::net::TcpStream::connect(addr).unwrap();
            let hogs = tests::use_up_descriptors(256);
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
