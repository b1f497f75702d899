//! `pool::fs` (API "Files"): tokio::fs's names, errors that name the path,
//! and operations that never run on a worker, on whichever engine runs.
//!
//! `.ci/run` runs this file twice: as is (io_uring where the kernel gives
//! one) and with `POOL_FS=blocking` (every operation on the blocking
//! threads). `engine_is_the_one_the_kernel_and_pool_fs_allow` checks that
//! each run used the engine it meant to.

use futures::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use futures::StreamExt;
use pool::fs::{self, File, FsEngine, OpenOptions};
use std::io::{self, ErrorKind, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tests::watchdog;

/// A fresh directory for one test, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("pool-fs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pool(workers: usize) -> pool::Pool {
    pool::Builder::new()
        .worker_threads(workers)
        .build()
        .unwrap()
}

/// Does this kernel give a process an io_uring? (`io_uring_setup`.)
fn kernel_has_io_uring() -> bool {
    let mut params = [0u8; 120];
    // SAFETY: io_uring_setup writes at most `sizeof(struct io_uring_params)`
    // (120 bytes) into `params`; the descriptor it returns is closed.
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 4u32, params.as_mut_ptr()) };
    if fd < 0 {
        return false;
    }
    // SAFETY: a descriptor we own.
    unsafe { libc::close(fd as i32) };
    true
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

#[test]
fn engine_is_the_one_the_kernel_and_pool_fs_allow() {
    let forced = std::env::var("POOL_FS").is_ok_and(|v| v == "blocking");
    let expected = if !forced && kernel_has_io_uring() {
        FsEngine::IoUring
    } else {
        FsEngine::Blocking
    };
    let dir = TempDir::new("engine");
    let p = pool(2);
    assert_eq!(p.metrics().fs_engine, None, "no file operation yet");
    p.block_on(async {
        fs::write(dir.join("a"), b"x").await.unwrap();
        fs::read(dir.join("a")).await.unwrap();
        fs::metadata(dir.join("a")).await.unwrap();
    });
    let m = p.metrics();
    assert_eq!(
        m.fs_engine,
        Some(expected),
        "POOL_FS={:?}",
        std::env::var("POOL_FS")
    );
    match expected {
        FsEngine::IoUring => {
            // open, write, close; open, read, read (the end), close
            assert!(m.fs_ring_ops >= 7, "{m:?}");
            assert!(m.fs_blocking_ops >= 1, "the metadata: {m:?}");
        }
        _ => {
            assert_eq!(m.fs_ring_ops, 0, "{m:?}");
            assert!(m.fs_blocking_ops >= 3, "{m:?}");
        }
    }
}

#[test]
fn whole_file_helpers_round_trip() {
    let dir = TempDir::new("whole");
    watchdog("whole-file helpers", 60, move || {
        pool(2).block_on(async {
            // Empty, small, and larger than the first read and its growth.
            for len in [0usize, 1, 65_535, 65_536, 65_537, 3 << 20] {
                let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
                let path = dir.join(&format!("f{len}"));
                fs::write(&path, &data).await.unwrap();
                assert_eq!(
                    std::fs::read(&path).unwrap(),
                    data,
                    "written by fs::write, {len}"
                );
                assert_eq!(
                    fs::read(&path).await.unwrap(),
                    data,
                    "read by fs::read, {len}"
                );
            }
            // A write truncates what was there.
            let path = dir.join("t");
            fs::write(&path, "a longer text").await.unwrap();
            fs::write(&path, "short").await.unwrap();
            assert_eq!(fs::read_to_string(&path).await.unwrap(), "short");

            fs::write(&path, [0xff, 0xfe]).await.unwrap();
            let e = fs::read_to_string(&path).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidData);
            assert!(e.to_string().contains(&*path.to_string_lossy()), "{e}");

            assert_eq!(fs::copy(&path, dir.join("c")).await.unwrap(), 2);
            fs::rename(dir.join("c"), dir.join("d")).await.unwrap();
            assert!(!fs::try_exists(dir.join("c")).await.unwrap());
            assert!(fs::try_exists(dir.join("d")).await.unwrap());
            fs::hard_link(dir.join("d"), dir.join("e")).await.unwrap();
            fs::symlink(dir.join("d"), dir.join("s")).await.unwrap();
            assert_eq!(fs::read_link(dir.join("s")).await.unwrap(), dir.join("d"));
            assert!(fs::symlink_metadata(dir.join("s"))
                .await
                .unwrap()
                .is_symlink());
            assert_eq!(fs::metadata(dir.join("s")).await.unwrap().len(), 2);
            let canon = fs::canonicalize(dir.join("s")).await.unwrap();
            assert_eq!(canon, std::fs::canonicalize(dir.join("d")).unwrap());
            let mut perm = fs::metadata(&path).await.unwrap().permissions();
            perm.set_readonly(true);
            fs::set_permissions(&path, perm).await.unwrap();
            assert!(std::fs::metadata(&path).unwrap().permissions().readonly());
            fs::create_dir_all(dir.join("x/y/z")).await.unwrap();
            fs::create_dir(dir.join("x/w")).await.unwrap();
            fs::remove_dir(dir.join("x/w")).await.unwrap();
            fs::remove_file(dir.join("e")).await.unwrap();
            fs::remove_dir_all(dir.join("x")).await.unwrap();
            assert!(!dir.join("x").exists() && !dir.join("e").exists());
        })
    });
}

