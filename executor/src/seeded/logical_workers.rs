//! `LogicalWorkers`: a seeded pool's runner (`Builder::seed`; what the
//! registry keeps of the pool is `pool_seed.rs`). Its workers are real
//! `WorkerThread`s stepped one at a time on the thread that runs
//! `block_on`, each step's actor picked by the seeded generator
//! (`README.md`).
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | `LogicalWorkers`: the workers and the loop that steps them, the clock's jumps when quiet, the deadlock report, the replay line of a panic |
//! | `pick.rs` | `Pick`: the actor of each step, by `SeedStrategy` (uniform, or PCT's priorities and change points) |
//!
//! # Invariants
//!
//! * A logical worker is a real `WorkerThread` (its deques, LIFO slot,
//!   deferred slot, `spawn_local` queue, timer shard), built by `start` and
//!   kept here until the shutdown. A step makes it the thread's current
//!   worker (`OnWorker`) and runs the real search (`find_work`) or the
//!   real `run` of what its last search found: the seed explores how pool
//!   schedules, not a second scheduler.
//! * A search and the run of what it found are two steps of the worker:
//!   between them the task is in no queue, as on a real pool while a
//!   worker runs it, so other workers search without it (a task and the
//!   one queued behind it land on two workers, and their polls interleave).
//! * One thread drives the pool at a time: `drive` is a reentrant lock,
//!   held for as long as any `run` of this thread is under way (a
//!   `block_on` inside a task, a `join` waiting for a stolen half, a
//!   scope's wait: each is a nested `run` on the same thread, as each is a
//!   nested `wait_until` on a real worker).
//! * Between two runs (the lock free), no logical worker has a frame on any
//!   stack: its `lazy` list and `polling` task are empty, so the workers
//!   may be driven from another thread next (`Inner`'s `Send`).
//! * Every choice comes from `rng` in the order the steps are taken, and
//!   nothing else the scheduler reads varies between runs: the clock is
//!   paused and moves only by a jump (`quiet_step`) or a task's
//!   `advance`, and task ids are the pool's own (`pool_seed.rs`).
//! * The pool is quiet when every logical worker's last search found
//!   nothing since anything ran, the waiter was not woken and no blocking
//!   closure is queued: then, and only then, the clock jumps to the next
//!   timer; with no timer pending, nothing can ever wake the waiter, and
//!   the run panics saying so (a deadlock a real pool would hang on).

use super::pick::{self, Pick};
use crate::context::pool_cells;
use crate::scheduler::io_driver::IoDriver;
use crate::scheduler::registry::Registry;
use crate::scheduler::worker::search::XorShift64Star;
use crate::scheduler::worker::worker_thread::{Work, WorkerThread};
use crate::seeded::pool_seed::{Runner, Waiter};
use crate::task::future::cancel;
use parking_lot::ReentrantMutex;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A seeded pool's runner (`Seeded::install`).
pub(crate) struct LogicalWorkers {
    seed: u64,
    drive: ReentrantMutex<Inner>,
}

/// What the driving thread reaches under `drive`.
struct Inner {
    /// The workers and their pool, until the shutdown takes them.
    parts: RefCell<Option<Parts>>,
    rng: XorShift64Star,
    /// How each step's actor is picked (`pick.rs`).
    pick: RefCell<Pick>,
    /// Runs under way on the driving thread (1 inside the outermost).
    depth: Cell<usize>,
}

struct Parts {
    registry: Arc<Registry>,
    workers: Box<[WorkerThread]>,
    /// What each worker's last search found, not run yet.
    found: Box<[Cell<Option<Work>>]>,
}

// SAFETY: `Inner` is reached only by the thread that holds `drive`
// (`ReentrantMutex` hands out `&Inner` to its holder alone), so its cells
// are never shared between threads. A `WorkerThread` is `!Send` for its
// pointers into the stack of the thread running it (`lazy`, `polling`):
// those are set only inside a step, under the lock, and empty again when
// the step returns, so when the lock passes to another thread they point
// nowhere (module invariants). Its deques and the runnables and jobs in
// `found` are `Send`.
unsafe impl Send for Inner {}

impl LogicalWorkers {
    /// The runner of `workers`, the logical workers of the seeded pool
    /// `registry`.
    pub(crate) fn new(registry: Arc<Registry>, workers: Box<[WorkerThread]>) -> LogicalWorkers {
        let seeded = registry
            .seeded()
            .expect("logical workers are a seeded pool's");
        let seed = seeded.seed();
        let rng = XorShift64Star::new(seed);
        let pick = Pick::new(seeded.strategy(), pick::actors(workers.len()), &rng);
        let found = workers.iter().map(|_| Cell::new(None)).collect();
        LogicalWorkers {
            seed,
            drive: ReentrantMutex::new(Inner {
                parts: RefCell::new(Some(Parts {
                    registry,
                    workers,
                    found,
                })),
                rng,
                pick: RefCell::new(pick),
                depth: Cell::new(0),
            }),
        }
    }
}

impl Runner for LogicalWorkers {
    /// `step_until`, and if it panics in the outermost run of this thread,
    /// say how to replay it before the panic goes on.
    fn run(&self, waiter: &mut dyn Waiter) {
        let inner = self.drive.lock();
        let parts = inner.parts.borrow();
        let parts = parts
            .as_ref()
            .expect("a seeded pool is used after its shutdown");
        let depth = inner.depth.get();
        inner.depth.set(depth + 1);
        let result = catch_unwind(AssertUnwindSafe(|| {
            self.step_until(parts, &inner.rng, &inner.pick, waiter);
        }));
        inner.depth.set(depth);
        if let Err(payload) = result {
            if depth == 0 {
                eprintln!(
                    "pool: a seeded pool panicked (seed {seed}, {n} logical workers); \
                     rerun it with POOL_SEED={seed} to replay the same schedule",
                    seed = self.seed,
                    n = parts.workers.len(),
                );
            }
            resume_unwind(payload);
        }
    }

