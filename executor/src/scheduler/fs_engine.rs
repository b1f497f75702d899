//! `FsEngine`: which engine runs a pool's file operations, as the pool's
//! metrics report it and `pool::fs` re-exports it (`fs/engine.rs` chooses).

/// Which engine runs a pool's file operations ([`Metrics::fs_engine`](crate::Metrics::fs_engine)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FsEngine {
    /// The pool's io_uring runs opens, reads, writes, syncs and closes; the
    /// blocking threads run the rest (metadata, directories).
    IoUring,
    /// The blocking threads run every file operation: the kernel gave no
    /// io_uring, or `POOL_FS=blocking`.
    Blocking,
}
