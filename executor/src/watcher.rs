//! The watcher: one thread per pool that keeps the scheduler
//! work-conserving when a poll runs long, reports long polls to the stall
//! handler (`trace/stall.rs`), if the pool has one, and publishes the
//! coarse clock that spawns read for task ages (`trace::CoarseClock`).
//!
//! A worker puts the task it spawns or wakes in its LIFO slot (`lifo.rs`) and
//! posts nothing for it: it runs that task next, on a warm cache, as soon as
//! its current poll returns. When that poll is long (a CPU-bound future, a
//! blocking call), the task would wait for it while another worker sleeps.
//! The watcher looks at the workers every `tick`: a worker whose poll count
//! has not moved since the last look, and whose LIFO slot holds a task, has
//! been in one poll for at least a tick; the watcher takes the task out and
//! injects it (`Registry::inject`: an injected job, posted after the
//! poster's fence), which wakes a sleeper. Tasks on the deques need no
//! watcher: every push onto a deque is posted (a yield included).
//!
//! The watcher costs nothing while the pool sleeps, nor while no worker uses
//! its LIFO slot: it parks when every worker is asleep (`WatcherPark`), and
//! a worker that puts a task into its LIFO slot unparks it (one load of the
//! `parked` flag per put, a system call only when it is parked). Woken
//! workers and tasks that come through the injector or the deques never
//! need it. While it runs it looks every `MIN_TICK` after it woke up or
//! last rescued a task, `BACKOFF` times longer after each look that
//! rescued nothing, up to `MAX_TICK`. It rescues only while some worker is
//! idle or asleep.
//!
//! # Invariants
//!
//! * The watcher never runs a task and never touches a deque: it only takes
//!   from LIFO slots (an atomic swap: the owner or the watcher gets each
//!   task, never both) and injects.
//! * It parks only after it saw every worker counted sleeping, *after* it
//!   announced itself parked (`parked`, SeqCst). A worker that puts into its
//!   LIFO slot was taken off `sleeping` (a SeqCst read-modify-write, by its
//!   waker, which happened before it ran) and reads `parked` (SeqCst) after
//!   the put. In the single order of the SeqCst operations either the
//!   watcher's read of the counters comes after that decrement (it does not
//!   park) or the worker's read of `parked` comes after the watcher's store
//!   (it unparks the watcher): a task never sits in a LIFO slot behind a
//!   long poll with the watcher parked.
//! * With a stall handler, every wake of a sleeping worker unparks the
//!   watcher too (`Sleep::watching_wakes`, `worker_woke`): the waker does
//!   it after it took the worker off `sleeping`, and so does a worker that
//!   took itself off (woken by the I/O driver, or backing out of its sleep
//!   on the final injector check). The argument is the LIFO put's, made with
//!   two seq-cst fences: the watcher's, between announcing itself parked
//!   and reading the counters, and the unparker's, between its decrement of
//!   `sleeping` and its read of `parked`. So no poll runs while the watcher
//!   is parked, and every poll longer than the threshold is seen. The
//!   unpark is not urgent: the watcher's first look comes after `MAX_TICK`
//!   (a stall is at least that long), so a worker woken for a short task
//!   costs the watcher one look, not a burst of fast ticks. All of it
//!   happens in `Sleep::sleeper_left`, the one place a worker leaves
//!   `sleeping`, sometimes under that worker's sleep lock: the watcher
//!   never takes a sleep lock (it reads the counters), so its own lock
//!   nests inside one without a cycle.
//!   `models/watcher.rs` checks this under loom (the model found the
//!   backing-out path), and that a watcher reading the counters before it
//!   announces itself sleeps through the poll.

use crate::registry::Registry;
use crate::sync::{fence, AtomicBool, Condvar, Mutex, Ordering};
use crate::trace::stall::StallWatch;
use crossbeam_utils::CachePadded;
use std::sync::Arc;
use std::time::Duration;

/// The first look after the watcher wakes or rescues a task: a poll seen
/// unmoved over two looks has run at least this long.
const MIN_TICK: Duration = Duration::from_micros(20);
/// The slowest look while the pool is busy and nothing needed rescuing.
const MAX_TICK: Duration = Duration::from_millis(1);
/// How much longer each look after one that rescued nothing waits.
const BACKOFF: u32 = 4;

#[derive(Debug, Default)]
struct WatchState {
    parked: bool,
    stopped: bool,
    /// Set by the unpark of a LIFO put, which may need a rescue soon (first
    /// look after `MIN_TICK`); a woken worker's unpark, for the stall
    /// detector, only needs a look within `MAX_TICK`.
    urgent: bool,
}

/// Where the watcher waits: for its next look, or while the pool sleeps.
#[derive(Debug, Default)]
pub(crate) struct WatcherPark {
    /// True while the watcher is parked (or about to be) for lack of any
    /// active worker. Read by every LIFO put: on a cache line of its own, so
    /// that neither the counters nor the watcher's lock, written often,
    /// evict it from the workers' caches.
    parked: CachePadded<AtomicBool>,
    state: Mutex<WatchState>,
    condvar: Condvar,
}

