//! `pool::io::Async`: any descriptor on the pool's driver.

use futures::{AsyncReadExt, AsyncWriteExt};
use pool::io::Async;
use pool::Builder;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::mpsc;
use std::time::Duration;
use tests::watchdog;

/// A pipe: (read end, write end), blocking as made.
fn pipe() -> (File, File) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is an array of two descriptors for pipe2 to fill.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: pipe2 succeeded: both are open and ours alone.
    unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
}

/// An eventfd counter.
fn eventfd() -> OwnedFd {
    // SAFETY: eventfd has no memory arguments; a result >= 0 is a new fd.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    assert!(fd >= 0, "eventfd: {}", io::Error::last_os_error());
    // SAFETY: `fd` is open and ours alone.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

#[test]
fn a_pipe_reads_and_writes_through_the_driver_and_a_waiting_reader_sleeps() {
    watchdog("Async pipe", 30, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        let (r, w) = pipe();
        let (mut r, mut w) = p.block_on(async { (Async::new(r).unwrap(), Async::new(w).unwrap()) });
        let (tx, rx) = mpsc::channel();
        p.spawn(async move {
            let mut buf = [0u8; 5];
            r.read_exact(&mut buf).await.unwrap();
            tx.send(buf).unwrap();
            // End of file once the writer is gone.
            let mut rest = Vec::new();
            r.read_to_end(&mut rest).await.unwrap();
            tx.send([rest.len() as u8; 5]).unwrap();
        });
        // The reader waits on the driver, not by spinning: the pool sleeps.
        tests::wait_until_asleep(&p);
        p.block_on(async { w.write_all(b"hello").await.unwrap() });
        assert_eq!(&rx.recv_timeout(Duration::from_secs(5)).unwrap(), b"hello");
        drop(w);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), [0; 5]);
    });
}

#[test]
fn readable_and_read_with_on_an_eventfd() {
    watchdog("Async eventfd", 30, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        p.block_on(async {
            let efd = Async::new(eventfd()).unwrap();
            let raw = efd.as_raw_fd();
            let mut readable = Box::pin(efd.readable());
            assert!(
                futures::poll!(&mut readable).is_pending(),
                "zero counter: not readable"
            );
            let poster = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                let one = 1u64.to_ne_bytes();
                // SAFETY: `raw` stays open (the test holds `efd` until the
                // thread is joined); the buffer is 8 valid bytes.
                assert_eq!(unsafe { libc::write(raw, one.as_ptr().cast(), 8) }, 8);
            });
            readable.await.unwrap();
            let count = efd
                .read_with(|fd| {
                    let mut buf = [0u8; 8];
                    // SAFETY: `buf` is 8 writable bytes; `fd` is open.
                    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
                    if n < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(u64::from_ne_bytes(buf))
                })
                .await
                .unwrap();
            assert_eq!(count, 1);
            poster.join().unwrap();
            // Read to zero: the next readable waits again.
            let mut again = Box::pin(efd.readable());
            assert!(futures::poll!(&mut again).is_pending());
            efd.writable().await.unwrap();
        });
    });
}

#[test]
fn into_inner_gives_the_descriptor_back_working() {
    let p = Builder::new().worker_threads(1).build().unwrap();
    let (r, mut w) = pipe();
    let r = p.block_on(async { Async::new(r).unwrap() });
    let mut r = r.into_inner().unwrap();
    w.write_all(b"x").unwrap();
    let mut one = [0u8; 1];
    r.read_exact(&mut one).unwrap();
    assert_eq!(&one, b"x");
    // Still non-blocking, as the docs say.
    let err = r.read(&mut one).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    // And it can go back on the driver.
    p.block_on(async move {
        let mut r = Async::new(r).unwrap();
        w.write_all(b"y").unwrap();
        r.read_exact(&mut one).await.unwrap();
        assert_eq!(&one, b"y");
    });
}

#[test]
fn a_regular_file_is_an_error_not_a_hang() {
    let p = Builder::new().worker_threads(1).build().unwrap();
    let file = File::open("/proc/self/status").unwrap();
    let err = p.block_on(async { Async::new(file) }).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EPERM), "{err}");
}
