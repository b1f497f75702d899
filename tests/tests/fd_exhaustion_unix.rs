//! Running out of file descriptors while accepting on a Unix listener: the
//! connection at the head of the backlog is closed through the listener's
//! spare descriptor (its client reads the end of the stream, not a hang),
//! the error is counted and returned, the rest stay queued, and an accept on
//! a full table with nothing pending waits without spinning. Its own test
//! binary: it lowers the process's descriptor limit.

use futures::AsyncReadExt;
use pool::net::{UnixListener, UnixStream};
use pool::Builder;
use std::time::Duration;
use tests::watchdog;

#[test]
fn unix_accept_at_emfile_answers_the_head_and_never_spins() {
    watchdog("unix fd exhaustion", 30, || {
        let path = std::env::temp_dir().join(format!("pool-emfile-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let p = Builder::new().worker_threads(2).build().unwrap();
        p.block_on(async {
            let listener = UnixListener::bind(&path).unwrap();
            // Two connections wait in the backlog while descriptors run out.
            let mut first = UnixStream::connect(&path).await.unwrap();
            let _second = UnixStream::connect(&path).await.unwrap();
            let hogs = tests::use_up_descriptors(256);
            let err = listener.accept().await.unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EMFILE), "{err}");
            assert_eq!(pool::Handle::current().metrics().accept_errors, 1);
            // The head was answered: closed, so its read ends.
            let read = pool::time::timeout(Duration::from_secs(5), first.read(&mut [0; 8])).await;
            assert!(
                matches!(read, Ok(Ok(0)) | Ok(Err(_))),
                "the head of the backlog was left hanging: {read:?}"
            );
            // The second stayed queued.
            drop(hogs);
            let (_conn, _) = listener.accept().await.unwrap();
            // Full table, nothing pending: the accept waits, no spinning.
            let hogs = tests::use_up_descriptors(256);
            tests::assert_accept_waits_without_spinning(listener.accept()).await;
            drop(hogs);
        });
        tests::set_soft_limit(libc::RLIMIT_NOFILE, None);
        let _ = std::fs::remove_file(&path);
    });
}
