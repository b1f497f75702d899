//! Errors that name the path: std's `io::Error` from a path-taking call
//! says "No such file or directory (os error 2)" and not which file. Every
//! such error of `pool::fs` is wrapped: the same `ErrorKind`, a message
//! that names the operation and the path, and the OS error as its
//! `source()`.

use std::error::Error;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The error inside a `pool::fs` error that names a path.
#[derive(Debug)]
struct PathError {
    /// What was being done: "open file", "read metadata of", ...
    op: &'static str,
    path: PathBuf,
    /// The second path of a two-path operation (rename, copy, link).
    to: Option<PathBuf>,
    source: io::Error,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "failed to {} `{}`", self.op, self.path.display())?;
        if let Some(to) = &self.to {
            write!(f, " to `{}`", to.display())?;
        }
        write!(f, ": {}", self.source)
    }
}

impl Error for PathError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

/// `source`, naming `path` and what was being done to it.
pub(super) fn at(source: io::Error, op: &'static str, path: &Path) -> io::Error {
    wrap(source, op, path, None)
}

/// `source` of a two-path operation (`op` `from` to `to`).
pub(super) fn between(source: io::Error, op: &'static str, from: &Path, to: &Path) -> io::Error {
    wrap(source, op, from, Some(to))
}

fn wrap(source: io::Error, op: &'static str, path: &Path, to: Option<&Path>) -> io::Error {
    io::Error::new(
        source.kind(),
        PathError {
            op,
            path: path.to_path_buf(),
            to: to.map(Path::to_path_buf),
            source,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_kind_names_the_path_and_chains_the_os_error() {
        let e = at(
            io::Error::from_raw_os_error(libc::ENOENT),
            "open file",
            Path::new("/no/such"),
        );
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let text = e.to_string();
        assert!(
            text.starts_with("failed to open file `/no/such`: "),
            "{text}"
        );
        assert!(text.contains("os error 2"), "{text}");
        let inner = e.get_ref().and_then(Error::source).unwrap();
        let os = inner.downcast_ref::<io::Error>().unwrap();
        assert_eq!(os.raw_os_error(), Some(libc::ENOENT));
        let e = between(
            io::ErrorKind::NotFound.into(),
            "rename",
            "a".as_ref(),
            "b".as_ref(),
        );
        assert!(
            e.to_string().starts_with("failed to rename `a` to `b`: "),
            "{e}"
        );
    }
}
