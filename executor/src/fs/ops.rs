//! The data operations, each on the ring when the engine has one and on
//! the blocking threads otherwise (or when the ring is full): open, read,
//! write, sync, close, and reading or writing a whole file. Errors here are
//! the OS's; the callers name the path.

use super::engine::Engine;
use std::fs::File as StdFile;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

#[cfg(target_os = "linux")]
use crate::io::uring::{ops, result_of, Keep};
#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};

/// Where a read or write goes: at an offset, or at the file's cursor
/// (which it moves).
#[derive(Clone, Copy, Debug)]
pub(super) enum At {
    Offset(u64),
    Cursor,
}

#[cfg(target_os = "linux")]
impl At {
    fn ring_offset(self) -> u64 {
        match self {
            At::Offset(o) => o,
            At::Cursor => ops::CURSOR,
        }
    }
}

/// What a read or write keeps alive on the ring: the file (its descriptor
/// must not close and be reused meanwhile) and the buffer.
#[cfg(target_os = "linux")]
type FileAndBuf = (Arc<StdFile>, Vec<u8>);

#[cfg(target_os = "linux")]
fn take<T: 'static>(keep: Keep) -> T {
    *keep
        .downcast::<T>()
        .expect("a ring operation gives back what it was given")
}

/// Open `path` with `options` (std's) or, on the ring, `flags` and `mode`.
pub(super) async fn open(
    engine: &Engine,
    path: PathBuf,
    options: std::fs::OpenOptions,
    #[cfg_attr(not(target_os = "linux"), allow(unused_variables))] flags: i32,
    #[cfg_attr(not(target_os = "linux"), allow(unused_variables))] mode: u32,
) -> io::Result<StdFile> {
    #[cfg(target_os = "linux")]
    if let Some(ring) = engine.ring() {
        use std::os::unix::ffi::OsStrExt;
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a path with a NUL byte cannot be opened",
            )
        })?;
        let keep = Box::new(c_path);
        let entry = ops::open(&keep, flags, mode);
        // SAFETY: the entry points to the path, which `keep` owns on the
        // heap (a `CString`'s bytes do not move with the box).
        match unsafe { engine.submit(ring, entry, keep) } {
            Ok(op) => {
                let (result, _path) = op.await;
                let fd = result_of(result)?;
                // SAFETY: the kernel opened this descriptor for us; nothing
                // else owns it.
                return Ok(unsafe { StdFile::from_raw_fd(fd as i32) });
            }
            Err(_full) => {}
        }
    }
    engine.blocking(move || options.open(path)).await
}

/// Read into `buf[..]` at `at`; the buffer comes back either way.
pub(super) async fn read(
    engine: &Engine,
    file: &Arc<StdFile>,
    buf: Vec<u8>,
    at: At,
) -> (io::Result<usize>, Vec<u8>) {
    transfer(engine, file, buf, at, Direction::Read).await
}

/// Write `buf[from..]` (some of it: a count) at `at`; the buffer comes
/// back.
pub(super) async fn write(
    engine: &Engine,
    file: &Arc<StdFile>,
    buf: Vec<u8>,
    from: usize,
    at: At,
) -> (io::Result<usize>, Vec<u8>) {
    transfer(engine, file, buf, at, Direction::Write { from }).await
}

#[derive(Clone, Copy)]
enum Direction {
    /// Into the whole buffer.
    Read,
    /// From `buf[from..]`.
    Write { from: usize },
}

