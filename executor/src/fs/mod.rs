//! Files and directories, with tokio::fs's names, run off the workers.
//!
//! Each operation runs on one of two engines, chosen at run time:
//!
//! * **io_uring**, on the pool's I/O driver, where the kernel gives one
//!   (probed once per pool, at its first file operation; refused by a
//!   seccomp filter, `kernel.io_uring_disabled`, or a kernel without the
//!   operations, it is not used). Opens, reads, writes, syncs and closes go
//!   to the ring from the worker that polls them, and when the page cache
//!   serves them they complete inside that submission: a 64 KiB
//!   [`read`] costs about what `std::fs::read` does, with no thread
//!   hand-off. What would block runs on the kernel's own threads, and its
//!   completion wakes the task through the driver, as socket readiness
//!   does.
//! * **The blocking threads**, batched: operations the ring has no gain in
//!   (metadata, directories, renames, copies; io_uring sends `statx` and
//!   its kin to its own threads anyway) and, without a ring, every
//!   operation. A thread that ran one keeps taking the next ones queued (and
//!   waits a few microseconds for more), so a burst of small operations, or
//!   one task's operations back to back, does not pay a thread hand-off
//!   each, as tokio's `spawn_blocking` per call does.
//!
//! A [`File`]'s writes at its cursor, on either engine, are queued and
//! written behind the task by one blocking call, in order: `write` returns
//! once its bytes are queued, the task copies its next ones while the last
//! are written, and an error comes from the next operation or `flush`. (A
//! buffered write on ext4 runs on a thread whichever engine submits it;
//! with one write in flight that thread waits for the task between writes.)
//!
//! `POOL_FS=blocking` in the environment keeps every operation on the
//! blocking threads. [`Metrics`](crate::Metrics) says which engine a pool
//! runs (`fs_engine`) and counts both (`fs_ring_ops`, `fs_blocking_ops`).
//!
//! No file operation runs on a worker: a storm of file work delays no
//! timer and no socket. An operation in flight holds a paused clock
//! (`pool::time::pause`) as a blocking closure does.
//!
//! # Errors name the path
//!
//! Every error of a function that takes a path keeps its
//! [`ErrorKind`](std::io::ErrorKind) and says what failed on which path
//! ("failed to open file `/etc/missing`: No such file or directory (os error
//! 2)"); the OS's own `io::Error` is its [`source`](std::error::Error::source).
//!
//! # Dropped futures
//!
//! Dropping the future of an operation in flight does not stop the
//! operation: it completes (or the kernel cancels it), and the buffer it
//! reads into or writes from lives until the kernel is done with it.
//!
//! # Examples
//!
//! ```
//! # let dir = std::env::temp_dir().join(format!("pool-doc-fs-{}", std::process::id()));
//! pool::Pool::new().unwrap().block_on(async {
//!     pool::fs::create_dir_all(&dir).await?;
//!     pool::fs::write(dir.join("greeting"), "hello").await?;
//!     assert_eq!(pool::fs::read_to_string(dir.join("greeting")).await?, "hello");
//!
//!     let missing = pool::fs::read(dir.join("missing")).await.unwrap_err();
//!     assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
//!     assert!(missing.to_string().contains("missing"), "{missing}");
//!
//!     pool::fs::remove_dir_all(&dir).await
//! }).unwrap();
//! ```

pub(crate) mod engine;
pub(crate) mod error;
pub(crate) mod file;
pub(crate) mod open_options;
pub(crate) mod ops;
pub(crate) mod read_dir;
#[cfg(all(test, not(loom)))]
mod tests;
pub(crate) mod write_behind;

pub use crate::inspect::metrics::FsEngine;
pub use file::File;
pub use open_options::OpenOptions;
pub use read_dir::{DirEntry, ReadDir};

use crate::task::waits::FileOp;
use engine::Engine;
use std::fs::{Metadata, Permissions};
use std::io;
use std::path::{Path, PathBuf};

/// Run `f(path)` on the blocking threads; its error names `path` and `op`.
async fn at_path<T, F>(path: &Path, op: &'static str, call: FileOp, f: F) -> io::Result<T>
where
    F: FnOnce(PathBuf) -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    let owned = path.to_path_buf();
    Engine::current(call, None)
        .blocking(move || f(owned))
        .await
        .map_err(|e| error::at(e, op, path))
}

/// Run `f(from, to)` on the blocking threads; its error names both.
async fn between<T, F>(
    from: &Path,
    to: &Path,
    op: &'static str,
    call: FileOp,
    f: F,
) -> io::Result<T>
where
    F: FnOnce(PathBuf, PathBuf) -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    let (a, b) = (from.to_path_buf(), to.to_path_buf());
    Engine::current(call, None)
        .blocking(move || f(a, b))
        .await
        .map_err(|e| error::between(e, op, from, to))
}

