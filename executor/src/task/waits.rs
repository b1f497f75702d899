//! The vocabulary of waits: what a pool future that returned `Pending`
//! inside a task's poll records of itself (`Wait`: its `WaitKind`, the
//! `Resource` or `FileOp` it waits on, where it was made, one number), and
//! the site table's key of a wait site. Where the records are kept, one
//! seqlocked slot per live task, is `wait_board.rs`; what a dump makes of
//! them is `inspect/dump.rs`.
//!
//! # Invariants
//!
//! * A `Wait` packs in two words (`head` and its number; `from_words`), which is all a
//!   board's slot stores of it; a word that names no kind reads as no
//!   record.
//! * The board is not the sleep protocol: nothing here blocks, wakes or
//!   posts work.

/// A site index that names no location (`Wait::site`).
pub(crate) const NO_SITE: u16 = u16::MAX;

/// What a pool future that returned `Pending` is; the meaning of a
/// `Wait`'s numbers depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub(crate) enum WaitKind {
    /// `time::sleep` / `sleep_until`: `a` the deadline and the duration
    /// asked for (none for `sleep_until`), packed (`Wait::timer`).
    Sleep = 1,
    /// `time::timeout`'s deadline: as `Sleep`.
    Timeout,
    /// `time::interval`'s next tick: its due time and the period, packed.
    Interval,
    /// Read readiness of the socket, pipe or descriptor `on` (a
    /// `Resource`), `a` its descriptor: a read, a receive, an accept (a
    /// listener's), `io::Async`'s `readable`.
    Read,
    /// Write readiness, as `Read`: a write, a send, a connect (a stream
    /// with no peer yet), `writable`.
    Write,
    /// A `JoinHandle` (or `AbortHandle` join) of task `a`.
    Join,
    /// `JoinSet::join_next`, `a` the tasks in the set.
    JoinSet,
    /// A signal's next delivery, `a` its number.
    Signal,
    /// A child's exit, `a` its process id.
    Child,
    /// A file operation `on` (a `FileOp`), `a` the file's descriptor (or
    /// `u64::MAX` for an operation on a path).
    File,
}

impl WaitKind {
    fn from_u8(v: u8) -> Option<WaitKind> {
        use WaitKind::*;
        Some(match v {
            1 => Sleep,
            2 => Timeout,
            3 => Interval,
            4 => Read,
            5 => Write,
            6 => Join,
            7 => JoinSet,
            8 => Signal,
            9 => Child,
            10 => File,
            _ => return None,
        })
    }
}

/// What a socket or pipe operation waits on (`Wait::on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Resource {
    TcpStream = 1,
    TcpListener,
    UdpSocket,
    UnixStream,
    UnixListener,
    UnixDatagram,
    ChildStdin,
    ChildStdout,
    ChildStderr,
    /// `io::Async`'s descriptor, or any other.
    Fd,
}

impl Resource {
    pub(crate) fn from_u8(v: u8) -> Resource {
        use Resource::*;
        match v {
            1 => TcpStream,
            2 => TcpListener,
            3 => UdpSocket,
            4 => UnixStream,
            5 => UnixListener,
            6 => UnixDatagram,
            7 => ChildStdin,
            8 => ChildStdout,
            9 => ChildStderr,
            _ => Fd,
        }
    }

    /// The type's name, as the console's resources and the dump say it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Resource::TcpStream => "TcpStream",
            Resource::TcpListener => "TcpListener",
            Resource::UdpSocket => "UdpSocket",
            Resource::UnixStream => "UnixStream",
            Resource::UnixListener => "UnixListener",
            Resource::UnixDatagram => "UnixDatagram",
            Resource::ChildStdin => "ChildStdin",
            Resource::ChildStdout => "ChildStdout",
            Resource::ChildStderr => "ChildStderr",
            Resource::Fd => "Async",
        }
    }
}

/// `FileOp`, with each operation's name as a user wrote the call, and the
/// list of all (for `from_u8`).
macro_rules! file_ops {
    ($($(#[$doc:meta])* $op:ident => $name:literal,)*) => {
        /// Which file operation a `WaitKind::File` waits for (`Wait::on`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub(crate) enum FileOp {
            $($(#[$doc])* $op,)*
        }

        impl FileOp {
            const ALL: &[FileOp] = &[$(FileOp::$op),*];

            /// The call, as a user wrote it.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(FileOp::$op => $name,)*
                }
            }
        }
    };
}

file_ops! {
    Open => "File::open",
    /// A read at a `File`'s cursor, or positional.
    Read => "File read",
    /// A write, or the queued writes a flush waits for.
    Write => "File write",
    Sync => "File::sync_all",
    Close => "File close",
    Seek => "File seek",
    SetLen => "File::set_len",
    FileMetadata => "File::metadata",
    ReadDir => "ReadDir::next_entry",
    EntryMetadata => "DirEntry::metadata",
    /// `fs::read`, `read_to_string`: a whole file.
    ReadFile => "fs::read",
    WriteFile => "fs::write",
    Metadata => "fs::metadata",
    SymlinkMetadata => "fs::symlink_metadata",
    TryExists => "fs::try_exists",
    CreateDir => "fs::create_dir",
    CreateDirAll => "fs::create_dir_all",
    RemoveDir => "fs::remove_dir",
    RemoveDirAll => "fs::remove_dir_all",
    RemoveFile => "fs::remove_file",
    Rename => "fs::rename",
    Copy => "fs::copy",
    HardLink => "fs::hard_link",
    Symlink => "fs::symlink",
    Canonicalize => "fs::canonicalize",
    ReadLink => "fs::read_link",
    SetPermissions => "fs::set_permissions",
}

impl FileOp {
    pub(crate) fn from_u8(v: u8) -> Option<FileOp> {
        FileOp::ALL.get(usize::from(v)).copied()
    }
}

/// One wait a pool future recorded: what it is, the site index of the
/// line that made it (`site::index_of` with `WAIT_SITE`, or `NO_SITE`),
/// and a number whose meaning `kind` gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wait {
    pub(crate) kind: WaitKind,
    pub(crate) on: u8,
    pub(crate) site: u16,
    pub(crate) a: u64,
}