    fn shut_down(&self) {
        let inner = self.drive.lock();
        let parts = inner
            .parts
            .try_borrow_mut()
            .expect("a seeded pool is dropped inside one of its own runs")
            .take();
        let Some(parts) = parts else {
            return;
        };
        for (w, found) in parts.workers.iter().zip(&*parts.found) {
            let _on = OnWorker::enter(Some(w));
            match found.take() {
                Some(Work::Task(runnable)) => cancel(runnable),
                // A fork-join job is never dropped: someone waits for it.
                Some(work @ Work::Job(_)) => w.run(work),
                None => {}
            }
            w.leave();
        }
        // The workers, and with them their strong counts of the registry,
        // go with `parts`.
    }
}

impl LogicalWorkers {
    /// Step the pool until the waiter is done (the module invariants).
    fn step_until(
        &self,
        parts: &Parts,
        rng: &XorShift64Star,
        pick: &RefCell<Pick>,
        waiter: &mut dyn Waiter,
    ) {
        let registry = &parts.registry;
        let workers = &*parts.workers;
        let n = workers.len();
        // Workers whose last search found nothing since anything ran.
        let mut idle = vec![false; n];
        // The actors that can act (`pick.rs` numbers them).
        let mut ready = Vec::with_capacity(pick::actors(n));
        while !waiter.done() {
            ready.clear();
            ready.extend((0..n).filter(|&i| !idle[i]));
            if waiter.woken() {
                ready.push(n);
            }
            if registry.blocking().has_simulated() {
                ready.push(n + 1);
            }
            if ready.is_empty() {
                if !self.quiet_step(parts, rng) {
                    panic!(
                        "pool: deadlock in a seeded pool (seed {}): the future being waited \
                         for can never be woken: every task waits, no timer is pending, and \
                         a seeded pool has no other source of wakes",
                        self.seed
                    );
                }
                idle.fill(false);
                continue;
            }
            let actor = pick.borrow().choose(&ready, rng);
            pick.borrow_mut().stepped(actor);
            if actor < n {
                if self.step(registry, &workers[actor], &parts.found[actor]) {
                    idle.fill(false);
                } else {
                    idle[actor] = true;
                }
                continue;
            }
            {
                let _off = OnWorker::enter(None);
                if actor == n {
                    waiter.poll();
                } else {
                    registry.blocking().run_simulated(registry);
                }
            }
            // Either may have spawned or woken anything.
            idle.fill(false);
        }
    }

    /// One step of logical worker `w`: the run of what its last search
    /// found (kept in `found`), or else a search. False if the search found
    /// nothing.
    fn step(&self, registry: &Registry, w: &WorkerThread, found: &Cell<Option<Work>>) -> bool {
        let _on = OnWorker::enter(Some(w));
        let Some(work) = found.take() else {
            // A search: what it finds runs at a later step of this worker.
            let work = w.find_work();
            let searched = work.is_some();
            if !searched {
                w.went_idle();
            }
            found.set(work);
            return searched;
        };
        w.post_stolen();
        if let Some(seeded) = registry.seeded() {
            seeded.record(w.index(), work.task_id());
        }
        w.run(work);
        true
    }

    /// Nothing can act: first make sure nothing is queued anywhere (a
    /// search that found nothing may have queued what it fired), then jump
    /// the clock to the next timer and wake what is due then, in a seeded
    /// order, onto a seeded worker's deque, as the driver's sleeper does.
    /// False if no timer is pending.
    fn quiet_step(&self, parts: &Parts, rng: &XorShift64Star) -> bool {
        let workers = &*parts.workers;
        if parts.registry.has_injected_jobs() || workers.iter().any(WorkerThread::has_queued) {
            return true;
        }
        let mut wakers = Vec::new();
        if !parts.registry.driver().jump_to_next_timer(&mut wakers) {
            return false;
        }
        // Fisher-Yates: the order of timers with one deadline.
        for i in (1..wakers.len()).rev() {
            wakers.swap(i, rng.next_usize(i + 1));
        }
        let w = &workers[rng.next_usize(workers.len())];
        let _on = OnWorker::enter(Some(w));
        w.wake_ready(&mut wakers);
        true
    }
}

/// Makes a logical worker (or none) the thread's current worker for a
/// step, and puts back the one before, also on a panic.
struct OnWorker(*const WorkerThread);

impl OnWorker {
    fn enter(w: Option<&WorkerThread>) -> OnWorker {
        let p = w.map_or(std::ptr::null(), |w| w as *const WorkerThread);
        // SAFETY: `w` is a logical worker in `Parts::workers`, borrowed for
        // the whole run (or shutdown) that holds this guard, and the guard
        // puts the previous worker back before that borrow ends; the
        // previous one is null or a logical worker of an enclosing step
        // (alive for longer still).
        OnWorker(unsafe { pool_cells::switch_worker(p) })
    }
}

impl Drop for OnWorker {
    fn drop(&mut self) {
        // SAFETY: as in `enter`: the pointer put back was current before,
        // and its owner outlives this guard.
        unsafe { pool_cells::switch_worker(self.0) };
    }
}
