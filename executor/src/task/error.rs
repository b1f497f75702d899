//! `JoinError`: why a task gave no output (it panicked, was cancelled, or
//! was refused by a full blocking queue).
//!
//! # Invariants
//!
//! * `JoinError` is one pointer wide (cancellation is boxed too): a task's
//!   output slot, `Result<T, JoinError>`, stays no wider than `T` when `T`
//!   is small.
//! * A panic payload is never dropped where its own panic could unwind: it
//!   goes through `unwind::discard`.

use crate::unwind::discard;
use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

/// Why a task gave no output: it panicked, it was cancelled, or (a
/// `spawn_blocking` closure) the blocking queue was full
/// ([`Builder::max_blocking_queue`](crate::Builder::max_blocking_queue)).
///
/// # Examples
///
/// ```
/// let pool = pool::Pool::new().unwrap();
/// let err = pool.block_on(pool.spawn(async { panic!("boom") })).unwrap_err();
/// assert!(err.is_panic());
/// assert_eq!(err.to_string(), "task panicked: boom");
/// ```
pub struct JoinError {
    /// Boxed, cancellation too: a non-null pointer, so that a task's output
    /// slot (`Result<T, JoinError>`) is no wider than `T` when `T` is small
    /// (8 bytes for `()`, where a null "cancelled" would take 16).
    repr: Box<Repr>,
}

enum Repr {
    Cancelled,
    Panic(Panic),
    /// A `spawn_blocking` closure refused by a full blocking queue: it
    /// never ran.
    Rejected,
}

struct Panic {
    /// The payload, behind a lock only so that `JoinError` is `Sync`
    /// (payloads are only `Send`); it is taken by `into_panic`.
    payload: Mutex<Option<Box<dyn Any + Send + 'static>>>,
    /// The panic message, when the payload is a string.
    message: Option<String>,
    /// The task's name, if it was given one (`task::Builder::name`).
    name: Option<Arc<str>>,
}

impl JoinError {
    pub(crate) fn cancelled() -> JoinError {
        JoinError {
            repr: Box::new(Repr::Cancelled),
        }
    }

    /// The error of a `spawn_blocking` closure the full blocking queue
    /// refused (`scheduler/blocking.rs`).
    pub(crate) fn rejected() -> JoinError {
        JoinError {
            repr: Box::new(Repr::Rejected),
        }
    }

    /// The error of a task whose poll panicked with `payload` (also how
    /// `pool::hyper::serve` words a connection's panic).
    pub(crate) fn panic(payload: Box<dyn Any + Send + 'static>) -> JoinError {
        let message = panic_message(&*payload).map(str::to_owned);
        JoinError {
            repr: Box::new(Repr::Panic(Panic {
                payload: Mutex::new(Some(payload)),
                message,
                name: None,
            })),
        }
    }

    /// The error of a panic of a task named `name` (if it has a name): its
    /// `Display` names it.
    pub(crate) fn panic_of(
        payload: Box<dyn Any + Send + 'static>,
        name: Option<Arc<str>>,
    ) -> JoinError {
        let mut err = JoinError::panic(payload);
        if let Repr::Panic(panic) = &mut *err.repr {
            panic.name = name;
        }
        err
    }

