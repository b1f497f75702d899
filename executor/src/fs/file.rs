//! `File`: an open file whose operations run off the workers, with
//! futures-io's `AsyncRead`, `AsyncWrite` and `AsyncSeek` (tokio's too,
//! with feature `tokio-io`) at its cursor, and positional owned-buffer
//! `read_at` / `write_at`, several in flight at once on one `&File`.
//!
//! The cursor operations run in order, like tokio's. A write copies the
//! caller's bytes into the file's queue and returns at once; one blocking
//! call writes the queue behind the task, in order, while the task copies
//! its next bytes (`write_behind.rs`); an error, if any, comes from the
//! next operation, or `flush`. A read, a seek or a sync first waits for
//! the queue to be written. A read reads into the file's buffer and hands
//! out what the caller has room for, keeping the rest for the next read (a
//! seek or a write first moves the cursor back over what was read ahead
//! and not handed out).

use super::engine::Engine;
use super::ops::{self, At};
use super::write_behind::WriteBehind;
use crate::task::waits::FileOp;
use futures::future::BoxFuture;
use futures::lock::Mutex;
use std::fmt;
use std::fs::File as StdFile;
use std::io::{self, SeekFrom};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

/// The most one cursor read reads, as tokio's `File`, and the most bytes
/// queued for the cursor's writes (a larger write is taken in parts).
const MAX_BUF: usize = 2 * 1024 * 1024;

/// An open file. See the module docs of [`crate::fs`].
///
/// # Examples
///
/// ```
/// use futures::io::{AsyncReadExt, AsyncWriteExt};
///
/// # let dir = std::env::temp_dir().join(format!("pool-doc-file-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("hello.txt");
/// pool::Pool::new().unwrap().block_on(async {
///     let mut file = pool::fs::File::create(&path).await?;
///     file.write_all(b"hello").await?;
///     file.flush().await?; // now the bytes are in the file
///
///     let mut text = String::new();
///     pool::fs::File::open(&path).await?.read_to_string(&mut text).await?;
///     assert_eq!(text, "hello");
///
///     // Positional reads with owned buffers, several at once on one file:
///     let file = pool::fs::File::open(&path).await?;
///     let (a, b) = futures::join!(file.read_at(vec![0; 2], 0), file.read_at(vec![0; 3], 2));
///     assert_eq!((a.0?, &a.1[..], b.0?, &b.1[..]), (2, &b"he"[..], 3, &b"llo"[..]));
///     std::io::Result::Ok(())
/// }).unwrap();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub struct File {
    std: Arc<StdFile>,
    inner: Mutex<Inner>,
}

struct Inner {
    state: State,
    /// The writes at the cursor, run behind the task (made at the first).
    behind: Option<Arc<WriteBehind>>,
}

enum State {
    /// No read or seek runs; the buffer holds what was read ahead and not
    /// handed out.
    Idle(Option<Buf>),
    /// A read or a seek, which first waits for the queued writes.
    Busy(BoxFuture<'static, (Operation, Buf)>),
}

enum Operation {
    Read(io::Result<usize>),
    Seek(io::Result<u64>),
}

/// The file's buffer: `data[pos..]` is unread.
#[derive(Default)]
struct Buf {
    data: Vec<u8>,
    pos: usize,
}

impl Buf {
    fn unread(&self) -> usize {
        self.data.len() - self.pos
    }

    fn copy_to(&mut self, dst: &mut [u8]) -> usize {
        let n = self.unread().min(dst.len());
        dst[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        n
    }

    /// Forget the unread part; how far the cursor is ahead of the reader.
    fn discard_unread(&mut self) -> i64 {
        let ahead = self.unread() as i64;
        self.data.clear();
        self.pos = 0;
        ahead
    }
}

impl File {
    /// Open `path` for reading (as [`std::fs::File::open`]).
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        crate::fs::open_options::OpenOptions::new()
            .read(true)
            .open(path)
            .await
    }

    /// Open `path` for writing, created if missing and truncated if not (as
    /// [`std::fs::File::create`]).
    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        crate::fs::open_options::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Options to open a file with: [`OpenOptions::new`](super::OpenOptions::new).
    pub fn options() -> crate::fs::open_options::OpenOptions {
        crate::fs::open_options::OpenOptions::new()
    }

    /// A `File` of an open `std::fs::File`.
    pub fn from_std(file: StdFile) -> File {
        File {
            std: Arc::new(file),
            inner: Mutex::new(Inner {
                state: State::Idle(None),
                behind: None,
            }),
        }
    }

    /// The `std::fs::File`, after the operation at the cursor ended (its
    /// cursor is then where this file's reader is).
    pub async fn into_std(self) -> StdFile {
        let mut inner = self.inner.into_inner();
        // A write's error is lost here, as with tokio's `into_std`: flush
        // first to see it.
        let _ = inner.settle(&self.std).await;
        match Arc::try_unwrap(self.std) {
            Ok(file) => file,
            // An abandoned positional operation still holds the file: a new
            // descriptor of it, whose cursor is shared.
            Err(shared) => shared
                .try_clone()
                .expect("pool: duplicating the file's descriptor failed"),
        }
    }