#[test]
fn every_path_error_keeps_its_kind_and_names_the_path() {
    let dir = TempDir::new("errors");
    watchdog("path errors", 60, move || {
        pool(2).block_on(async {
            let missing = dir.join("missing");
            let m = &missing;
            let file = dir.join("file");
            fs::write(&file, "x").await.unwrap();
            type Check<'a> = (&'static str, io::Result<()>, ErrorKind);
            let checks: Vec<Check<'_>> = vec![
                ("read", fs::read(m).await.map(drop), ErrorKind::NotFound),
                (
                    "read_to_string",
                    fs::read_to_string(m).await.map(drop),
                    ErrorKind::NotFound,
                ),
                (
                    "write",
                    fs::write(dir.join("no/dir"), "x").await,
                    ErrorKind::NotFound,
                ),
                (
                    "metadata",
                    fs::metadata(m).await.map(drop),
                    ErrorKind::NotFound,
                ),
                (
                    "symlink_metadata",
                    fs::symlink_metadata(m).await.map(drop),
                    ErrorKind::NotFound,
                ),
                (
                    "create_dir",
                    fs::create_dir(&file).await,
                    ErrorKind::AlreadyExists,
                ),
                (
                    "create_dir_all",
                    fs::create_dir_all(file.join("sub")).await,
                    ErrorKind::NotADirectory,
                ),
                ("remove_dir", fs::remove_dir(m).await, ErrorKind::NotFound),
                (
                    "remove_dir_all",
                    fs::remove_dir_all(m).await,
                    ErrorKind::NotFound,
                ),
                ("remove_file", fs::remove_file(m).await, ErrorKind::NotFound),
                (
                    "rename",
                    fs::rename(m, dir.join("b")).await,
                    ErrorKind::NotFound,
                ),
                (
                    "copy",
                    fs::copy(m, dir.join("b")).await.map(drop),
                    ErrorKind::NotFound,
                ),
                (
                    "hard_link",
                    fs::hard_link(m, dir.join("b")).await,
                    ErrorKind::NotFound,
                ),
                (
                    "canonicalize",
                    fs::canonicalize(m).await.map(drop),
                    ErrorKind::NotFound,
                ),
                (
                    "read_link",
                    fs::read_link(&file).await.map(drop),
                    ErrorKind::InvalidInput,
                ),
                (
                    "set_permissions",
                    fs::set_permissions(m, std::fs::metadata(&file).unwrap().permissions()).await,
                    ErrorKind::NotFound,
                ),
                (
                    "read_dir",
                    fs::read_dir(m).await.map(drop),
                    ErrorKind::NotFound,
                ),
                (
                    "File::open",
                    File::open(m).await.map(drop),
                    ErrorKind::NotFound,
                ),
                (
                    "File::create",
                    File::create(dir.join("no/dir")).await.map(drop),
                    ErrorKind::NotFound,
                ),
                (
                    "OpenOptions create_new",
                    OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&file)
                        .await
                        .map(drop),
                    ErrorKind::AlreadyExists,
                ),
                (
                    "OpenOptions without an access mode",
                    OpenOptions::new().open(&file).await.map(drop),
                    ErrorKind::InvalidInput,
                ),
            ];
            for (what, result, kind) in checks {
                let e = result.expect_err(what);
                assert_eq!(e.kind(), kind, "{what}: {e}");
                let text = e.to_string();
                let named = [&missing, &file, &dir.join("no/dir"), &file.join("sub")]
                    .iter()
                    .any(|p| text.contains(&*p.to_string_lossy()));
                assert!(named, "{what}: the error names no path: {text}");
            }
            // The OS's error is the source, with its code.
            let e = fs::read(&missing).await.unwrap_err();
            let source = std::error::Error::source(e.get_ref().unwrap()).unwrap();
            let os = source.downcast_ref::<io::Error>().unwrap();
            assert_eq!(os.raw_os_error(), Some(libc::ENOENT));
        })
    });
}

