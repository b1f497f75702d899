//! The names of a pool's threads. Each thread has two: its full name
//! (`std::thread::current().name()`, the one a panic message shows) and the
//! one the kernel keeps for `ps -L`, `top` and `/proc/PID/task/TID/comm`,
//! at most 15 bytes. Left to the kernel, a long name loses its end, which is
//! where the kinds differ (`pool-worker-watcher`, `pool-worker-blocking-3`
//! and `pool-worker-tokio-blocking` all showed as `pool-worker-...` cut at
//! 15), so the short name keeps the kind (and the
//! index) whole and cuts the prefix instead.
//!
//! Workers are `NAME-i` (`Builder::thread_name`, "pool-worker" by
//! default). The other threads are not workers, so they are named after
//! the pool's BASE: NAME without a trailing `-worker` (the default's
//! `pool`; a NAME of `db` is its own BASE):
//!
//! | thread | full name | default, full | default, short |
//! |---|---|---|---|
//! | worker `i` | `NAME-i` | `pool-worker-0` | `pool-worker-0` |
//! | the watcher | `BASE-watcher` | `pool-watcher` | `pool-watcher` |
//! | blocking thread `k` | `BASE-blocking-k` | `pool-blocking-12` | `pool-blk12` |
//! | a tokio blocking thread | `BASE-tokio-blocking` | `pool-tokio-blocking` | `pool-tblk` |
//! | the console's server (feature `console`) | `BASE-console` | `pool-console` | `pool-console` |

use crate::context::thread_kind::ThreadKind;
use std::io;
use std::thread;

/// The most bytes of a thread name the kernel keeps (16 with the NUL).
const KERNEL_NAME_MAX: usize = 15;

impl ThreadKind {
    /// The full name of this kind of thread of pool `prefix` (the pool's
    /// `thread_name`).
    pub(crate) fn full_name(self, prefix: &str) -> String {
        let base = base_of(prefix);
        match self {
            ThreadKind::Worker(i) => format!("{prefix}-{i}"),
            ThreadKind::Watcher => format!("{base}-watcher"),
            ThreadKind::Blocking(k) => format!("{base}-blocking-{k}"),
            ThreadKind::TokioBlocking => format!("{base}-tokio-blocking"),
            ThreadKind::Console => format!("{base}-console"),
        }
    }

    /// What this kind's names start with: the pool's `thread_name` for a
    /// worker, its base for the others (`base_of`).
    fn name_start(self, prefix: &str) -> &str {
        match self {
            ThreadKind::Worker(_) => prefix,
            _ => base_of(prefix),
        }
    }

    /// The name the kernel shows: the full name if it fits, else the prefix
    /// cut (at a character boundary) so that the kind's short suffix fits.
    pub(crate) fn short_name(self, prefix: &str) -> String {
        let full = self.full_name(prefix);
        if full.len() <= KERNEL_NAME_MAX {
            return full;
        }
        let suffix = match self {
            ThreadKind::Worker(i) => format!("-{i}"),
            ThreadKind::Watcher => "-watch".to_string(),
            ThreadKind::Blocking(k) => format!("-blk{k}"),
            ThreadKind::TokioBlocking => "-tblk".to_string(),
            ThreadKind::Console => "-cons".to_string(),
        };
        let start = self.name_start(prefix);
        let mut keep = KERNEL_NAME_MAX
            .saturating_sub(suffix.len())
            .min(start.len());
        while !start.is_char_boundary(keep) {
            keep -= 1;
        }
        // A prefix cut just after a dash would show two in a row.
        format!("{}{suffix}", start[..keep].trim_end_matches('-'))
    }

    /// Start a thread of this kind for pool `prefix` with `builder` (its
    /// stack size, say): std names it with the full name, and the thread
    /// gives itself its short name in the kernel and records its kind
    /// (`ThreadKind::current`) before it runs `f`.
    pub(crate) fn spawn<T: Send + 'static>(
        self,
        prefix: &str,
        builder: thread::Builder,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<thread::JoinHandle<T>> {
        let short = self.short_name(prefix);
        builder.name(self.full_name(prefix)).spawn(move || {
            set_kernel_name(&short);
            self.enter();
            f()
        })
    }
}

/// The base of pool `prefix`'s thread names that are not workers': the
/// prefix without a trailing `-worker`, so that the default pool's blocking
/// threads are `pool-blocking-k`, not `pool-worker-blocking-k`.
fn base_of(prefix: &str) -> &str {
    prefix
        .strip_suffix("-worker")
        .filter(|base| !base.is_empty())
        .unwrap_or(prefix)
}

/// Set the calling thread's name in the kernel (`ps -L`, `top`).
pub(crate) fn set_kernel_name(name: &str) {
    #[cfg(target_os = "linux")]
    if let Ok(name) = std::ffi::CString::new(name) {
        // SAFETY: PR_SET_NAME reads a NUL-terminated string from the
        // pointer (at most 16 bytes of it), which `name` keeps alive for the
        // call; it changes only the calling thread's name.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = name;
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::context::thread_kind::ThreadKind::*;

    #[test]
    fn short_names_keep_the_kind_and_fit_the_kernel() {
        let p = "pool-worker";
        assert_eq!(Worker(0).short_name(p), "pool-worker-0");
        assert_eq!(Watcher.short_name(p), "pool-watcher");
        assert_eq!(Blocking(12).full_name(p), "pool-blocking-12");
        assert_eq!(Blocking(12).short_name(p), "pool-blk12");
        assert_eq!(TokioBlocking.full_name(p), "pool-tokio-blocking");
        assert_eq!(TokioBlocking.short_name(p), "pool-tblk");
        // A name with no `-worker` to strip is its own base.
        assert_eq!(Watcher.short_name("app-workers"), "app-worke-watch");
        // Short prefixes keep the full names.
        assert_eq!(Blocking(3).short_name("db"), "db-blocking-3");
        // A long prefix, and one cut inside a multi-byte character.
        assert_eq!(
            Worker(11).short_name("a-very-long-pool-name"),
            "a-very-long-11"
        );
        assert_eq!(Watcher.short_name("ééééééé"), "éééé-watch");
    }
}
