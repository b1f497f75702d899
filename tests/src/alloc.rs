//! A counting global allocator: for the benchmarks' task_memory and the
//! lifecycle model test (`tests/model.rs`). Counting is switched on once, at
//! startup and before any other thread exists, in the process that counts;
//! everywhere else the allocator only forwards to the system allocator
//! after one relaxed load.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting live bytes when switched on.
pub struct Counting;

/// Switch counting on. Call before any other thread starts.
pub fn start_counting() {
    COUNTING.store(true, Ordering::SeqCst);
}

/// Bytes allocated and not yet freed since counting started.
pub fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::SeqCst)
}

// SAFETY: every method forwards to `System` with the same arguments, and
// only adds bookkeeping on an atomic counter, which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE_BYTES.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
