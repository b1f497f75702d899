//! The watcher: one thread per pool that keeps the scheduler
//! work-conserving when a poll runs long, reports long polls to the stall
//! handler (`inspect/stall.rs`, plugged in as a [`Look`]), if the pool has
//! one, and publishes the coarse clock that spawns read for task ages
//! (`task::CoarseClock`).
//!
//! A worker puts the task it spawns or wakes in its LIFO slot (`slot.rs`) and
//! posts nothing for it: it runs that task next, on a warm cache, as soon as
//! its current poll returns. When that poll is long (a CPU-bound future, a
//! blocking call), the task would wait for it while another worker sleeps.
//! The watcher looks at the workers every `tick`: a worker whose poll count
//! has not moved since the last look, and whose LIFO slot holds a task, has
//! been in one poll for at least a tick; the watcher takes the task out and
//! injects it (`inject`, `scheduler/spawn.rs`: an injected job, posted after the
//! poster's fence), which wakes a sleeper. Tasks on the deques need no
//! watcher: every push onto a deque is posted (a yield included).
//!
//! A worker also keeps a *deferred* task (`slot.rs`): one its budget made
//! yield while nothing else was queued on it, which it runs when its search
//! finds nothing else. The watcher injects it when it saw it in the slot at
//! two looks in a row with the worker's poll count unchanged: it has waited
//! a whole tick while the worker did something else (a long poll of a task
//! the worker stole, a long tokio turn). One look is not enough: the slot is
//! filled at the end of a poll, which may be a long one that just ended.
//!
//! The watcher costs nothing while the pool sleeps, nor while no worker uses
//! its LIFO slot: it parks when every worker is asleep (`sleep::watcher_park::WatcherPark`), and
//! a worker about to put a task into its LIFO slot unparks it (one load of
//! the `parked` flag per put, a system call only when it is parked). That
//! first task after the pool slept is posted instead of put: waiting for the
//! watcher's first look would cost two cross-thread wakes (the watcher's,
//! then the sleeper's it injects for) where posting costs one. Woken
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
//! * It parks (on `sleep::watcher_park::WatcherPark`) only while every worker is counted
//!   sleeping, and no worker runs a poll with it parked: the argument, part
//!   of the sleep protocol, is in `sleep/watcher_park.rs`.

use super::registry::Registry;
use super::slot::TaskSlot;
use super::spawn::inject;
use crate::task::header::{Runnable, TaskHeader};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The first look after the watcher wakes or rescues a task: a poll seen
/// unmoved over two looks has run at least this long.
const MIN_TICK: Duration = Duration::from_micros(20);
/// The slowest look while the pool is busy and nothing needed rescuing.
const MAX_TICK: Duration = Duration::from_millis(1);
/// How much longer each look after one that rescued nothing waits.
const BACKOFF: u32 = 4;

/// What the watcher runs at each look besides its rescues, while any
/// worker is awake: the stall detector (`inspect/stall.rs`), which the
/// `Builder` plugs in (`Builder::on_stall`).
pub(crate) trait Look: Send + 'static {
    /// One look at the workers.
    fn look(&mut self, registry: &Registry);

    /// The watcher is back from parking: every worker slept meanwhile, so
    /// every poll seen before has ended.
    fn reset(&mut self);
}

/// The body of the watcher thread; `look` runs at each of its looks.
pub(crate) fn run(registry: Arc<Registry>, mut look: Option<Box<dyn Look>>) {
    set_timer_slack();
    let watch = registry.sleep_manager().watcher();
    let all_asleep = || registry.sleep_manager().all_asleep();
    // Each worker's poll count at the last look, and whether its deferred
    // task was there then.
    let polls_now = || -> Vec<(u64, bool)> {
        registry
            .workers()
            .iter()
            .map(|w| (w.stats.polls.load(Ordering::Relaxed), false))
            .collect()
    };
    let mut last = polls_now();
    let mut tick = MIN_TICK;
    if let Some(timeline) = registry.timeline() {
        timeline.enter_thread(None);
    }
    let clock = registry.clock();
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
            if let Some(look) = &mut look {
                look.reset();
            }
        }
        if !watch.wait(tick) {
            clock.withdraw();
            return;
        }
        // The clock of task ages (`task::CoarseClock`).
        clock.publish();
        // A sample of the load signal while the pool is busy
        // (`schedule_delay.rs`).
        registry.schedule_delay().arm();
        if let Some(look) = &mut look {
            look.look(&registry);
        }
        let mut rescued = false;
        // A rescue helps only if some worker is idle or asleep to run the
        // task: with every worker busy it would wait in the injector instead
        // of the slot, and lose its warm cache for nothing.
        let someone_idle = registry.sleep_manager().any_inactive();
        for (w, (last, deferred_seen)) in registry.workers().iter().zip(last.iter_mut()) {
            // Relaxed: a statistics counter; a stale value only delays a
            // rescue by a tick, or makes one a tick early (a rescue moves a
            // task to the injector, posted: it never loses one).
            let polls = w.stats.polls.load(Ordering::Relaxed);
            let unmoved = someone_idle && polls == *last;
            let mut rescue = |slot: &TaskSlot<TaskHeader>| {
                if let Some(runnable) = slot.take() {
                    rescue(&registry, runnable);
                    rescued = true;
                }
            };
            // The LIFO slot's task waits for the poll under way, which has
            // run a tick.
            if unmoved && w.lifo.is_occupied() {
                rescue(&w.lifo);
            }
            // The deferred task was put there at the end of a poll, perhaps
            // a long one that ended just now: it has waited a tick only if
            // it was there at the last look too, with no poll begun since.
            let deferred = w.deferred.is_occupied();
            if unmoved && deferred && *deferred_seen {
                rescue(&w.deferred);
            }
            *last = polls;
            *deferred_seen = deferred && w.deferred.is_occupied();
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
    // this thread's timer slack. prctl is variadic and the kernel reads all
    // four argument registers: pass the unused ones as zeros (valgrind
    // reports them uninitialised otherwise).
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0);
    }
}

/// The watcher took `runnable` out of the LIFO slot of a worker whose
/// poll runs long: inject it, so a sleeper is woken for it.
fn rescue(registry: &Registry, runnable: Runnable) {
    registry.outside_stats().bump_shared(|s| &s.rescued, 1);
    inject(registry, runnable);
}
