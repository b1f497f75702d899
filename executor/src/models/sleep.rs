//! The sleep protocol: a worker getting sleepy and falling asleep while work
//! is posted, from a worker (internal job) or from outside (injected job),
//! and while the pool shuts down.

use crate::sleep::latch::CoreLatch;
use crate::sleep::manager::SleepManager;
use crate::sleep::park::GuestRuntime;
use crate::sync::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// A queue of jobs, modelled as their count: pushed with `Release`, looked
/// at with `Acquire` (a look may see an old, smaller, count) and taken one
/// at a time with a compare-and-swap.
pub(super) struct Queue(AtomicUsize);

impl Queue {
    pub(super) fn new() -> Self {
        Queue(AtomicUsize::new(0))
    }

    pub(super) fn push(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }

    pub(super) fn has_job(&self) -> bool {
        self.0.load(Ordering::Acquire) > 0
    }

    /// A search: look, and take one job if one is seen.
    pub(super) fn take(&self) -> bool {
        self.has_job()
            && self
                .0
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
    }
}

/// The idle phase of `WorkerThread::wait_until`, with the real `SleepManager`:
/// search, count a fruitless round, get sleepy, sleep. Returns whether this
/// worker found the job (else its latch was set).
fn idle_worker(
    sleep: &SleepManager,
    index: usize,
    latch: &CoreLatch,
    queues: &[&Queue],
    injector: &Queue,
) -> bool {
    idle_until(sleep, index, latch, queues, injector) == Outcome::Job
}

/// How an idle period ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The worker took the job from a queue.
    Job,
    /// Its sleep in the driver brought readiness: it would run the woken task.
    Ready,
    /// Its latch was set.
    Stopped,
}

/// `idle_worker`, telling how the idle period ended.
pub(super) fn idle_until(
    sleep: &SleepManager,
    index: usize,
    latch: &CoreLatch,
    queues: &[&Queue],
    injector: &Queue,
) -> Outcome {
    idle_until_in(sleep, index, latch, queues, injector, None)
}

/// `idle_until`, sleeping in `guest` (if any) instead of on the condvar.
pub(super) fn idle_until_in(
    sleep: &SleepManager,
    index: usize,
    latch: &CoreLatch,
    queues: &[&Queue],
    injector: &Queue,
    guest: Option<&dyn GuestRuntime>,
) -> Outcome {
    let mut idle_state = sleep.start_looking(index, true);
    let mut wakers = Vec::new();
    while !latch.probe() {
        if queues.iter().any(|q| q.take()) || injector.take() {
            sleep.work_found(|| sees_queued_jobs(queues, injector));
            return Outcome::Job;
        }
        sleep.no_work_found(
            &mut idle_state,
            latch,
            || injector.has_job(),
            &mut wakers,
            guest,
        );
        if !wakers.is_empty() {
            sleep.work_found(|| sees_queued_jobs(queues, injector));
            return Outcome::Ready;
        }
    }
    sleep.work_found(|| sees_queued_jobs(queues, injector));
    Outcome::Stopped
}

fn sees_queued_jobs(queues: &[&Queue], injector: &Queue) -> bool {
    queues.iter().any(|q| q.has_job()) || injector.has_job()
}

/// Make the JEC odd, as after earlier work: the case where a poster only
/// reads the counters, so only the fences order it against a sleeper.
pub(super) fn after_earlier_work(sleep: &SleepManager) {
    sleep.new_internal_jobs(1);
}

pub(super) fn assert_counters_at_rest(sleep: &SleepManager) {
    let c = sleep.counters_for_test();
    assert_eq!(c.sleeping_threads(), 0, "{c:?}");
    assert_eq!(c.inactive_threads(), 0, "{c:?}");
}

/// Run idle periods until the worker takes the job or its latch is set. A
/// sleep in the driver that brings readiness ends a period too: the worker
/// would run that task, then look again.
pub(super) fn idle_until_job(
    sleep: &SleepManager,
    latch: &CoreLatch,
    injector: &Queue,
) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    loop {
        let outcome = idle_until(sleep, 0, latch, &[], injector);
        outcomes.push(outcome);
        if outcome != Outcome::Ready {
            return outcomes;
        }
    }
}

/// One worker of `sleep` idles while an outside thread injects a job.
pub(super) fn injected_job_model(sleep: Arc<SleepManager>, earlier_work: bool) {
    if earlier_work {
        after_earlier_work(&sleep);
    }
    let injector = Arc::new(Queue::new());
    let worker = {
        let (sleep, injector) = (sleep.clone(), injector.clone());
        thread::spawn(move || {
            let terminate = CoreLatch::new(); // never set: only the job ends it
            idle_until_job(&sleep, &terminate, &injector)
        })
    };
    // This thread is no worker: it injects and goes on; it never runs jobs.
    injector.push();
    sleep.new_injected_jobs(1);
    // If the job were lost, the worker would sleep forever: loom reports a
    // deadlock.
    assert_eq!(
        worker.join().unwrap(),
        [Outcome::Job],
        "the worker ends only by finding the job"
    );
    assert_counters_at_rest(&sleep);
}

pub(super) fn without_driver(workers: usize) -> Arc<SleepManager> {
    Arc::new(SleepManager::new(workers, None, None, None))
}

