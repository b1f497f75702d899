//! `enter_tokio`: one of a pool's tokio runtimes (feature `tokio-compat`)
//! entered by a thread that is not one of its workers, in turn, so that
//! tokio-typed code there (a `Pool::block_on` future, a blocking closure)
//! finds a runtime; nothing without the feature.

use crate::scheduler::registry::Registry;

/// What `enter_tokio` returns: the runtime's enter guard, or (with no
/// `tokio-compat`) nothing.
#[cfg(feature = "tokio-compat")]
pub(crate) type TokioGuard<'a> = Option<tokio::runtime::EnterGuard<'a>>;
/// What `enter_tokio` returns: the runtime's enter guard, or (with no
/// `tokio-compat`) nothing.
#[cfg(not(feature = "tokio-compat"))]
pub(crate) type TokioGuard<'a> = Option<std::marker::PhantomData<&'a ()>>;

/// Enter one of `registry`'s tokio runtimes on this thread until the guard
/// drops: the next worker's, in turn. Nothing on a worker of this pool: it
/// is inside its own for life.
pub(crate) fn enter_tokio(registry: &Registry) -> TokioGuard<'_> {
    #[cfg(feature = "tokio-compat")]
    {
        if crate::context::pool_cells::worker()
            .is_some_and(|w| std::ptr::eq(&**w.registry(), registry))
        {
            return None;
        }
        registry.tokio().get().map(|t| t.enter_next())
    }
    #[cfg(not(feature = "tokio-compat"))]
    {
        let _ = registry;
        None
    }
}