/// The whole contents of the file at `path` (as [`std::fs::read`]).
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let path = path.as_ref();
    ops::read_file(&Engine::current(FileOp::ReadFile, None), path.to_path_buf())
        .await
        .map_err(|e| error::at(e, "read", path))
}

/// The whole contents of the file at `path`, as UTF-8 (an `InvalidData`
/// error if it is not).
pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    let path = path.as_ref();
    let bytes = read(path).await?;
    String::from_utf8(bytes).map_err(|_| {
        error::at(
            io::Error::new(io::ErrorKind::InvalidData, "the file is not valid UTF-8"),
            "read",
            path,
        )
    })
}

/// Write `contents` to the file at `path`, created if missing and truncated
/// if not (as [`std::fs::write`]).
pub async fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let path = path.as_ref();
    ops::write_file(
        &Engine::current(FileOp::WriteFile, None),
        path.to_path_buf(),
        contents.as_ref().to_vec(),
    )
    .await
    .map_err(|e| error::at(e, "write", path))
}

/// The metadata of `path`, following symbolic links.
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    at_path(
        path.as_ref(),
        "read metadata of",
        FileOp::Metadata,
        std::fs::metadata,
    )
    .await
}

/// The metadata of `path` itself, a symbolic link included.
pub async fn symlink_metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    at_path(
        path.as_ref(),
        "read metadata of",
        FileOp::SymlinkMetadata,
        std::fs::symlink_metadata,
    )
    .await
}

/// Whether `path` exists (following symbolic links): `Ok(false)` if it does
/// not, an error if that cannot be told (a permission denied on the way).
pub async fn try_exists(path: impl AsRef<Path>) -> io::Result<bool> {
    at_path(
        path.as_ref(),
        "check the existence of",
        FileOp::TryExists,
        |p| p.try_exists(),
    )
    .await
}

/// Create the directory `path` (its parent must exist).
pub async fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    at_path(
        path.as_ref(),
        "create directory",
        FileOp::CreateDir,
        std::fs::create_dir,
    )
    .await
}

/// Create the directory `path` and every missing parent.
pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    at_path(
        path.as_ref(),
        "create directory",
        FileOp::CreateDirAll,
        std::fs::create_dir_all,
    )
    .await
}

/// Remove the empty directory `path`.
pub async fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    at_path(
        path.as_ref(),
        "remove directory",
        FileOp::RemoveDir,
        std::fs::remove_dir,
    )
    .await
}

/// Remove the directory `path` and everything in it.
pub async fn remove_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    at_path(
        path.as_ref(),
        "remove directory",
        FileOp::RemoveDirAll,
        std::fs::remove_dir_all,
    )
    .await
}

/// Remove the file (or symbolic link) `path`.
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    at_path(
        path.as_ref(),
        "remove file",
        FileOp::RemoveFile,
        std::fs::remove_file,
    )
    .await
}

/// Rename `from` to `to`, replacing `to` if it is a file.
pub async fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    between(
        from.as_ref(),
        to.as_ref(),
        "rename",
        FileOp::Rename,
        std::fs::rename,
    )
    .await
}

/// Copy the file `from` to `to` (its permissions too); the bytes copied.
pub async fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<u64> {
    between(
        from.as_ref(),
        to.as_ref(),
        "copy",
        FileOp::Copy,
        std::fs::copy,
    )
    .await
}

/// Make `dst` a new name of the file `src` (a hard link).
pub async fn hard_link(src: impl AsRef<Path>, dst: impl AsRef<Path>) -> io::Result<()> {
    between(
        src.as_ref(),
        dst.as_ref(),
        "link",
        FileOp::HardLink,
        std::fs::hard_link,
    )
    .await
}

/// Make `dst` a symbolic link to `src`.
#[cfg(unix)]
pub async fn symlink(src: impl AsRef<Path>, dst: impl AsRef<Path>) -> io::Result<()> {
    between(
        src.as_ref(),
        dst.as_ref(),
        "symlink",
        FileOp::Symlink,
        std::os::unix::fs::symlink,
    )
    .await
}

/// The absolute path of `path`, with every symbolic link resolved.
pub async fn canonicalize(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    at_path(
        path.as_ref(),
        "canonicalize",
        FileOp::Canonicalize,
        std::fs::canonicalize,
    )
    .await
}

/// Where the symbolic link `path` points.
pub async fn read_link(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    at_path(
        path.as_ref(),
        "read link",
        FileOp::ReadLink,
        std::fs::read_link,
    )
    .await
}

/// Set the permissions of `path`.
pub async fn set_permissions(path: impl AsRef<Path>, perm: Permissions) -> io::Result<()> {
    at_path(
        path.as_ref(),
        "set permissions of",
        FileOp::SetPermissions,
        move |p| std::fs::set_permissions(p, perm),
    )
    .await
}

/// The entries of the directory `path`.
pub async fn read_dir(path: impl AsRef<Path>) -> io::Result<ReadDir> {
    ReadDir::open(path.as_ref()).await
}
