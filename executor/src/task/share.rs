//! `TaskShares`: what keeps a pool alive for its tasks, without a count on
//! one shared cache line per spawn.
//!
//! A task's header must reach its pool for as long as the header lives: a
//! wake schedules through the pool, the future's drop leaves its table,
//! an abort looks the task up there. The header used to hold one strong
//! count of the pool's `Arc`, taken at spawn and given back by its drop:
//! two locked read-modify-writes per task on the one cache line of that
//! `Arc`'s counts, which every worker's spawns and every task's end write.
//! On two workers, spawn_many_local spent about 5% of its CPU on those two
//! instructions (`perf annotate`: the `lock incq` of the spawn, the `lock
//! decq` of `TaskHeader`'s drop), the line moving between the cores at
//! nearly every task.
//!
//! Now a header holds a *share* of its pool, counted here. While any share
//! is out, the shares together hold one strong count of the pool's `Arc`:
//! the take that finds the count at zero adds it (`take` returns true:
//! its caller holds an `Arc` of the pool, so the pool is alive while it
//! adds one), and the give-back that brings the count to zero drops it
//! (`give_back` returns true). A worker keeps a cache of shares
//! (`WorkerThread`, `scheduler/worker/worker_thread.rs`): its spawns take from it,
//! and the headers dropped on its thread give theirs back into it, with no
//! atomic operation at all; only a cache that runs dry or grows past its
//! bound touches this count, by a batch. Outside threads take and give
//! back one share at a time, here.
//!
//! # Invariants
//!
//! * `count` = the headers alive + the shares cached by workers. A worker
//!   gives its whole cache back when its thread leaves the pool, after the
//!   thread stopped being the context's worker, so that no header dropped
//!   later on that thread puts a share into a cache nobody gives back.
//! * While `count` > 0, the shares hold one strong count of the pool's
//!   `Arc`, so whoever holds a share may read the pool. A take that finds
//!   `count` > 0 needs no strong count of its own: the one the shares hold
//!   cannot go until `count` returns to zero, and the fetch-and-add orders
//!   that return after this take. Between a give-back that brought the
//!   count to zero and its drop of the strong count, a take may find zero
//!   and add one: each such pair adds and drops one, and the taker holds
//!   an `Arc` of its own meanwhile, so the pool is never freed in between.
//! * Everything a holder did with the pool happens before the pool is
//!   freed: each give-back is a release of `count`, and the one that brings
//!   it to zero acquires all earlier ones (they form its release sequence)
//!   before it drops the strong count, whose own release and acquire order
//!   it before the free (as `Arc` orders its users' accesses). A take needs
//!   no ordering: it reads nothing through the count.
//!
//! `models/shares.rs` checks the last two under loom: a share's reads of
//! the pool all come before its free, and the pool is freed once, when
//! neither shares nor handles are left. (`POOL_LOOM_TOOTH=relaxed_shares`
//! makes the give-back relaxed, and loom must find a read racing the free.)

use crate::sync::{AtomicUsize, Ordering};
use crate::teeth::{pulled, Tooth};

/// A pool's count of the shares its tasks and its workers' caches hold.
#[derive(Debug, Default)]
pub(crate) struct TaskShares {
    count: AtomicUsize,
}

impl TaskShares {
    /// Take `n` shares. True if they are the first: the count was zero, and
    /// the caller must now give the shares one strong count of the pool
    /// (it holds an `Arc` of the pool, so the pool is alive while it does).
    #[inline]
    pub(crate) fn take(&self, n: usize) -> bool {
        // Relaxed: a take publishes nothing and reads nothing through the
        // count (module invariants).
        self.count.fetch_add(n, Ordering::Relaxed) == 0
    }

    /// Give back `n` shares. True if they were the last: the caller must
    /// now drop the shares' strong count of the pool, and may not touch the
    /// pool after that.
    #[inline]
    pub(crate) fn give_back(&self, n: usize) -> bool {
        // Release: this holder's reads of the pool come before the free;
        // acquire: the last give-back sees every earlier holder's (module
        // invariants).
        let order = if pulled(Tooth::RelaxedShares) {
            Ordering::Relaxed
        } else {
            Ordering::AcqRel
        };
        let before = self.count.fetch_sub(n, order);
        debug_assert!(before >= n, "more task shares given back than taken");
        before == n
    }
}
