//! The sleep manager: when idle workers fall asleep and who wakes them.
//!
//! This is Rayon's protocol (RFC 0005, `rayon-core/src/sleep`), adapted to an
//! async pool. The full description, with the proof sketch for its seven
//! seq-cst fences (five here: the finder's, the sleeper's, the poster's,
//! and the pair of a sleeper that found the driver held and of the
//! driver's releaser; two in `watcher_park.rs`), is in `README.md` beside this file
//! (`executor/src/sleep/README.md`); names there are names here.
//!
//! This is floor 1, the lowest above the leaves: nothing here imports
//! anything outside `sleep/` but the floor-0 leaves `sync` (the loom shim)
//! and `unwind`.
//! What the floors above need to know of a sleep (the I/O driver a sleeper
//! blocks in, the timeline that notes who woke whom) comes in through the
//! traits [`Park`] and [`WakeNote`].
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | this map: it only declares (each file is imported from itself) |
//! | `manager.rs` | `SleepManager`: `start_looking`, `no_work_found`, `work_found`, `new_internal_jobs`, `new_injected_jobs`, `wake_specific_thread`, the driver's hand-over |
//! | `block_on_wake.rs` | `BlockOnWake`: what a `block_on` waker sets, and whom it wakes |
//! | `counters.rs` | `AtomicCounters`: sleeping / inactive / JEC packed in one `u64` |
//! | `state.rs` | `SleepState`: the lock, condvar and blocked flag one thread sleeps on |
//! | `latch.rs` | `CoreLatch` (four states) and `ThreadLatch` (a latch with its own sleep state) |
//! | `park.rs` | `Park`: what a sleeper needs of the I/O driver it blocks in; `GuestRuntime`: a runtime a sleeper drives while it sleeps |
//! | `watcher_park.rs` | `WatcherPark`: where the watcher thread parks while every worker sleeps |
//! | `deadlock.rs` | `DeadlockDetector`: active and blocked workers, the deadlock handler |
//! | `inbox.rs` | `Inbox`: work pinned to one worker, posted from other threads; why its wake is not lost |
//! | `activity.rs` | `Activity`: what of the pool could still make work, so a paused clock knows when it may jump |
//!
//! # Invariants
//!
//! * A worker is counted `inactive` from `start_looking` to `work_found`, and
//!   `sleeping` from its successful `try_add_sleeping_thread` until the thread
//!   that wakes it (`wake_specific_thread`) takes it off. The sleeper never
//!   decrements `sleeping` itself, except when its final injector check finds
//!   work before it blocked, and when it sleeps in the I/O driver and the
//!   driver brings work (readiness, a due timer) before any waker came; both
//!   under its lock, as a waker would.
//! * `SleepState::is_blocked` is not `Blocked::No` exactly while its worker
//!   is committed to sleep and not yet woken; it only changes under that
//!   worker's lock. It says how to wake the worker: notify its condvar, or
//!   unpark the driver it blocks in.
//! * At most one sleeper blocks in the driver (it holds the driver from
//!   before it marks itself `InDriver` until after it is woken). Posts wake
//!   condvar sleepers before it, so while any worker sleeps, the one in the
//!   driver is among them, unless a worker held the driver for a poll
//!   without blocking when the others fell asleep: a busy one's release
//!   wakes one of them (`driver_released`), which goes back to sleep in
//!   the driver; an idle one sleeps in the driver next, or runs what it
//!   found, as the driver's sleeper does after a wake.
//! * A job posted from a worker (`new_internal_jobs`) may be overlooked by a
//!   worker falling asleep: the poster is awake and runs it. A job posted from
//!   outside (`new_injected_jobs`) is never overlooked: the fence before the
//!   poster reads the counters and the fence after the sleeper increments them
//!   guarantee that one of the two sees the other.
//! * One new job wakes at most one sleeper, and none when enough workers are
//!   awake and idle. A worker that finds work while others sleep posts the
//!   jobs it still sees queued as one more job (`work_found`): their own
//!   tickles may have counted on it while it was idle.

pub(crate) mod activity;
pub(crate) mod block_on_wake;
pub(crate) mod counters;
pub(crate) mod deadlock;
pub(crate) mod inbox;
pub(crate) mod latch;
pub(crate) mod manager;
pub(crate) mod park;
pub(crate) mod state;
pub(crate) mod watcher_park;