#[test]
fn a_written_and_flushed_file_is_on_disk_and_reads_back_at_its_cursor() {
    let dir = TempDir::new("cursor");
    watchdog("file cursor", 60, move || {
        pool(2).block_on(async {
            let path = dir.join("f");
            let mut f = File::create(&path).await.unwrap();
            // More than one buffer's worth: the write is taken in parts.
            let big: Vec<u8> = (0..5 << 20).map(|i| (i % 253) as u8).collect();
            f.write_all(b"head:").await.unwrap();
            f.write_all(&big).await.unwrap();
            f.flush().await.unwrap();
            let on_disk = std::fs::read(&path).unwrap();
            assert_eq!(on_disk.len(), 5 + big.len());
            assert_eq!(&on_disk[..5], b"head:");
            assert!(on_disk[5..] == big[..]);
            f.sync_all().await.unwrap();
            f.sync_data().await.unwrap();
            assert_eq!(f.metadata().await.unwrap().len(), on_disk.len() as u64);
            drop(f);

            let mut f = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .await
                .unwrap();
            let mut head = [0u8; 5];
            f.read_exact(&mut head).await.unwrap();
            assert_eq!(&head, b"head:");
            f.write_all(b"HEAD").await.unwrap(); // at the cursor, 5
            assert_eq!(f.seek(SeekFrom::Current(0)).await.unwrap(), 9);
            assert_eq!(f.seek(SeekFrom::Start(3)).await.unwrap(), 3);
            let mut six = [0u8; 6];
            f.read_exact(&mut six).await.unwrap();
            assert_eq!(&six, b"d:HEAD");
            assert_eq!(
                f.seek(SeekFrom::End(-1)).await.unwrap(),
                on_disk.len() as u64 - 1
            );
            let mut rest = Vec::new();
            f.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, [*big.last().unwrap()]);
            f.set_len(4).await.unwrap();
            f.flush().await.unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"head");

            // Appending goes to the end whatever the cursor.
            let mut a = OpenOptions::new().append(true).open(&path).await.unwrap();
            a.write_all(b"+tail").await.unwrap();
            a.flush().await.unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"head+tail");

            // into_std after a write: the bytes are there and the cursor too.
            let mut w = File::create(&path).await.unwrap();
            w.write_all(b"abc").await.unwrap();
            let mut std_file = w.into_std().await;
            assert_eq!(io::Seek::stream_position(&mut std_file).unwrap(), 3);
            assert_eq!(std::fs::read(&path).unwrap(), b"abc");
            let back = File::from_std(std_file);
            assert!(format!("{back:?}").starts_with("File"));
        })
    });
}