/// One read or write, on the ring if the engine has one and it has room,
/// else on the blocking threads.
async fn transfer(
    engine: &Engine,
    file: &Arc<StdFile>,
    buf: Vec<u8>,
    at: At,
    direction: Direction,
) -> (io::Result<usize>, Vec<u8>) {
    #[cfg(target_os = "linux")]
    let buf = match engine.ring() {
        Some(ring) => {
            let mut keep: Box<FileAndBuf> = Box::new((Arc::clone(file), buf));
            let (fd, offset) = (file.as_raw_fd(), at.ring_offset());
            let entry = match direction {
                Direction::Read => ops::read(fd, keep.1.as_mut_ptr(), keep.1.len(), offset),
                Direction::Write { from } => ops::write(fd, &keep.1[from..], offset),
            };
            // SAFETY: the entry points into the buffer `keep` owns, and the
            // descriptor stays open while `keep` holds the file.
            match unsafe { engine.submit(ring, entry, keep) } {
                Ok(op) => {
                    let (result, keep) = op.await;
                    let (_, buf) = take::<FileAndBuf>(keep);
                    return (result_of(result), buf);
                }
                Err(keep) => take::<FileAndBuf>(keep).1,
            }
        }
        None => buf,
    };
    let file = Arc::clone(file);
    let mut buf = buf;
    let result = engine
        .blocking(move || {
            let n = match direction {
                Direction::Read => read_std(&file, &mut buf, at),
                Direction::Write { from } => write_std(&file, &buf[from..], at),
            };
            Ok((n, buf))
        })
        .await;
    match result {
        Ok((n, buf)) => (n, buf),
        Err(e) => (Err(e), Vec::new()),
    }
}

/// Write all of `buf` at `at` (from `At::Offset(o)` on, or at the cursor).
pub(super) async fn write_all(
    engine: &Engine,
    file: &Arc<StdFile>,
    mut buf: Vec<u8>,
    at: At,
) -> (io::Result<()>, Vec<u8>) {
    let mut done = 0;
    while done < buf.len() {
        let place = match at {
            At::Offset(o) => At::Offset(o + done as u64),
            At::Cursor => At::Cursor,
        };
        let (result, back) = write(engine, file, buf, done, place).await;
        buf = back;
        match result {
            Ok(0) => return (Err(io::ErrorKind::WriteZero.into()), buf),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (Err(e), buf),
        }
    }
    (Ok(()), buf)
}

fn read_std(file: &StdFile, buf: &mut [u8], at: At) -> io::Result<usize> {
    match at {
        At::Offset(o) => std::os::unix::fs::FileExt::read_at(file, buf, o),
        At::Cursor => io::Read::read(&mut &*file, buf),
    }
}

fn write_std(file: &StdFile, buf: &[u8], at: At) -> io::Result<usize> {
    match at {
        At::Offset(o) => std::os::unix::fs::FileExt::write_at(file, buf, o),
        At::Cursor => io::Write::write(&mut &*file, buf),
    }
}

/// Move `file`'s cursor (on the blocking threads: io_uring has no seek).
pub(super) async fn seek(
    engine: &Engine,
    file: &Arc<StdFile>,
    pos: std::io::SeekFrom,
) -> io::Result<u64> {
    let file = Arc::clone(file);
    engine
        .blocking(move || std::io::Seek::seek(&mut &*file, pos))
        .await
}

/// `fsync` (or `fdatasync` when `data_only`).
pub(super) async fn sync(engine: &Engine, file: &Arc<StdFile>, data_only: bool) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some(ring) = engine.ring() {
        let keep = Box::new(Arc::clone(file));
        let entry = ops::fsync(file.as_raw_fd(), data_only);
        // SAFETY: the entry points at no memory; `keep` holds the file open.
        if let Ok(op) = unsafe { engine.submit(ring, entry, keep) } {
            return result_of(op.await.0).map(drop);
        }
    }
    let file = Arc::clone(file);
    engine
        .blocking(move || {
            if data_only {
                file.sync_data()
            } else {
                file.sync_all()
            }
        })
        .await
}

/// Close `file` where the engine closes files (its errors matter: a
/// network file system reports a failed write at close).
#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
async fn close(engine: &Engine, file: Arc<StdFile>) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some(ring) = engine.ring() {
        // Only when nothing else holds it (no abandoned operation does).
        if let Ok(file) = Arc::try_unwrap(file) {
            let fd = file.into_raw_fd();
            let entry = ops::close(fd);
            // SAFETY: the entry points at no memory; the descriptor is ours
            // and closed by this operation alone.
            match unsafe { engine.submit(ring, entry, Box::new(())) } {
                Ok(op) => return result_of(op.await.0).map(drop),
                // SAFETY: not submitted, so still ours to close.
                Err(_) => drop(unsafe { StdFile::from_raw_fd(fd) }),
            }
        }
        return Ok(());
    }
    drop(file);
    Ok(())
}