impl WatcherPark {
    /// A worker just put a task into its LIFO slot, which may need a rescue
    /// soon: unpark the watcher if it is parked (urgently: its first look
    /// comes after `MIN_TICK`).
    #[inline]
    pub(crate) fn needed(&self) {
        // SeqCst: see the module invariant.
        if self.parked.load(Ordering::SeqCst) {
            self.unpark(true);
        }
    }

    /// A sleeping worker was just woken (by this thread, the waker, or by
    /// the I/O driver), in a pool with a stall handler: it is about to poll,
    /// so unpark the watcher if it is parked. The fence pairs with the one
    /// in `park_while` (see the module invariants); it costs nothing next
    /// to the wake this follows, and it is the form of the argument that
    /// loom can check (`models/watcher.rs`: loom treats seq-cst loads and
    /// stores as acquire/release, seq-cst fences exactly).
    pub(crate) fn worker_woke(&self) {
        fence(Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst) {
            self.unpark(false);
        }
    }

    #[cold]
    fn unpark(&self, urgent: bool) {
        let mut state = self.state.lock();
        if state.parked {
            state.parked = false;
            state.urgent = urgent;
            self.parked.store(false, Ordering::SeqCst);
            self.condvar.notify_one();
        }
    }

    /// Watcher: park while `all_asleep` holds. `None` once stopped, else
    /// whether the unpark was urgent (a LIFO put) or there was none.
    ///
    /// `parked` is announced before `all_asleep` is read (see the module
    /// invariants); `models/watcher.rs` checks that, and that reading it
    /// only before the announcement (`pool_loom_watcher_looks_first`) loses
    /// a worker's wake.
    pub(crate) fn park_while(&self, all_asleep: impl Fn() -> bool) -> Option<bool> {
        let mut state = self.state.lock();
        state.urgent = true;
        #[cfg(pool_loom_watcher_looks_first)]
        if !all_asleep() {
            return (!state.stopped).then_some(true);
        }
        state.parked = true;
        self.parked.store(true, Ordering::SeqCst);
        // Pairs with the fence of `worker_woke`: either the worker's read of
        // `parked` sees it set, or this read of the counters sees the
        // worker taken off `sleeping`.
        fence(Ordering::SeqCst);
        #[cfg(not(pool_loom_watcher_looks_first))]
        if !all_asleep() {
            state.parked = false;
            self.parked.store(false, Ordering::SeqCst);
        }
        while state.parked && !state.stopped {
            state = self.condvar.wait(state);
        }
        (!state.stopped).then_some(state.urgent)
    }

    /// Watcher: wait `tick`. False once stopped.
    fn wait(&self, tick: Duration) -> bool {
        let mut state = self.state.lock();
        if !state.stopped {
            state = self.condvar.wait_for(state, tick);
        }
        !state.stopped
    }

    /// The pool shuts down: the watcher returns.
    pub(crate) fn stop(&self) {
        self.state.lock().stopped = true;
        self.condvar.notify_one();
    }
}

/// The body of the watcher thread.
pub(crate) fn run(registry: Arc<Registry>) {
    set_timer_slack();
    let watch = registry.sleep.watcher();
    let all_asleep = || registry.sleep.all_asleep();
    let polls_now = || -> Vec<u64> {
        registry
            .workers
            .iter()
            .map(|w| w.stats.polls.load(Ordering::Relaxed))
            .collect()
    };
    let mut last = polls_now();
    let mut tick = MIN_TICK;
    let mut stalls = registry
        .stall
        .clone()
        .map(|config| StallWatch::new(config, registry.num_workers()));
    if let Some(timeline) = &registry.timeline {
        timeline.enter_thread(None);
    }
    let clock = &registry.clock;
    loop {
        if all_asleep() {
            clock.withdraw();
            let Some(urgent) = watch.park_while(all_asleep) else {
                return;
            };
            last = polls_now();
            // A LIFO put may need a rescue soon; a worker woken for the
            // stall detector needs a look within the slowest tick.
            tick = if urgent { MIN_TICK } else { MAX_TICK };
            if let Some(stalls) = &mut stalls {
                stalls.reset();
            }
        }
        if !watch.wait(tick) {
            clock.withdraw();
            return;
        }
        // The clock of task ages (`trace::CoarseClock`).
        clock.publish();
        if let Some(stalls) = &mut stalls {
            stalls.look(&registry);
        }
        let mut rescued = false;
        // A rescue helps only if some worker is idle or asleep to run the
        // task: with every worker busy it would wait in the injector instead
        // of the slot, and lose its warm cache for nothing.
        let someone_idle = registry.sleep.any_inactive();
        for (w, last) in registry.workers.iter().zip(last.iter_mut()) {
            // Relaxed: a statistics counter; a stale value only delays a
            // rescue by a tick.
            let polls = w.stats.polls.load(Ordering::Relaxed);
            if someone_idle && polls == *last && w.lifo.is_occupied() {
                if let Some(runnable) = w.lifo.take() {
                    registry.rescue(runnable);
                    rescued = true;
                }
            }
            *last = polls;
        }
        tick = if rescued {
            MIN_TICK
        } else {
            (tick * BACKOFF).min(MAX_TICK)
        };
    }
}

/// Ask the kernel for timers as precise as the ticks (its default slack
/// is 50 us, longer than `MIN_TICK`).
fn set_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and changes only
    // this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong);
    }
}
