//! `ReadDir` and `DirEntry`: a directory's entries, read off the workers a
//! chunk at a time (one call reads `CHUNK` entries and their file types), as
//! a `Stream` and with `next_entry`.
//!
//! Once an entry's `metadata` is asked for, the following chunks read every
//! entry's metadata in the same call (a `du`, an `ls -l`, a file server's
//! index): one thread hand-off per chunk instead of one per entry.

use super::engine::{Blocking, Engine};
use super::error;
use crate::task::waits::FileOp;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::{FileType, Metadata};
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

/// Entries one call reads.
const CHUNK: usize = 64;

/// The entries of a directory ([`read_dir`](super::read_dir)), as a
/// [`Stream`](futures::Stream) of `io::Result<DirEntry>` or with
/// [`next_entry`](ReadDir::next_entry).
///
/// # Examples
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("pool-doc-rd-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// # std::fs::write(dir.join("a"), "").unwrap();
/// pool::Pool::new().unwrap().block_on(async {
///     let mut entries = pool::fs::read_dir(&dir).await?;
///     while let Some(entry) = entries.next_entry().await? {
///         assert!(entry.file_type().await?.is_file());
///         assert_eq!(entry.file_name(), "a");
///     }
///     std::io::Result::Ok(())
/// }).unwrap();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct ReadDir {
    dir: Arc<Path>,
    state: State,
    /// Set by a `DirEntry::metadata` that was not read ahead: the next
    /// chunks read every entry's metadata with it.
    wants_metadata: Arc<AtomicBool>,
}

enum State {
    Idle(Option<Chunk>),
    Reading(Blocking<Chunk>),
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            State::Idle(_) => "Idle",
            State::Reading(_) => "Reading",
        })
    }
}

struct Chunk {
    entries: VecDeque<io::Result<DirEntry>>,
    /// `None` once the directory is read to its end.
    std: Option<std::fs::ReadDir>,
}

impl ReadDir {
    pub(super) async fn open(path: &Path) -> io::Result<ReadDir> {
        let owned = path.to_path_buf();
        let std = Engine::current(FileOp::ReadDir, None)
            .blocking(move || std::fs::read_dir(owned))
            .await
            .map_err(|e| error::at(e, "read directory", path))?;
        Ok(ReadDir {
            dir: path.into(),
            wants_metadata: Arc::default(),
            state: State::Idle(Some(Chunk {
                entries: VecDeque::new(),
                std: Some(std),
            })),
        })
    }

    /// The next entry, or `None` at the end.
    pub async fn next_entry(&mut self) -> io::Result<Option<DirEntry>> {
        std::future::poll_fn(|cx| self.poll_next_entry(cx)).await
    }

    /// Poll for the next entry, or `None` at the end.
    pub fn poll_next_entry(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<DirEntry>>> {
        loop {
            match &mut self.state {
                State::Idle(chunk) => {
                    let Some(mut c) = chunk.take() else {
                        return Poll::Ready(Ok(None)); // failed to read on before
                    };
                    if let Some(entry) = c.entries.pop_front() {
                        *chunk = Some(c);
                        return Poll::Ready(entry.map(Some));
                    }
                    let Some(mut std) = c.std.take() else {
                        *chunk = Some(c);
                        return Poll::Ready(Ok(None));
                    };
                    let dir = Arc::clone(&self.dir);
                    let wants = Arc::clone(&self.wants_metadata);
                    let with_metadata = wants.load(Ordering::Relaxed);
                    self.state = State::Reading(Engine::current(FileOp::ReadDir, None).blocking(
                        move || {
                            for _ in 0..CHUNK {
                                match std.next() {
                                    Some(Ok(entry)) => {
                                        let file_type = entry.file_type().ok();
                                        let metadata =
                                            with_metadata.then(|| entry.metadata().ok()).flatten();
                                        c.entries.push_back(Ok(DirEntry {
                                            std: Arc::new(entry),
                                            file_type,
                                            metadata,
                                            wants_metadata: Arc::clone(&wants),
                                        }));
                                    }
                                    Some(Err(e)) => {
                                        c.entries.push_back(Err(error::at(
                                            e,
                                            "read directory",
                                            &dir,
                                        )));
                                    }
                                    None => return Ok(c),
                                }
                            }
                            c.std = Some(std);
                            Ok(c)
                        },
                    ));
                }
                State::Reading(call) => {
                    let chunk = ready!(Pin::new(call).poll(cx));
                    match chunk {
                        Ok(chunk) => self.state = State::Idle(Some(chunk)),
                        Err(e) => {
                            self.state = State::Idle(None);
                            return Poll::Ready(Err(e));
                        }
                    }
                }
            }
        }
    }
}

impl futures::Stream for ReadDir {
    type Item = io::Result<DirEntry>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_next_entry(cx).map(Result::transpose)
    }
}

/// An entry of a directory.
#[derive(Debug)]
pub struct DirEntry {
    std: Arc<std::fs::DirEntry>,
    /// Read with the entry (from the directory itself on most file
    /// systems, so free).
    file_type: Option<FileType>,
    /// Read with the entry once its directory's metadata was asked for.
    metadata: Option<Metadata>,
    /// Its `ReadDir`'s flag: metadata was asked for.
    wants_metadata: Arc<AtomicBool>,
}

impl DirEntry {
    /// The entry's full path: the directory's path joined with its name.
    pub fn path(&self) -> PathBuf {
        self.std.path()
    }

    /// The entry's name.
    pub fn file_name(&self) -> OsString {
        self.std.file_name()
    }

    /// The entry's metadata, not following a symbolic link (as std's).
    ///
    /// Once one entry's metadata was asked for, the entries read after it
    /// come with theirs, read with the directory (one hand-off per chunk
    /// of entries): their metadata is then as of that read, not of this
    /// call, as std's on Windows.
    pub async fn metadata(&self) -> io::Result<Metadata> {
        if let Some(m) = &self.metadata {
            return Ok(m.clone());
        }
        self.wants_metadata.store(true, Ordering::Relaxed);
        let std = Arc::clone(&self.std);
        Engine::current(FileOp::EntryMetadata, None)
            .blocking(move || std.metadata())
            .await
            .map_err(|e| error::at(e, "read metadata of", &self.path()))
    }

    /// The entry's file type, not following a symbolic link.
    pub async fn file_type(&self) -> io::Result<FileType> {
        if let Some(t) = self.file_type {
            return Ok(t);
        }
        let std = Arc::clone(&self.std);
        Engine::current(FileOp::EntryMetadata, None)
            .blocking(move || std.file_type())
            .await
            .map_err(|e| error::at(e, "read the file type of", &self.path()))
    }

    /// The entry's inode number.
    #[cfg(unix)]
    pub fn ino(&self) -> u64 {
        std::os::unix::fs::DirEntryExt::ino(&*self.std)
    }
}
