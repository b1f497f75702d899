//! Running out of file descriptors while accepting on a Unix listener: the
//! error is reported (every time, without spinning on the worker) and the
//! listener accepts again once descriptors are free. Its own test binary: it
//! lowers the process's descriptor limit.

use pool::net::{UnixListener, UnixStream};
use pool::Builder;
use std::time::Duration;
use tests::watchdog;

#[test]
fn unix_accept_reports_emfile_without_spinning_and_recovers() {
    watchdog("unix fd exhaustion", 30, || {
        let path = std::env::temp_dir().join(format!("pool-emfile-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let p = Builder::new().worker_threads(2).build().unwrap();
        p.block_on(async {
            let listener = UnixListener::bind(&path).unwrap();
            // A connection waits in the backlog while descriptors run out.
            let _client = UnixStream::connect(&path).await.unwrap();
            let hogs = tests::use_up_descriptors(256);
            // An accept loop as a service writes it: report, back off,
            // retry. Each accept returns the error once (no spinning inside
            // pool), and the pending connection's readiness is not lost.
            let cpu_before = tests::process_cpu_time();
            for _ in 0..5 {
                let err = listener.accept().await.unwrap_err();
                assert_eq!(err.raw_os_error(), Some(libc::EMFILE), "{err}");
                pool::time::sleep(Duration::from_millis(20)).await;
            }
            let cpu = tests::process_cpu_time() - cpu_before;
            // 100 ms of wall time in back-off; a spinning accept would burn
            // most of it.
            assert!(
                cpu < Duration::from_millis(60),
                "{cpu:?} of CPU while backing off"
            );
            drop(hogs);
            tests::set_soft_limit(libc::RLIMIT_NOFILE, None);
            let (_conn, _) = listener.accept().await.unwrap();
        });
        let _ = std::fs::remove_file(&path);
    });
}