    /// True if the task was cancelled: aborted, or dropped by its pool's
    /// shutdown before it completed.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let h = pool.spawn(std::future::pending::<()>());
    /// drop(pool); // shutdown drops the pending task
    /// assert!(pool::block_on(h).unwrap_err().is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(*self.repr, Repr::Cancelled)
    }

    /// True if the task was a [`spawn_blocking`](crate::spawn_blocking)
    /// closure that the pool refused because its blocking queue was full
    /// ([`Builder::max_blocking_queue`](crate::Builder::max_blocking_queue)):
    /// the closure never ran, and was dropped. Not a cancellation: nothing
    /// asked for it; the caller may shed the request, or retry later.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Builder::new()
    ///     .max_blocking_threads(1)
    ///     .max_blocking_queue(0) // run at once, or refuse
    ///     .build()
    ///     .unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel::<()>();
    /// let busy = pool.spawn_blocking(move || rx.recv().unwrap());
    /// # while pool.metrics().blocking_queue_depth > 0 { std::thread::yield_now(); }
    /// let refused = pool.block_on(pool.spawn_blocking(|| 1)).unwrap_err();
    /// assert!(refused.is_rejected() && !refused.is_cancelled());
    /// assert_eq!(pool.metrics().rejected_blocking, 1);
    /// tx.send(()).unwrap();
    /// pool.block_on(busy).unwrap();
    /// ```
    pub fn is_rejected(&self) -> bool {
        matches!(*self.repr, Repr::Rejected)
    }

    /// True if the task panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let err = pool.block_on(pool.spawn(async { panic!("oops") })).unwrap_err();
    /// assert!(err.is_panic() && !err.is_cancelled());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(*self.repr, Repr::Panic(_))
    }

    /// The panic payload, to resume the panic elsewhere
    /// (`std::panic::resume_unwind`).
    ///
    /// # Panics
    ///
    /// If the task was cancelled rather than panicked: check
    /// [`is_panic`](JoinError::is_panic) first.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = pool::Pool::new().unwrap();
    /// let err = pool.block_on(pool.spawn(async { std::panic::panic_any(7u8) })).unwrap_err();
    /// assert_eq!(*err.into_panic().downcast::<u8>().unwrap(), 7);
    /// ```
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match &*self.repr {
            Repr::Panic(panic) => panic
                .payload
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take()
                .expect("the payload is taken only here, once"),
            Repr::Cancelled => {
                panic!("JoinError::into_panic called on a cancelled task; check is_panic() first")
            }
            Repr::Rejected => panic!(
                "JoinError::into_panic called on a rejected spawn_blocking closure; check \
                 is_panic() first"
            ),
        }
    }
}

impl Drop for Panic {
    /// A payload may itself panic when dropped: never let that unwind.
    fn drop(&mut self) {
        let payload = self
            .payload
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(payload) = payload {
            discard(payload);
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.repr {
            Repr::Cancelled => f.write_str("task was cancelled"),
            Repr::Rejected => f.write_str(
                "spawn_blocking closure rejected: the blocking queue was full \
                 (Builder::max_blocking_queue); it never ran",
            ),
            Repr::Panic(panic) => {
                match &panic.name {
                    Some(name) => write!(f, "task `{name}` panicked")?,
                    None => f.write_str("task panicked")?,
                }
                match &panic.message {
                    Some(m) => match tokio_hint(m) {
                        Some(hint) => write!(f, ": {m} ({hint})"),
                        None => write!(f, ": {m}"),
                    },
                    None => Ok(()),
                }
            }
        }
    }
}

/// A panic payload's message, if it is a string.
fn panic_message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// Run `f` (a `block_on`'s polls); if it panics because tokio-typed code
/// found no tokio runtime, print what to do about it (`tokio_hint`) after
/// the panic's own message, then go on unwinding. The first panic a user
/// of sqlx or axum meets without `tokio-compat` is in `#[pool::main]`'s
/// `block_on`, where no `JoinError` carries the hint.
pub(crate) fn hint_tokio_panic<R>(f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(output) => output,
        Err(payload) => {
            if let Some(hint) = panic_message(&*payload).and_then(tokio_hint) {
                eprintln!("{hint}");
            }
            std::panic::resume_unwind(payload)
        }
    }
}

