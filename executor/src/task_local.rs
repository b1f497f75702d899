//! Task-locals: `task_local!`, a value that one future and everything it
//! awaits can see, and no other task.
//!
//! A task-local is a thread-local slot that holds the value only while the
//! future of its `scope` is being polled: `TaskLocalFuture::poll` swaps the
//! value in, polls, and swaps it back out (also if the poll panics). So
//! the value follows the future from worker to worker, a task spawned
//! inside the scope does not see it (it is polled on its own), and code
//! between polls sees the outer value.
//!
//! The `thread_local!` that `task_local!` expands to is defined in the
//! crate that invokes the macro: one per task-local, not a thread-local of
//! this crate (`context/` holds all of those).

use pin_project_lite::pin_project;
use std::cell::RefCell;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Declares task-locals: values a future and everything it awaits can see,
/// set with [`LocalKey::scope`] and read with [`LocalKey::with`].
///
/// ```
/// pool::task_local! {
///     static REQUEST_ID: u64;
///     pub static USER: String;
/// }
///
/// # pool::block_on(async {
/// REQUEST_ID
///     .scope(7, async {
///         pool::time::sleep(std::time::Duration::from_millis(1)).await;
///         assert_eq!(REQUEST_ID.get(), 7);
///     })
///     .await;
/// assert!(REQUEST_ID.try_with(|_| ()).is_err(), "not set out here");
/// # });
/// ```
#[macro_export]
macro_rules! task_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty; $($rest:tt)*) => {
        $crate::__task_local_inner!($(#[$attr])* $vis $name, $t);
        $crate::task_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty) => {
        $crate::__task_local_inner!($(#[$attr])* $vis $name, $t);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __task_local_inner {
    ($(#[$attr:meta])* $vis:vis $name:ident, $t:ty) => {
        $(#[$attr])*
        $vis static $name: $crate::LocalKey<$t> = {
            ::std::thread_local! {
                static __POOL_TASK_LOCAL: ::std::cell::RefCell<::std::option::Option<$t>> =
                    const { ::std::cell::RefCell::new(::std::option::Option::None) };
            }
            $crate::LocalKey { inner: __POOL_TASK_LOCAL }
        };
    };
}

/// A task-local key, declared with [`task_local!`](crate::task_local).
pub struct LocalKey<T: 'static> {
    #[doc(hidden)]
    pub inner: std::thread::LocalKey<RefCell<Option<T>>>,
}

/// Why a task-local could not be read: it is not set in the code running
/// (no enclosing [`LocalKey::scope`]), or the thread is exiting.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AccessError(());

impl fmt::Debug for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccessError")
    }
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("task-local value not set: read it inside LocalKey::scope or sync_scope")
    }
}

impl Error for AccessError {}

/// Puts a value back where `LocalKey::enter` found it, also on a panic.
struct Swap<'a, T: 'static> {
    key: &'static LocalKey<T>,
    slot: &'a mut Option<T>,
}

impl<T: 'static> Drop for Swap<'_, T> {
    fn drop(&mut self) {
        // The key was entered through this very slot, so it is accessible
        // and not borrowed (every borrow of `with` ended with its closure).
        self.key
            .inner
            .with(|cell| std::mem::swap(self.slot, &mut *cell.borrow_mut()));
    }
}

impl<T: 'static> LocalKey<T> {
    /// Run `f` with the value in `slot` set, then put it back.
    fn enter<R>(&'static self, slot: &mut Option<T>, f: impl FnOnce() -> R) -> R {
        let swapped = self.inner.try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut value) => {
                std::mem::swap(slot, &mut *value);
                true
            }
            Err(_) => false,
        });
        match swapped {
            Ok(true) => {}
            Ok(false) => panic!(
                "a task-local scope was entered while the task-local is borrowed \
                 (inside LocalKey::with on the same key): leave the `with` closure first"
            ),
            Err(_) => panic!("a task-local scope was entered while its thread is exiting"),
        }
        let _swap = Swap { key: self, slot };
        f()
    }

    /// `future`, with this task-local set to `value` while it is polled
    /// (and while it is dropped).
    ///
    /// # Examples
    ///
    /// ```
    /// pool::task_local! { static DEPTH: u32; }
    /// # pool::block_on(async {
    /// let inner = DEPTH.scope(1, async {
    ///     DEPTH.scope(2, async { DEPTH.get() }).await + DEPTH.get()
    /// });
    /// assert_eq!(inner.await, 3);
    /// # });
    /// ```
    pub fn scope<F: Future>(&'static self, value: T, future: F) -> TaskLocalFuture<T, F> {
        TaskLocalFuture {
            key: self,
            slot: Some(value),
            future: Some(future),
        }
    }

    /// Run `f` with this task-local set to `value`.
    pub fn sync_scope<R>(&'static self, value: T, f: impl FnOnce() -> R) -> R {
        self.enter(&mut Some(value), f)
    }

    /// Call `f` with a reference to the value.
    ///
    /// # Panics
    ///
    /// If the task-local is not set here (no enclosing `scope`).
    #[track_caller]
    pub fn with<R>(&'static self, f: impl FnOnce(&T) -> R) -> R {
        match self.try_with(f) {
            Ok(r) => r,
            Err(_) => panic!(
                "a task-local was read where it is not set: read it inside \
                 LocalKey::scope (or sync_scope), or use try_with"
            ),
        }
    }

    /// Call `f` with a reference to the value, or return `AccessError` if
    /// it is not set here.
    pub fn try_with<R>(&'static self, f: impl FnOnce(&T) -> R) -> Result<R, AccessError> {
        self.inner
            .try_with(|cell| {
                let value = cell.borrow();
                value.as_ref().map(f).ok_or(AccessError(()))
            })
            .unwrap_or(Err(AccessError(())))
    }

    /// A copy of the value.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with).
    #[track_caller]
    pub fn get(&'static self) -> T
    where
        T: Clone,
    {
        self.with(T::clone)
    }
}

impl<T: 'static> fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LocalKey { .. }")
    }
}

pin_project! {
    /// The future of [`LocalKey::scope`].
    #[must_use = "a TaskLocalFuture does nothing unless awaited"]
    pub struct TaskLocalFuture<T: 'static, F> {
        key: &'static LocalKey<T>,
        slot: Option<T>,
        // `None` once it completed (dropped in the scope).
        #[pin]
        future: Option<F>,
    }

    impl<T: 'static, F> PinnedDrop for TaskLocalFuture<T, F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let mut future = this.future;
            if future.is_some() {
                // Dropped with the value set, as it was polled.
                this.key.enter(this.slot, || future.set(None));
            }
        }
    }
}

impl<T: 'static, F: Future> Future for TaskLocalFuture<T, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let mut future = this.future;
        this.key.enter(this.slot, || {
            let poll = future
                .as_mut()
                .as_pin_mut()
                .expect("TaskLocalFuture polled after it completed")
                .poll(cx);
            if poll.is_ready() {
                future.set(None);
            }
            poll
        })
    }
}

impl<T: 'static, F> fmt::Debug for TaskLocalFuture<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskLocalFuture")
            .field("done", &self.future.is_none())
            .finish()
    }
}