    /// Flush what the OS buffers for this file to the device, data and
    /// metadata (`fsync`), after the write at the cursor ended.
    pub async fn sync_all(&self) -> io::Result<()> {
        self.sync(false).await
    }

    /// As [`sync_all`](Self::sync_all), but the metadata only where reading
    /// the data back needs it (`fdatasync`).
    pub async fn sync_data(&self) -> io::Result<()> {
        self.sync(true).await
    }

    async fn sync(&self, data_only: bool) -> io::Result<()> {
        let mut inner = self.inner.lock().await;
        inner.settle(&self.std).await?;
        ops::sync(
            &Engine::current(FileOp::Sync, fd_of(&self.std)),
            &self.std,
            data_only,
        )
        .await
    }

    /// Truncate or extend the file to `len` bytes, after the operation at
    /// the cursor ended; the cursor does not move.
    pub async fn set_len(&self, len: u64) -> io::Result<()> {
        let mut inner = self.inner.lock().await;
        inner.settle(&self.std).await?;
        let std = Arc::clone(&self.std);
        Engine::current(FileOp::SetLen, fd_of(&std))
            .blocking(move || std.set_len(len))
            .await
    }

    /// The file's metadata.
    pub async fn metadata(&self) -> io::Result<std::fs::Metadata> {
        let std = Arc::clone(&self.std);
        Engine::current(FileOp::FileMetadata, fd_of(&std))
            .blocking(move || std.metadata())
            .await
    }

    /// Read into `buf[..]` from `offset`, and give the buffer back with the
    /// count read (0 at the end of the file). The cursor does not move;
    /// several may be in flight on one `&File`. A dropped future's read
    /// keeps its buffer until the kernel is done with it.
    pub async fn read_at(&self, buf: Vec<u8>, offset: u64) -> (io::Result<usize>, Vec<u8>) {
        let engine = Engine::current(FileOp::Read, fd_of(&self.std));
        ops::read(&engine, &self.std, buf, At::Offset(offset)).await
    }

    /// Write `buf[..]` (some of it: the count) at `offset`, and give the
    /// buffer back. The cursor does not move; several may be in flight on
    /// one `&File`.
    pub async fn write_at(&self, buf: Vec<u8>, offset: u64) -> (io::Result<usize>, Vec<u8>) {
        let engine = Engine::current(FileOp::Write, fd_of(&self.std));
        ops::write(&engine, &self.std, buf, 0, At::Offset(offset)).await
    }
}

impl Inner {
    /// Wait for the operations at the cursor (the queued writes too), and
    /// move the cursor back over what was read ahead; the error of a write
    /// that had returned, if any.
    async fn settle(&mut self, std: &Arc<StdFile>) -> io::Result<()> {
        if let State::Busy(op) = &mut self.state {
            let (_, buf) = op.await;
            self.state = State::Idle(Some(buf));
        }
        drained(self.behind.as_ref(), std).await?;
        if let State::Idle(Some(buf)) = &mut self.state {
            let ahead = buf.discard_unread();
            if ahead > 0 {
                let engine = Engine::current(FileOp::Seek, fd_of(std));
                ops::seek(&engine, std, SeekFrom::Current(-ahead)).await?;
            }
        }
        Ok(())
    }

    /// Poll the operation at the cursor, if any, to its end: what it was,
    /// the state left idle with its buffer.
    fn poll_busy(&mut self, cx: &mut Context<'_>) -> Poll<Option<Operation>> {
        match &mut self.state {
            State::Idle(_) => Poll::Ready(None),
            State::Busy(op) => {
                let (operation, buf) = ready!(op.as_mut().poll(cx));
                self.state = State::Idle(Some(buf));
                Poll::Ready(Some(operation))
            }
        }
    }

    fn take_buf(&mut self) -> Buf {
        match &mut self.state {
            State::Idle(buf) => buf.take().unwrap_or_default(),
            State::Busy(_) => unreachable!("taken only while idle"),
        }
    }
}

/// Every queued write written (or dropped after a failure): the error of
/// one that failed.
async fn drained(behind: Option<&Arc<WriteBehind>>, std: &StdFile) -> io::Result<()> {
    match behind {
        Some(behind) => std::future::poll_fn(|cx| behind.poll_drained(cx, std)).await,
        None => Ok(()),
    }
}

/// The descriptor of `file`, for what a task waiting on it records.
fn fd_of(file: &StdFile) -> Option<std::os::fd::RawFd> {
    Some(std::os::fd::AsRawFd::as_raw_fd(file))
}

impl File {
    fn start_read(inner: &mut Inner, std: &Arc<StdFile>, len: usize) {
        let mut buf = inner.take_buf();
        buf.data.clear();
        buf.pos = 0;
        let std = Arc::clone(std);
        let behind = inner.behind.clone();
        inner.state = State::Busy(Box::pin(async move {
            if let Err(e) = drained(behind.as_ref(), &std).await {
                return (Operation::Read(Err(e)), buf);
            }
            buf.data.resize(len.min(MAX_BUF), 0);
            let engine = Engine::current(FileOp::Read, fd_of(&std));
            let (n, mut data) = ops::read(&engine, &std, buf.data, At::Cursor).await;
            data.truncate(*n.as_ref().unwrap_or(&0));
            (Operation::Read(n), Buf { data, pos: 0 })
        }));
    }