#[test]
fn a_write_is_taken_while_the_one_before_it_is_still_in_the_kernel() {
    let dir = TempDir::new("behind");
    watchdog("cursor writes behind a blocked one", 30, move || {
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        // The reader's end, opened first (without blocking) so that the
        // writer's open does not wait; nobody reads it yet.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let p = pool(2);
        let (first, second) = p.block_on(async {
            let mut f = OpenOptions::new().write(true).open(&fifo).await.unwrap();
            // More than the pipe holds (64 KiB): the write blocks in the
            // kernel until the reader reads.
            let first: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
            f.write_all(&first).await.unwrap();
            // With one write at a time (the file's own before, tokio's
            // File) this waits for the first: for ever, nobody reads.
            pool::time::timeout(Duration::from_secs(5), f.write_all(b"second"))
                .await
                .expect("a write queued behind a write in flight was not taken")
                .unwrap();
            // Now let the reader drain it; the flush ends when both are in.
            let drain = std::thread::spawn(move || {
                use std::io::Read;
                let mut reader = reader;
                let mut got = Vec::new();
                let mut buf = [0u8; 65536];
                while got.len() < 200_006 {
                    match reader.read(&mut buf) {
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(1))
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                got
            });
            f.flush().await.unwrap();
            (first, drain.join().unwrap())
        });
        assert_eq!(second.len(), first.len() + 6);
        assert!(second[..first.len()] == first[..], "the bytes in order");
        assert_eq!(&second[first.len()..], b"second");
    });
}

#[test]
fn a_failed_write_is_the_next_operations_error() {
    let dir = TempDir::new("behind-error");
    watchdog("a failed write behind the task", 30, move || {
        pool(2).block_on(async {
            let path = dir.join("f");
            std::fs::write(&path, b"read only").unwrap();
            // Opened for reading: every write fails (EBADF), after
            // `write` has taken its bytes.
            let mut f = File::open(&path).await.unwrap();
            assert_eq!(f.write(b"abc").await.unwrap(), 3);
            let err = f.flush().await.unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EBADF), "{err}");
            // Reported once; the file is still usable for what it can do.
            f.flush().await.unwrap();
            let mut text = String::new();
            f.read_to_string(&mut text).await.unwrap();
            assert_eq!(text, "read only");
            // A read after a failed write reports the write's error.
            f.seek(SeekFrom::Start(0)).await.unwrap();
            assert_eq!(f.write(b"xyz").await.unwrap(), 3);
            let err = f.read_to_string(&mut text).await.unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EBADF), "{err}");
            assert_eq!(std::fs::read(&path).unwrap(), b"read only");
        })
    });
}

/// Polls a future once, by hand.
fn poll_once<F: std::future::Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(futures::task::noop_waker_ref()))
}

#[test]
fn a_read_ahead_of_the_reader_is_given_back_to_a_seek_and_a_write() {
    let dir = TempDir::new("readahead");
    watchdog("read-ahead", 60, move || {
        pool(2).block_on(async {
            let path = dir.join("f");
            std::fs::write(&path, b"0123456789").unwrap();
            let mut f = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .await
                .unwrap();
            // A read of 8 starts; the reader then asks for 2 only.
            let mut eight = [0u8; 8];
            if let Poll::Ready(n) = poll_once(&mut f.read(&mut eight)) {
                // The ring completed it inside its submission (a cached
                // file): nothing was read ahead. The `POOL_FS=blocking` run
                // of this test, where the first poll always waits, checks
                // the rest.
                assert_eq!(n.unwrap(), 8);
                assert_eq!(&eight, b"01234567");
                return;
            }
            let mut two = [0u8; 2];
            assert_eq!(f.read(&mut two).await.unwrap(), 2);
            assert_eq!(&two, b"01", "the 8 bytes read, 2 handed out, 6 ahead");
            assert_eq!(f.seek(SeekFrom::Current(0)).await.unwrap(), 2);
            assert_eq!(f.read(&mut two).await.unwrap(), 2);
            assert_eq!(&two, b"23");
            // Read ahead again, then write: the write goes where the reader
            // is. A blocking-engine read can also complete in its first poll
            // (a drainer finished the job before the poll looked): then the
            // reader took those bytes, and the write goes after them.
            let reader = match poll_once(&mut f.read(&mut eight)) {
                Poll::Ready(n) => 4 + n.unwrap(),
                Poll::Pending => 4,
            };
            f.write_all(b"ab").await.unwrap();
            f.flush().await.unwrap();
            let mut expected = b"0123456789".to_vec();
            expected.splice(reader..(reader + 2).min(10), *b"ab");
            assert_eq!(std::fs::read(&path).unwrap(), expected);
        })
    });
}