/// The whole file at `path` (`fs::read`): on the ring, an open, reads until
/// the end and a close, each usually completing inside its submission; on
/// the blocking threads, `std::fs::read` as one call.
pub(super) async fn read_file(engine: &Engine, path: PathBuf) -> io::Result<Vec<u8>> {
    #[cfg(target_os = "linux")]
    if engine.ring().is_some() {
        let options = std::fs::OpenOptions::new().read(true).clone();
        let file = Arc::new(open(engine, path, options, libc::O_RDONLY, 0).await?);
        let mut buf = Vec::with_capacity(FIRST_READ);
        loop {
            if buf.len() == buf.capacity() {
                // Full: a small read first, as std's `read_to_end` does,
                // so that a file of exactly the buffer's size is not
                // copied into a buffer twice as large to find its end.
                let (n, probe) =
                    read(engine, &file, vec![0; 32], At::Offset(buf.len() as u64)).await;
                match n {
                    Ok(0) => break,
                    Ok(n) => buf.extend_from_slice(&probe[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
                buf.reserve(buf.capacity().min(MAX_READ));
            }
            let (n, back) = read_spare(engine, &file, buf).await;
            buf = back;
            match n {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        close(engine, file).await?;
        return Ok(buf);
    }
    engine.blocking(move || std::fs::read(path)).await
}

/// The first read of a whole file: files are mostly small.
#[cfg(target_os = "linux")]
const FIRST_READ: usize = 64 * 1024;
/// The most a whole-file read grows its buffer by at once.
#[cfg(target_os = "linux")]
const MAX_READ: usize = 8 * 1024 * 1024;

/// Read into `buf`'s spare capacity at offset `buf.len()`, extending it.
#[cfg(target_os = "linux")]
async fn read_spare(
    engine: &Engine,
    file: &Arc<StdFile>,
    buf: Vec<u8>,
) -> (io::Result<usize>, Vec<u8>) {
    let ring = engine
        .ring()
        .expect("only the ring path reads into spare capacity");
    let offset = buf.len() as u64;
    let mut keep: Box<FileAndBuf> = Box::new((Arc::clone(file), buf));
    let vec = &mut keep.1;
    let spare = vec.spare_capacity_mut();
    let entry = ops::read(
        file.as_raw_fd(),
        spare.as_mut_ptr().cast(),
        spare.len(),
        offset,
    );
    // SAFETY: the entry points into the buffer's spare capacity, which
    // `keep` owns on the heap and nothing else touches until completion.
    match unsafe { engine.submit(ring, entry, keep) } {
        Ok(op) => {
            let (result, keep) = op.await;
            let (_, mut buf) = take::<FileAndBuf>(keep);
            let n = result_of(result);
            if let Ok(n) = n {
                // SAFETY: the kernel wrote `n` bytes into the spare
                // capacity, right after the initialized part.
                unsafe { buf.set_len(buf.len() + n) };
            }
            (n, buf)
        }
        Err(keep) => {
            let (file, mut buf) = take::<FileAndBuf>(keep);
            let result = engine
                .blocking(move || {
                    let n = {
                        let len = buf.len();
                        buf.resize(buf.capacity(), 0);
                        let n = std::os::unix::fs::FileExt::read_at(
                            &*file,
                            &mut buf[len..],
                            len as u64,
                        );
                        buf.truncate(len + *n.as_ref().unwrap_or(&0));
                        n
                    };
                    Ok((n, buf))
                })
                .await;
            match result {
                Ok(pair) => pair,
                Err(e) => (Err(e), Vec::new()),
            }
        }
    }
}

/// Write `contents` to `path`, created or truncated (`fs::write`).
pub(super) async fn write_file(
    engine: &Engine,
    path: PathBuf,
    contents: Vec<u8>,
) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if engine.ring().is_some() {
        let options = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .clone();
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
        let file = Arc::new(open(engine, path, options, flags, 0o666).await?);
        let (result, _) = write_all(engine, &file, contents, At::Offset(0)).await;
        result?;
        return close(engine, file).await;
    }
    engine
        .blocking(move || std::fs::write(path, contents))
        .await
}
