//! `OpenOptions`: how to open a file, as std's, opened off the workers (on
//! the ring, the same flags std would pass to `open(2)`).

use super::engine::Engine;
use super::{error, ops};
use crate::fs::file::File;
use crate::task::waits::FileOp;
use std::io;
use std::path::Path;

/// Options to open a file with, as [`std::fs::OpenOptions`]: `read`,
/// `write`, `append`, `truncate`, `create`, `create_new`, and `mode` (Unix).
///
/// # Examples
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("pool-doc-oo-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// # let path = dir.join("log.txt");
/// pool::Pool::new().unwrap().block_on(async {
///     let file = pool::fs::OpenOptions::new().append(true).create(true).open(&path).await?;
///     let again = pool::fs::OpenOptions::new().write(true).create_new(true).open(&path).await;
///     assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
///     # drop(file);
///     std::io::Result::Ok(())
/// }).unwrap();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions {
    read: bool,
    write: bool,
    append: bool,
    truncate: bool,
    create: bool,
    create_new: bool,
    mode: u32,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenOptions {
    /// Every option off (and mode `0o666`, less the umask).
    pub fn new() -> OpenOptions {
        OpenOptions {
            read: false,
            write: false,
            append: false,
            truncate: false,
            create: false,
            create_new: false,
            mode: 0o666,
        }
    }

    /// Open for reading.
    pub fn read(&mut self, read: bool) -> &mut Self {
        self.read = read;
        self
    }

    /// Open for writing.
    pub fn write(&mut self, write: bool) -> &mut Self {
        self.write = write;
        self
    }

    /// Every write goes to the end of the file (implies writing).
    pub fn append(&mut self, append: bool) -> &mut Self {
        self.append = append;
        self
    }

    /// Truncate the file to 0 bytes (needs writing).
    pub fn truncate(&mut self, truncate: bool) -> &mut Self {
        self.truncate = truncate;
        self
    }

    /// Create the file if it is missing (needs writing or appending).
    pub fn create(&mut self, create: bool) -> &mut Self {
        self.create = create;
        self
    }

    /// Create the file, failing with `AlreadyExists` if it exists
    /// (`create` and `truncate` are then ignored).
    pub fn create_new(&mut self, create_new: bool) -> &mut Self {
        self.create_new = create_new;
        self
    }

    /// The permissions of a created file (before the umask).
    #[cfg(unix)]
    pub fn mode(&mut self, mode: u32) -> &mut Self {
        self.mode = mode;
        self
    }

    /// Open `path` with these options. The error names the path.
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let path = path.as_ref();
        let opened = match self.flags() {
            Ok(flags) => {
                ops::open(
                    &Engine::current(FileOp::Open, None),
                    path.to_path_buf(),
                    self.std(),
                    flags,
                    self.mode,
                )
                .await
            }
            Err(e) => Err(e),
        };
        opened
            .map(File::from_std)
            .map_err(|e| error::at(e, "open file", path))
    }

    fn std(&self) -> std::fs::OpenOptions {
        let mut o = std::fs::OpenOptions::new();
        o.read(self.read)
            .write(self.write)
            .append(self.append)
            .truncate(self.truncate)
            .create(self.create)
            .create_new(self.create_new);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, self.mode);
        o
    }

    /// The flags of `open(2)`, with std's checks of the combination.
    fn flags(&self) -> io::Result<i32> {
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
        let access = match (self.read, self.write, self.append) {
            (true, false, false) => libc::O_RDONLY,
            (false, true, false) => libc::O_WRONLY,
            (true, true, false) => libc::O_RDWR,
            (false, _, true) => libc::O_WRONLY | libc::O_APPEND,
            (true, _, true) => libc::O_RDWR | libc::O_APPEND,
            (false, false, false) => {
                return Err(invalid(
                    "no access mode: set read, write or append on the OpenOptions",
                ))
            }
        };
        match (self.write, self.append) {
            (true, false) => {}
            (false, false) => {
                if self.truncate || self.create || self.create_new {
                    return Err(invalid(
                        "truncate, create and create_new need write(true) or append(true)",
                    ));
                }
            }
            (_, true) => {
                if self.truncate && !self.create_new {
                    return Err(invalid("truncate cannot go with append: choose one"));
                }
            }
        }
        let creation = match (self.create, self.truncate, self.create_new) {
            (false, false, false) => 0,
            (true, false, false) => libc::O_CREAT,
            (false, true, false) => libc::O_TRUNC,
            (true, true, false) => libc::O_CREAT | libc::O_TRUNC,
            (_, _, true) => libc::O_CREAT | libc::O_EXCL,
        };
        Ok(access | creation)
    }
}