#[test]
fn positional_reads_and_writes_run_many_at_once_on_one_file() {
    let dir = TempDir::new("positional");
    watchdog("positional", 60, move || {
        pool(2).block_on(async {
            let path = dir.join("f");
            let data: Vec<u8> = (0..4 << 20)
                .map(|i: u32| (i.wrapping_mul(2654435761) >> 24) as u8)
                .collect();
            std::fs::write(&path, &data).unwrap();
            let f = File::open(&path).await.unwrap();
            const PIECE: usize = 64 * 1024;
            let reads = (0..64).map(|i| f.read_at(vec![0; PIECE], (i * PIECE) as u64));
            let results = futures::future::join_all(reads).await;
            for (i, (n, buf)) in results.into_iter().enumerate() {
                assert_eq!(n.unwrap(), PIECE);
                assert!(buf[..] == data[i * PIECE..(i + 1) * PIECE], "piece {i}");
            }
            // Past the end: 0; across it: the rest.
            let (n, _) = f.read_at(vec![0; 10], data.len() as u64).await;
            assert_eq!(n.unwrap(), 0);
            let (n, buf) = f.read_at(vec![0; 10], data.len() as u64 - 3).await;
            assert_eq!(n.unwrap(), 3);
            assert_eq!(buf[..3], data[data.len() - 3..]);

            let w = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(dir.join("w"))
                .await
                .unwrap();
            let writes = (0..32u8).map(|i| w.write_at(vec![i; 4096], u64::from(i) * 4096));
            for (n, buf) in futures::future::join_all(writes).await {
                assert_eq!(n.unwrap(), buf.len());
            }
            w.sync_all().await.unwrap();
            let written = std::fs::read(dir.join("w")).unwrap();
            assert_eq!(written.len(), 32 * 4096);
            for (i, chunk) in written.chunks(4096).enumerate() {
                assert!(chunk.iter().all(|&b| b == i as u8), "chunk {i}");
            }
        })
    });
}

#[test]
fn dropped_reads_keep_their_buffers_and_leave_the_file_usable() {
    let dir = TempDir::new("dropped");
    watchdog("dropped reads", 60, move || {
        let p = pool(2);
        p.block_on(async {
            let path = dir.join("f");
            std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
            let f = File::open(&path).await.unwrap();
            for i in 0..200u64 {
                let mut read = Box::pin(f.read_at(vec![0; 256 * 1024], (i % 4) * 256 * 1024));
                let _ = poll_once(&mut read);
                drop(read); // in flight or done: either way nothing dangles
            }
            // A FIFO's read never completes until a writer comes: dropped in
            // flight for sure. Its buffer lives until the kernel lets go.
            let fifo = dir.join("fifo");
            mkfifo(&fifo);
            let writer = {
                let fifo = fifo.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(100));
                    std::fs::write(fifo, vec![9u8; 4096]).unwrap();
                })
            };
            let reader = File::open(&fifo).await.unwrap();
            let mut read = Box::pin(reader.read_at(vec![0; 4096], 0));
            let _ = poll_once(&mut read);
            drop(read);
            writer.join().unwrap();
            let (n, buf) = f.read_at(vec![0; 16], 0).await;
            assert_eq!((n.unwrap(), buf), (16, vec![7u8; 16]));
        });
        drop(p);
    });
}