    fn start_seek(inner: &mut Inner, std: &Arc<StdFile>, mut pos: SeekFrom) {
        let mut buf = inner.take_buf();
        if let SeekFrom::Current(by) = &mut pos {
            *by -= buf.discard_unread();
        } else {
            buf.discard_unread();
        }
        let std = Arc::clone(std);
        let behind = inner.behind.clone();
        inner.state = State::Busy(Box::pin(async move {
            if let Err(e) = drained(behind.as_ref(), &std).await {
                return (Operation::Seek(Err(e)), buf);
            }
            let engine = Engine::current(FileOp::Seek, fd_of(&std));
            let result = ops::seek(&engine, &std, pos).await;
            (Operation::Seek(result), buf)
        }));
    }
}

impl File {
    /// The seek under way to its end, or, if none is, `pos` started and
    /// then polled to its end.
    fn poll_seek_to(&mut self, cx: &mut Context<'_>, pos: SeekFrom) -> Poll<io::Result<u64>> {
        let inner = self.inner.get_mut();
        loop {
            match ready!(inner.poll_busy(cx)) {
                Some(Operation::Seek(result)) => return Poll::Ready(result),
                Some(Operation::Read(_)) => {}
                None => File::start_seek(inner, &self.std, pos),
            }
        }
    }
}

impl futures::io::AsyncRead for File {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let inner = this.inner.get_mut();
        if dst.is_empty() {
            return Poll::Ready(Ok(0));
        }
        loop {
            match ready!(inner.poll_busy(cx)) {
                Some(Operation::Read(result)) => {
                    let n = result?;
                    let State::Idle(Some(buf)) = &mut inner.state else {
                        unreachable!("poll_busy leaves the state idle with its buffer");
                    };
                    debug_assert_eq!(buf.unread(), n);
                    return Poll::Ready(Ok(buf.copy_to(dst)));
                }
                Some(Operation::Seek(_)) => {}
                None => {
                    if let State::Idle(Some(buf)) = &mut inner.state {
                        if buf.unread() > 0 {
                            return Poll::Ready(Ok(buf.copy_to(dst)));
                        }
                    }
                    File::start_read(inner, &this.std, dst.len());
                }
            }
        }
    }
}

impl futures::io::AsyncWrite for File {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        src: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let inner = this.inner.get_mut();
        loop {
            match ready!(inner.poll_busy(cx)) {
                // A seek's failure (one started by tokio's `start_seek`, or
                // the one below) is this write's: it would go elsewhere.
                Some(Operation::Seek(Err(e))) => return Poll::Ready(Err(e)),
                Some(_) => {}
                None => {
                    // The cursor is ahead of the reader by what was read
                    // ahead: the write goes where the reader is.
                    if let State::Idle(Some(buf)) = &inner.state {
                        if buf.unread() > 0 {
                            File::start_seek(inner, &this.std, SeekFrom::Current(0));
                            continue;
                        }
                    }
                    let behind = inner.behind.get_or_insert_with(Arc::default);
                    return behind.poll_write(cx, &this.std, src, MAX_BUF);
                }
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let inner = this.inner.get_mut();
        ready!(inner.poll_busy(cx));
        match &inner.behind {
            Some(behind) => behind.poll_drained(cx, &this.std),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

impl futures::io::AsyncSeek for File {
    fn poll_seek(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        pos: SeekFrom,
    ) -> Poll<io::Result<u64>> {
        self.get_mut().poll_seek_to(cx, pos)
    }
}

#[cfg(feature = "tokio-io")]
crate::io::tokio_io::impl_tokio_io!(read: [] File);
#[cfg(feature = "tokio-io")]
crate::io::tokio_io::impl_tokio_io!(write: [] File);

/// tokio's seek: `start_seek` begins it, `poll_complete` ends it.
#[cfg(feature = "tokio-io")]
impl tokio::io::AsyncSeek for File {
    fn start_seek(self: Pin<&mut Self>, pos: SeekFrom) -> io::Result<()> {
        let this = self.get_mut();
        let inner = this.inner.get_mut();
        if let State::Busy(_) = inner.state {
            return Err(io::Error::other(
                "pool: another operation of this file is under way; \
                 call poll_complete before start_seek",
            ));
        }
        File::start_seek(inner, &this.std, pos);
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        // With no seek under way, it starts one that asks where the reader is.
        self.get_mut().poll_seek_to(cx, SeekFrom::Current(0))
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File").field("std", &self.std).finish()
    }
}