/// What to do about a panic of tokio-typed code that found no tokio
/// runtime (tokio's "there is no reactor running, must be called from the
/// context of a Tokio 1.x runtime", sqlx's "this functionality requires a
/// Tokio context"), or (`tokio-compat`) that blocked on a tokio runtime
/// from inside one (tokio's "Cannot start a runtime from within a
/// runtime", "Cannot drop a runtime in a context where blocking is not
/// allowed"), in pool's words; `None` for any other panic message.
pub(crate) fn tokio_hint(message: &str) -> Option<&'static str> {
    let blocked_inside = message.contains("Cannot start a runtime from within a runtime")
        || message.contains("Cannot drop a runtime in a context where blocking is not allowed");
    if blocked_inside && cfg!(feature = "tokio-compat") {
        return Some(
            "pool: with `tokio-compat`, a pool task, and a `block_on` future \
             (`#[pool::main]`'s body) that uses tokio, run inside a tokio \
             runtime, as `#[tokio::main]`'s body does, where tokio refuses \
             to block on another: await the future instead, or block in \
             `pool::spawn_blocking`",
        );
    }
    let tokio_missing = message.contains("no reactor running")
        || message.contains("context of a Tokio 1.x runtime")
        || message.contains("requires a Tokio context");
    if !tokio_missing {
        return None;
    }
    Some(if cfg!(feature = "tokio-compat") {
        "pool: tokio-typed code ran on a thread that is not the pool's: \
         `tokio-compat` gives the pool's own threads (workers, blocking \
         threads, `Pool::block_on`) a tokio runtime, not others; run it in \
         a pool task (`pool::spawn`) or inside `Pool::block_on`"
    } else {
        "pool: tokio-typed code (a tokio socket, timer, `tokio::spawn`, or a \
         library built on them) needs a tokio runtime: turn on pool's \
         `tokio-compat` cargo feature (features = [\"tokio-compat\"]), \
         which gives every pool's threads one"
    })
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.repr {
            Repr::Cancelled => f.write_str("JoinError::Cancelled"),
            Repr::Rejected => f.write_str("JoinError::Rejected"),
            Repr::Panic(panic) => {
                let mut t = f.debug_tuple("JoinError::Panic");
                t.field(&panic.message.as_deref().unwrap_or("<non-string payload>"));
                if let Some(name) = &panic.name {
                    t.field(name);
                }
                t.finish()
            }
        }
    }
}

impl std::error::Error for JoinError {}

#[cfg(all(test, not(loom)))]
mod tests {
    /// tokio's and sqlx's messages for a missing runtime get pool's hint;
    /// any other panic is shown as it is.
    #[test]
    fn a_tokio_context_panic_says_what_to_turn_on() {
        for message in [
            "there is no reactor running, must be called from the context of a Tokio 1.x runtime",
            "this functionality requires a Tokio context",
        ] {
            let err = super::JoinError::panic(Box::new(message));
            let shown = err.to_string();
            assert!(
                shown.starts_with(&format!("task panicked: {message} (pool: ")),
                "{shown}"
            );
            assert!(shown.contains("tokio-compat"), "{shown}");
        }
        // Blocking on a tokio runtime inside one (with `tokio-compat`, a
        // pool task or a `block_on` future that uses tokio is inside one).
        let message = "Cannot start a runtime from within a runtime. This happens because";
        let shown = super::JoinError::panic(Box::new(message)).to_string();
        if cfg!(feature = "tokio-compat") {
            assert!(shown.contains("pool::spawn_blocking"), "{shown}");
        } else {
            assert_eq!(shown, format!("task panicked: {message}"));
        }
        let err = super::JoinError::panic(Box::new("boom"));
        assert_eq!(err.to_string(), "task panicked: boom");
        let err = super::JoinError::panic_of(Box::new("boom"), Some("fetcher".into()));
        assert_eq!(err.to_string(), "task `fetcher` panicked: boom");
        let err = super::JoinError::panic_of(Box::new(7u8), Some("fetcher".into()));
        assert_eq!(err.to_string(), "task `fetcher` panicked");
    }

    #[test]
    fn join_error_is_one_pointer_wide() {
        assert_eq!(
            std::mem::size_of::<super::JoinError>(),
            std::mem::size_of::<usize>()
        );
        // The niche of the boxed error: a unit output costs one word.
        assert_eq!(
            std::mem::size_of::<Result<crate::task::future::TaskOutput<()>, super::JoinError>>(),
            std::mem::size_of::<usize>()
        );
    }
}