#[test]
fn read_dir_yields_every_entry_as_a_stream_and_by_next_entry() {
    let dir = TempDir::new("readdir");
    watchdog("read_dir", 60, move || {
        pool(2).block_on(async {
            for i in 0..300 {
                std::fs::write(dir.join(&format!("f{i:03}")), [0u8; 3]).unwrap();
            }
            std::fs::create_dir(dir.join("sub")).unwrap();
            let mut names = Vec::new();
            let mut entries = fs::read_dir(&dir.0).await.unwrap();
            while let Some(e) = entries.next_entry().await.unwrap() {
                let t = e.file_type().await.unwrap();
                assert_eq!(t.is_dir(), e.file_name() == "sub");
                if t.is_file() {
                    assert_eq!(e.metadata().await.unwrap().len(), 3);
                }
                assert_eq!(e.path(), dir.0.join(e.file_name()));
                assert!(e.ino() > 0);
                names.push(e.file_name());
            }
            assert!(entries.next_entry().await.unwrap().is_none(), "stays ended");
            names.sort();
            assert_eq!(names.len(), 301);
            assert_eq!(names[0], "f000");
            let streamed: Vec<_> = fs::read_dir(&dir.0).await.unwrap().collect().await;
            assert_eq!(streamed.len(), 301);
            assert!(streamed.iter().all(Result::is_ok));
        })
    });
}

#[test]
fn a_blocked_file_operation_never_holds_a_worker() {
    let dir = TempDir::new("fifo-worker");
    watchdog("a FIFO's open off the workers", 30, move || {
        let p = pool(1);
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        // Opening a FIFO for writing blocks until a reader comes: on a
        // worker it would stop the pool's only worker.
        let writer = {
            let fifo = fifo.clone();
            p.spawn(async move { fs::write(fifo, "through the pipe").await })
        };
        p.block_on(async {
            for _ in 0..5 {
                assert_eq!(pool::spawn(async { 1 + 1 }).await.unwrap(), 2);
                pool::time::sleep(Duration::from_millis(10)).await;
            }
        });
        let text = std::fs::read_to_string(&fifo).unwrap();
        assert_eq!(text, "through the pipe");
        p.block_on(writer).unwrap().unwrap();
    });
}

#[test]
fn operations_that_wait_for_each_other_both_complete() {
    let dir = TempDir::new("fifo-pair");
    watchdog("a FIFO's two ends opened through pool::fs", 30, move || {
        pool(1).block_on(async {
            let fifo = dir.join("fifo");
            mkfifo(&fifo);
            // Each open waits for the other: one blocking thread running
            // operations in turn would never finish the first.
            let (written, reader) = futures::join!(fs::write(&fifo, "hello"), File::open(&fifo));
            written.unwrap();
            let mut text = String::new();
            reader.unwrap().read_to_string(&mut text).await.unwrap();
            assert_eq!(text, "hello");
        })
    });
}

#[test]
fn an_operation_in_flight_holds_a_paused_clock() {
    let dir = TempDir::new("paused");
    watchdog("a file operation on a paused clock", 30, move || {
        let p = pool::Builder::new()
            .worker_threads(2)
            .start_paused(true)
            .build()
            .unwrap();
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                std::fs::read(fifo).unwrap()
            })
        };
        let elapsed = p.block_on(async move {
            let start = pool::time::Instant::now();
            let write = pool::spawn(fs::write(fifo, "x"));
            // The only timer: it fires when the clock jumps, which it must
            // not do while the write waits in the kernel for its reader.
            let timeout = pool::time::timeout(Duration::from_secs(3600), write).await;
            timeout
                .expect("the clock jumped while the write was in flight")
                .unwrap()
                .unwrap();
            start.elapsed()
        });
        assert_eq!(reader.join().unwrap(), b"x");
        assert!(elapsed < Duration::from_secs(3600), "{elapsed:?}");
    });
}