/// A timer's `a`: its deadline in milliseconds from `origin` (40 bits:
/// 34 years), and the duration it was asked for in 24 bits (`ASKED_*`).
const DEADLINE_SHIFT: u32 = 24;
/// An asked duration in seconds rather than milliseconds (23 bits each:
/// 2.3 hours of milliseconds, 97 days of seconds).
const ASKED_SECS: u64 = 1 << 23;
const ASKED_VALUE: u64 = ASKED_SECS - 1;
/// No duration was asked (`sleep_until`).
const ASKED_NONE: u64 = (1 << DEADLINE_SHIFT) - 1;

impl Wait {
    /// A wait with no resource.
    pub(crate) fn new(kind: WaitKind, site: u16, a: u64) -> Wait {
        Wait {
            kind,
            on: 0,
            site,
            a,
        }
    }

    /// A timer's wait: its deadline (a pool time) and the duration or
    /// period asked for, to the millisecond (one asked for over 2.3 hours,
    /// to the second; over 97 days, as 97 days).
    pub(crate) fn timer(
        kind: WaitKind,
        site: u16,
        deadline: std::time::Instant,
        asked: Option<std::time::Duration>,
    ) -> Wait {
        let ms = deadline.saturating_duration_since(origin()).as_millis() as u64;
        let asked = match asked {
            None => ASKED_NONE,
            Some(d) if d.as_millis() < u128::from(ASKED_SECS) => d.as_millis() as u64,
            Some(d) => ASKED_SECS | d.as_secs().min(ASKED_VALUE - 1),
        };
        Wait::new(kind, site, (ms << DEADLINE_SHIFT) | asked)
    }

    /// A timer's deadline and asked duration (`timer`).
    pub(crate) fn timer_parts(&self) -> (std::time::Instant, Option<std::time::Duration>) {
        let deadline = origin() + std::time::Duration::from_millis(self.a >> DEADLINE_SHIFT);
        match self.a & ASKED_NONE {
            ASKED_NONE => (deadline, None),
            a if a & ASKED_SECS != 0 => (
                deadline,
                Some(std::time::Duration::from_secs(a & ASKED_VALUE)),
            ),
            a => (deadline, Some(std::time::Duration::from_millis(a))),
        }
    }

    /// A timer's asked duration as packed, which an interval keeps as its
    /// deadline moves (the console's resources).
    #[cfg(feature = "console")]
    pub(crate) fn timer_asked_bits(&self) -> u64 {
        self.a & ASKED_NONE
    }

    /// The record's first word, `since` aside: kind, resource, site.
    pub(super) fn head(&self) -> u64 {
        self.kind as u64 | u64::from(self.on) << 8 | u64::from(self.site) << 16
    }

    pub(super) fn from_words(head: u64, a: u64) -> Option<(Wait, u32)> {
        let kind = WaitKind::from_u8(head as u8)?;
        let wait = Wait {
            kind,
            on: (head >> 8) as u8,
            site: (head >> 16) as u16,
            a,
        };
        Some((wait, (head >> 32) as u32))
    }
}

/// The vtable that makes a wait site's key in the process-wide site table
/// (`site.rs`) apart from a spawn site's at the same line: wait sites are
/// never woken through it.
pub(crate) static WAIT_SITE: std::task::RawWakerVTable =
    std::task::RawWakerVTable::new(never_clone, never, never, never);

fn never_clone(_: *const ()) -> std::task::RawWaker {
    unreachable!("a wait site's vtable only names the site")
}

fn never(_: *const ()) {
    unreachable!("a wait site's vtable only names the site")
}

/// The origin of the pool times in records (`Wait::timer`): the first
/// time anyone asked, which `PoolClock::new` makes before any pool's
/// clock starts, so that no pool time lies before it.
pub(crate) fn origin() -> std::time::Instant {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(std::time::Instant::now)
}

/// The site index of `at` as a place where a pool future was made.
#[inline]
pub(crate) fn site_of(at: &'static std::panic::Location<'static>) -> u16 {
    super::site::index_of(at, &WAIT_SITE)
}
