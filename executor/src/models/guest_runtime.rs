//! Sleeping in a guest runtime (`sleep/park.rs`, `GuestRuntime`; `tokio-compat`'s worker
//! runtimes): a stand-in guest runtime over a loom lock and condvar, which blocks
//! until its waker is woken and may run work of its own on the sleeper's
//! thread meanwhile, as tokio runs its tasks. The models check that a job
//! injected while the worker falls asleep in its guest runtime wakes it through the
//! waker it stored, and that a job its own host posts (as an outsider)
//! while it sleeps wakes it too.

use super::sleep::{after_earlier_work, assert_counters_at_rest, idle_until_in, Outcome, Queue};
use crate::sleep::latch::CoreLatch;
use crate::sleep::manager::SleepManager;
use crate::sleep::park::GuestRuntime;
use crate::sync::{Condvar, Mutex};
use loom::sync::Arc;
use loom::thread;
use std::task::{Context, Poll, Wake, Waker};

/// What the stand-in's waker sets, and the condvar the guest runtime waits on.
#[derive(Default)]
struct Signal {
    woken: Mutex<bool>,
    condvar: Condvar,
}

impl Wake for Signal {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        *self.woken.lock() = true;
        self.condvar.notify_one();
    }
}

/// The guest runtime's own work, run once on the sleeper's thread after the first
/// poll (a tokio task the runtime runs while the worker sleeps in it).
type Work = Box<dyn FnOnce() + Send + Sync>;

struct StandInGuest {
    work: Mutex<Option<Work>>,
}

impl StandInGuest {
    fn new(work: Option<Work>) -> Self {
        StandInGuest {
            work: Mutex::new(work),
        }
    }
}

impl GuestRuntime for StandInGuest {
    fn can_block(&self) -> bool {
        true
    }

    fn block_on(
        &self,
        _driver: Option<&mut Vec<Waker>>,
        until: &mut dyn FnMut(&mut Context<'_>, bool) -> Poll<()>,
    ) {
        let signal = std::sync::Arc::new(Signal::default());
        let waker = Waker::from(std::sync::Arc::clone(&signal));
        loop {
            if until(&mut Context::from_waker(&waker), false).is_ready() {
                return;
            }
            let work = self.work.lock().take();
            if let Some(work) = work {
                work();
            }
            let mut woken = signal.woken.lock();
            while !*woken {
                woken = signal.condvar.wait(woken);
            }
            *woken = false;
        }
    }
}

/// The teeth check: `scripts/loom` runs this model with the sleeper's
/// waker stored outside the critical section that read its flag (`POOL_LOOM_TOOTH=split_guest_waker`), and requires loom to report the deadlock.
#[test]
fn an_injected_job_reaches_a_worker_asleep_in_its_guest_runtime() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("guest_injected", &N, || {
        let sleep = Arc::new(SleepManager::new(1, None, None, None));
        after_earlier_work(&sleep);
        let injector = Arc::new(Queue::new());
        let worker = {
            let (sleep, injector) = (sleep.clone(), injector.clone());
            thread::spawn(move || {
                let host = StandInGuest::new(None);
                let terminate = CoreLatch::new();
                idle_until_in(&sleep, 0, &terminate, &[], &injector, Some(&host))
            })
        };
        injector.push();
        sleep.new_injected_jobs(1);
        assert_eq!(worker.join().unwrap(), Outcome::Job);
        assert_counters_at_rest(&sleep);
    });
}

/// The only worker sleeps in its guest runtime, whose own work (run on the worker's
/// thread, as an outsider of the pool) injects a job meanwhile, while
/// another thread injects one too: both are run, and the worker is never
/// left asleep with a job queued.
#[test]
fn a_job_its_guest_runtime_posts_while_the_worker_sleeps_wakes_it() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("guest_posts_to_its_sleeper", &N, || {
        let sleep = Arc::new(SleepManager::new(1, None, None, None));
        let injector = Arc::new(Queue::new());
        let worker = {
            let (sleep, injector) = (sleep.clone(), injector.clone());
            thread::spawn(move || {
                let work: Work = {
                    let (sleep, injector) = (sleep.clone(), injector.clone());
                    Box::new(move || {
                        injector.push();
                        sleep.new_injected_jobs(1);
                    })
                };
                let host = StandInGuest::new(Some(work));
                let terminate = CoreLatch::new();
                let mut outcomes = Vec::new();
                for _ in 0..2 {
                    outcomes.push(idle_until_in(
                        &sleep,
                        0,
                        &terminate,
                        &[],
                        &injector,
                        Some(&host),
                    ));
                }
                outcomes
            })
        };
        injector.push();
        sleep.new_injected_jobs(1);
        assert_eq!(worker.join().unwrap(), [Outcome::Job, Outcome::Job]);
        assert_counters_at_rest(&sleep);
    });
}