#[test]
fn tokio_io_traits_read_write_and_seek_a_file() {
    let dir = TempDir::new("tokio-io");
    watchdog("tokio's traits on a File", 30, move || {
        pool(2).block_on(async {
            let path = dir.join("f");
            let mut f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .await
                .unwrap();
            tokio::io::AsyncWriteExt::write_all(&mut f, b"tokio-typed")
                .await
                .unwrap();
            tokio::io::AsyncWriteExt::flush(&mut f).await.unwrap();
            assert_eq!(
                tokio::io::AsyncSeekExt::stream_position(&mut f)
                    .await
                    .unwrap(),
                11
            );
            tokio::io::AsyncSeekExt::seek(&mut f, SeekFrom::Start(6))
                .await
                .unwrap();
            let mut s = String::new();
            tokio::io::AsyncReadExt::read_to_string(&mut f, &mut s)
                .await
                .unwrap();
            assert_eq!(s, "typed");
        })
    });
}

#[test]
fn a_metadata_walk_pays_a_job_per_chunk_not_per_entry() {
    let dir = TempDir::new("walk");
    for i in 0..640 {
        std::fs::write(dir.join(&format!("f{i:03}")), vec![0u8; i % 7]).unwrap();
    }
    watchdog("a metadata walk", 60, move || {
        let p = pool(2);
        let before = p.metrics().fs_blocking_ops;
        let total = p.block_on(async {
            let mut total = 0;
            let mut entries = fs::read_dir(&dir.0).await.unwrap();
            while let Some(e) = entries.next_entry().await.unwrap() {
                let name = e.file_name().into_string().unwrap();
                let len = e.metadata().await.unwrap().len();
                let i: usize = name[1..].parse().unwrap();
                assert_eq!(
                    len as usize,
                    i % 7,
                    "{name}: metadata read ahead is the entry's own"
                );
                total += len;
            }
            total
        });
        assert_eq!(total, (0..640).map(|i| (i % 7) as u64).sum::<u64>());
        // The first chunk (64 entries) asks one at a time; the next nine
        // chunks read their metadata with their entries.
        let jobs = p.metrics().fs_blocking_ops - before;
        assert!(
            jobs < 100,
            "{jobs} jobs for 640 entries: metadata not read with the chunks"
        );
    });
}

#[test]
fn io_uring_false_keeps_a_pool_on_the_blocking_threads() {
    let dir = TempDir::new("no-ring");
    let p = pool::Builder::new()
        .worker_threads(1)
        .io_uring(false)
        .build()
        .unwrap();
    p.block_on(async {
        fs::write(dir.join("a"), "b").await.unwrap();
        assert_eq!(fs::read(dir.join("a")).await.unwrap(), b"b");
    });
    let m = p.metrics();
    assert_eq!(m.fs_engine, Some(FsEngine::Blocking));
    assert_eq!(m.fs_ring_ops, 0);
}

#[test]
fn a_pool_dropped_with_a_ring_operation_in_flight_shuts_down() {
    let dir = TempDir::new("drop-in-flight");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let p = pool(2);
    let engine = p.block_on(async {
        fs::metadata(&dir.0).await.unwrap();
        pool::Handle::current().metrics().fs_engine
    });
    if engine != Some(FsEngine::IoUring) {
        // On the blocking threads a FIFO's open blocks its thread until a
        // reader comes, and a pool's drop waits for its blocking threads,
        // as with any `spawn_blocking` closure.
        return;
    }
    watchdog(
        "dropping a pool with a file operation in flight",
        30,
        move || {
            // Waits in the kernel (on one of its io-wq threads) for a reader.
            let write = p.spawn(fs::write(fifo.clone(), "never read"));
            std::thread::sleep(Duration::from_millis(50));
            drop(p); // cancels the task: its operation is abandoned, then the ring closed
            let e = futures::executor::block_on(write).unwrap_err();
            assert!(e.is_cancelled(), "{e}");
            // A reader now finds no writer: the kernel cancelled the open.
            let mut reader = std::fs::OpenOptions::new();
            std::os::unix::fs::OpenOptionsExt::custom_flags(&mut reader, libc::O_NONBLOCK);
            let mut f = reader.read(true).open(&fifo).unwrap();
            let mut buf = Vec::new();
            assert_eq!(std::io::Read::read_to_end(&mut f, &mut buf).unwrap(), 0);
        },
    );
}
