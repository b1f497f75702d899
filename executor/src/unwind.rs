//! Panic discipline of the machinery: user code (a hook, a handler, a
//! destructor) may panic, and its panic must never unwind through the sleep
//! protocol, a worker's loop or `async_task` (which aborts the process on a
//! panic in a destructor).
//!
//! A leaf module, like `sync`: it imports nothing of the crate, so every
//! floor, the sleep protocol's included, may use it.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Drop a panic payload whose panic nobody will see, catching a panic of
/// its own destructor (and forgetting that one's payload: it cannot be
/// dropped safely either).
pub(crate) fn discard(payload: Box<dyn Any + Send>) {
    if let Err(inner) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(inner);
    }
}

/// Call user code whose panic is the user's bug, already reported by the
/// panic hook, and that has nobody to pass it to (a thread hook, the stall
/// handler): the caller goes on.
pub(crate) fn call_quietly(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        discard(payload);
    }
}