/// The teeth check: `scripts/loom` runs this model with each fence removed
/// and requires loom to report the deadlock.
#[test]
fn injected_job_while_the_worker_falls_asleep_is_never_lost() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("sleep_injected_jec_odd", &N, || {
        injected_job_model(without_driver(1), true)
    });
}

#[test]
fn injected_job_onto_a_fresh_pool_is_never_lost() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("sleep_injected_jec_even", &N, || {
        injected_job_model(without_driver(1), false)
    });
}

#[test]
fn internal_job_while_a_worker_falls_asleep_is_run_exactly_once() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("sleep_internal", &N, || {
        let sleep = without_driver(2);
        after_earlier_work(&sleep);
        let deque = Arc::new(Queue::new()); // worker 1's own deque
        let injector = Arc::new(Queue::new());
        let terminate = Arc::new(CoreLatch::new()); // worker 0's
        let sleeper = {
            let (sleep, deque, injector, terminate) = (
                sleep.clone(),
                deque.clone(),
                injector.clone(),
                terminate.clone(),
            );
            thread::spawn(move || idle_worker(&sleep, 0, &terminate, &[&deque], &injector))
        };
        // This thread is worker 1: it pushes onto its own deque, posts the job
        // (no fence) and, being awake, then looks at its own deque.
        deque.push();
        let woken = sleep.new_internal_jobs(1);
        let poster_ran_it = deque.0.swap(0, Ordering::AcqRel) == 1;
        // Then the pool shuts down, as in step 1 of `scheduler::shutdown`.
        if terminate.set() {
            sleep.wake_specific_thread(0);
        }
        let sleeper_ran_it = sleeper.join().unwrap();
        assert!(
            poster_ran_it != sleeper_ran_it,
            "the job ran {} times",
            u8::from(poster_ran_it) + u8::from(sleeper_ran_it)
        );
        assert!(woken <= 1, "one job woke {woken} workers");
        assert_counters_at_rest(&sleep);
    });
}

/// Two jobs injected while the two workers idle: the second job's tickle
/// may count on a worker that is awake and idle, which then takes the first
/// job (and would run it for ever). The other worker must still get the
/// second: `work_found` posts what its finder still sees queued. The teeth
/// check runs it without the finder's fence.
#[test]
fn a_job_whose_tickle_counted_on_a_worker_that_found_other_work_is_not_stranded() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("sleep_covered_job", &N, || {
        let sleep = without_driver(2);
        after_earlier_work(&sleep);
        let injector = Arc::new(Queue::new());
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let (sleep, injector) = (sleep.clone(), injector.clone());
                thread::spawn(move || {
                    let never = CoreLatch::new(); // only a job ends it
                    idle_until(&sleep, i, &never, &[], &injector)
                })
            })
            .collect();
        for _ in 0..2 {
            injector.push();
            sleep.new_injected_jobs(1);
        }
        // A stranded job leaves one worker asleep for ever: loom reports a
        // deadlock.
        for w in workers {
            assert_eq!(w.join().unwrap(), Outcome::Job);
        }
        assert_counters_at_rest(&sleep);
    });
}

/// Shutdown (step 1 of `scheduler::shutdown`) races worker 0 of `sleep` falling asleep.
pub(super) fn shutdown_model(sleep: Arc<SleepManager>) {
    let terminate = Arc::new(CoreLatch::new());
    let injector = Arc::new(Queue::new());
    let worker = {
        let (sleep, terminate, injector) = (sleep.clone(), terminate.clone(), injector.clone());
        thread::spawn(move || idle_until(&sleep, 0, &terminate, &[], &injector))
    };
    // Shutdown's step 1: set the latch; wake the worker if it sleeps.
    if terminate.set() {
        sleep.wake_specific_thread(0);
    }
    assert_eq!(
        worker.join().unwrap(),
        Outcome::Stopped,
        "there was no job to find"
    );
    assert_counters_at_rest(&sleep);
}

#[test]
fn shutdown_racing_a_worker_falling_asleep_always_ends_it() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("sleep_shutdown", &N, || shutdown_model(without_driver(1)));
}

/// Both workers of `sleep` idle while one job is injected: it wakes at most
/// one of them, and exactly one takes it.
pub(super) fn two_sleepers_model(sleep: Arc<SleepManager>) {
    after_earlier_work(&sleep);
    let injector = Arc::new(Queue::new());
    let latches = Arc::new([CoreLatch::new(), CoreLatch::new()]);
    let workers: Vec<_> = (0..2)
        .map(|i| {
            let (sleep, injector, latches) = (sleep.clone(), injector.clone(), latches.clone());
            thread::spawn(move || idle_until(&sleep, i, &latches[i], &[], &injector))
        })
        .collect();
    injector.push();
    let woken = sleep.new_injected_jobs(1);
    assert!(woken <= 1, "one job woke {woken} workers");
    // Wait until the job is taken (by whichever worker), then stop both.
    while injector.has_job() {
        thread::yield_now();
    }
    for (i, latch) in latches.iter().enumerate() {
        if latch.set() {
            sleep.wake_specific_thread(i);
        }
    }
    let outcomes: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert_eq!(
        outcomes.iter().filter(|o| **o == Outcome::Job).count(),
        1,
        "{outcomes:?}"
    );
    assert_counters_at_rest(&sleep);
}

#[test]
fn two_sleepers_one_injected_job_wakes_at_most_one_and_is_found() {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    super::model("sleep_two_workers_one_job", &N, || {
        two_sleepers_model(without_driver(2))
    });
}
