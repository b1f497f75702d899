//! `TaskShares` (`task/share.rs`): the shares of a pool that task headers
//! and workers' caches hold keep the pool alive for every holder, the pool
//! is freed once, when neither shares nor handles are left, and every
//! holder's reads of it come before that free.
//!
//! The pool's `Arc` is played by a count with `Arc`'s orderings (a relaxed
//! increment; a release decrement, and an acquire fence before the free),
//! its contents by a loom cell that holders read and the free writes: a
//! read that the free does not follow is loom's causality violation. The
//! take and give-back around them are the registry's (`take_shares`,
//! `give_back_shares`, `scheduler/registry.rs`), line for line.

use crate::sync::{fence, AtomicBool, AtomicUsize, Ordering};
use crate::task::share::TaskShares;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// A pool as its task shares see it.
struct Pool {
    shares: TaskShares,
    /// The strong count of the pool's `Arc`.
    strong: AtomicUsize,
    /// What a holder reads of the pool; the free overwrites it.
    contents: UnsafeCell<usize>,
    freed: AtomicBool,
}

const ALIVE: usize = 7;

impl Pool {
    /// `Arc::clone`: the caller holds a strong count.
    fn clone_strong(&self) {
        self.strong.fetch_add(1, Ordering::Relaxed);
    }

    /// `Arc`'s drop.
    fn drop_strong(&self) {
        if self.strong.fetch_sub(1, Ordering::Release) == 1 {
            fence(Ordering::Acquire);
            self.contents.with_mut(|c| {
                // SAFETY: loom checks that no holder's read races this.
                unsafe { *c = 0 };
            });
            assert!(!self.freed.swap(true, Ordering::Relaxed), "freed twice");
        }
    }

    /// `Registry::take_shares`: the caller holds a strong count.
    fn take_shares(&self, n: usize) {
        if self.shares.take(n) {
            self.clone_strong();
        }
    }

    /// `Registry::give_back_shares`.
    fn give_back_shares(&self, n: usize) {
        if self.shares.give_back(n) {
            self.drop_strong();
        }
    }

    /// A holder (of a share or a strong count) reads the pool.
    fn read(&self) {
        self.contents.with(|c| {
            // SAFETY: loom checks that the free does not race this.
            assert_eq!(unsafe { *c }, ALIVE, "a holder read a freed pool");
        });
    }
}

/// A worker takes a batch of two shares into its cache and spawns a task
/// with one; the task's header is dropped on another thread, which holds
/// no handle of the pool. An outside thread takes a share of its own and
/// drops its handle before it is done with the share. The user drops the
/// pool's handle meanwhile. Whoever gives back last, or drops the last
/// handle, frees the pool, after every read.
#[test]
fn task_shares_keep_the_pool_alive_and_free_it_once_after_every_read() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("task_shares", &N, || {
        let pool = Arc::new(Pool {
            shares: TaskShares::default(),
            strong: AtomicUsize::new(1), // the user's handle
            contents: UnsafeCell::new(ALIVE),
            freed: AtomicBool::new(false),
        });
        // The worker's own `Arc` and the outside thread's, cloned while the
        // user's handle is held.
        pool.clone_strong();
        pool.clone_strong();
        let worker = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.take_shares(2);
                // One share goes with the task: its header is dropped on a
                // thread that holds nothing else of the pool.
                let task = {
                    let pool = pool.clone();
                    thread::spawn(move || {
                        pool.read();
                        pool.give_back_shares(1);
                    })
                };
                pool.read();
                // The worker leaves: its cache, then its own `Arc`.
                pool.give_back_shares(1);
                pool.drop_strong();
                task.join().unwrap();
            })
        };
        let outside = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.take_shares(1);
                pool.drop_strong();
                pool.read();
                pool.give_back_shares(1);
            })
        };
        pool.drop_strong(); // the user's handle
        worker.join().unwrap();
        outside.join().unwrap();
        assert!(
            pool.freed.load(Ordering::Relaxed),
            "the pool was never freed"
        );
    });
}
