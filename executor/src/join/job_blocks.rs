//! `JobBlocks`: a worker's cache of the memory of the fork-join jobs it
//! ran, for the next ones it makes (a scope's spawns: `join/job.rs`'s
//! `HeapJob`).
//!
//! A scope's spawn is a heap job, and in a fan-out (skynet, nqueens) the
//! allocator was a third of the time: glibc's `malloc` on the spawning
//! worker and `_int_free` on whichever ran the job. A job whose type fits
//! a `BLOCK` takes one from its worker's cache instead, and the worker
//! that runs it gives the block back to its own cache, before running the
//! job's closure, so a spawn inside that closure reuses it at once.
//!
//! # Invariants
//!
//! * Every block is allocated with `BLOCK`'s layout and freed with it.
//! * A cached block is owned by its cache alone (the first word of a free
//!   block links the next one); a block taken out is owned by the job made
//!   in it until that job runs, once (`job_ref.rs`).
//! * A cache keeps at most `MAX_CACHED` blocks (64 KiB); the rest, and all
//!   of them when the worker exits, go back to the allocator.

use std::alloc::Layout;
use std::cell::Cell;
use std::ptr::NonNull;

/// The layout of a job block: jobs of at most this size and alignment use
/// one.
pub(crate) const BLOCK: Layout = match Layout::from_size_align(64, 16) {
    Ok(layout) => layout,
    Err(_) => panic!("64 bytes aligned to 16 is a layout"),
};

/// Blocks a worker keeps at most.
const MAX_CACHED: usize = 1024;

/// Whether a `T` fits in a block.
pub(crate) const fn fits<T>() -> bool {
    std::mem::size_of::<T>() <= BLOCK.size() && std::mem::align_of::<T>() <= BLOCK.align()
}

/// A block from the allocator.
pub(crate) fn alloc_block() -> NonNull<u8> {
    // SAFETY: `BLOCK` is not zero-sized.
    let p = unsafe { std::alloc::alloc(BLOCK) };
    NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(BLOCK))
}

/// Give `block` back to the allocator.
///
/// # Safety
///
/// `block` came from `alloc_block` (or a cache) and nothing uses it any
/// more.
pub(crate) unsafe fn free_block(block: NonNull<u8>) {
    // SAFETY: allocated with `BLOCK` (module invariants), unused.
    unsafe { std::alloc::dealloc(block.as_ptr(), BLOCK) };
}

/// A free block: its first word links the next one.
struct FreeBlock {
    next: Option<NonNull<FreeBlock>>,
}

/// One worker's cache of free job blocks (its thread's only: `Cell`s).
#[derive(Default)]
pub(crate) struct JobBlocks {
    head: Cell<Option<NonNull<FreeBlock>>>,
    len: Cell<usize>,
}

impl JobBlocks {
    /// A block: a cached one, else a new one.
    #[inline]
    pub(crate) fn take(&self) -> NonNull<u8> {
        match self.head.get() {
            Some(block) => {
                // SAFETY: a cached block is a live `FreeBlock` owned by this
                // cache (module invariants).
                self.head.set(unsafe { block.as_ref() }.next);
                self.len.set(self.len.get() - 1);
                block.cast()
            }
            None => alloc_block(),
        }
    }

    /// Keep `block`, or free it if the cache is full.
    ///
    /// # Safety
    ///
    /// `block` is a job block (module invariants) that nothing uses any
    /// more.
    #[inline]
    pub(crate) unsafe fn give(&self, block: NonNull<u8>) {
        if self.len.get() >= MAX_CACHED {
            // SAFETY: the caller's contract.
            unsafe { free_block(block) };
            return;
        }
        let block = block.cast::<FreeBlock>();
        // SAFETY: the block is `BLOCK`-sized and aligned, unused: it holds
        // a `FreeBlock` from now on.
        unsafe {
            block.as_ptr().write(FreeBlock {
                next: self.head.get(),
            })
        };
        self.head.set(Some(block));
        self.len.set(self.len.get() + 1);
    }
}

impl Drop for JobBlocks {
    fn drop(&mut self) {
        while let Some(block) = self.head.get() {
            // SAFETY: as in `take`; then freed, and no longer linked.
            unsafe {
                self.head.set(block.as_ref().next);
                free_block(block.cast());
            }
        }
    }
}

impl std::fmt::Debug for JobBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobBlocks")
            .field("cached", &self.len.get())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_hands_back_the_block_it_was_given_and_keeps_at_most_its_bound() {
        let cache = JobBlocks::default();
        let first = cache.take();
        // SAFETY: a block from `take`, unused.
        unsafe { cache.give(first) };
        assert_eq!(cache.take(), first, "the block given back is taken next");
        let blocks: Vec<_> = (0..MAX_CACHED + 10).map(|_| cache.take()).collect();
        for block in blocks {
            // SAFETY: blocks from `take`, unused.
            unsafe { cache.give(block) };
        }
        assert_eq!(
            cache.len.get(),
            MAX_CACHED,
            "the rest went to the allocator"
        );
        // SAFETY: the first block, unused.
        unsafe { cache.give(first) };
        assert_eq!(cache.len.get(), MAX_CACHED);
        // Dropping the cache frees what it holds (the leak check's to see).
    }

    #[test]
    fn small_closures_fit_a_block_and_large_ones_do_not() {
        assert!(fits::<[u64; 8]>());
        assert!(!fits::<[u64; 9]>());
        #[repr(align(32))]
        struct Wide;
        assert!(!fits::<Wide>());
    }
}
