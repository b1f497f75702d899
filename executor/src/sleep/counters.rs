//! `AtomicCounters`: the one 64-bit word that the sleep protocol decides on.
//!
//! # Bit layout
//!
//! ```text
//!  63                              32 31             16 15              0
//! +----------------------------------+-----------------+-----------------+
//! |      JEC (jobs event counter)    | inactive threads| sleeping threads|
//! +----------------------------------+-----------------+-----------------+
//! ```
//!
//! * `sleeping` (bits 0..16): workers blocked on their condvar, or committed
//!   to blocking. Incremented by the sleeper (`try_add_sleeping_thread`),
//!   decremented by the thread that wakes it (`sub_sleeping_thread`).
//! * `inactive` (bits 16..32): workers that are idle (searching) or sleeping.
//!   `inactive - sleeping` is the number of awake-but-idle workers, the ones
//!   that will find new work without being woken.
//! * `JEC` (bits 32..64): the jobs event counter. Even: no work was posted
//!   since the last worker announced it was sleepy. Odd: work was posted.
//!
//! # Invariants
//!
//! * `sleeping <= inactive <= workers <= THREADS_MAX`: every sleeping worker is
//!   inactive, and each field counts workers, so neither field can carry into
//!   its neighbour as long as the pool has at most [`THREADS_MAX`] workers
//!   (`Builder::build` refuses more).
//! * The JEC only ever grows by one (`+ ONE_JEC`): it flips parity, never
//!   skips. Its carry out of bit 63 is discarded, so it wraps within its own
//!   32 bits and never disturbs the thread counts below it.
//!
//! # Rollover
//!
//! A sleepy worker remembers the JEC (even) and later checks that it is
//! unchanged before it sleeps. Between those two reads the counter can only
//! come back to the same value after 2^32 increments, that is 2^31 rounds of
//! "work posted" and "a worker got sleepy". If that ever happened the worker
//! would miss the posts of that window: for internal jobs that costs
//! parallelism, not progress (the poster is awake and will run its own work);
//! for injected jobs the final injector check after the seq-cst fence (see
//! `sleep/README.md`) catches the job regardless of the JEC. So rollover can
//! make the pool briefly less parallel, never lose a job.
//!
//! # Orderings
//!
//! Every read-modify-write here is `SeqCst`: the counters are the "C" of the
//! fence arguments in `README.md`, whose first three seq-cst fences must be
//! ordered against these accesses. Failed compare-exchanges use `Relaxed`
//! because their loaded value is only used to retry; the retry reloads with
//! `SeqCst`.

use crate::sync::{AtomicU64, Ordering};

/// Bits per thread count.
const THREADS_BITS: u32 = 16;

/// Shift of the sleeping-threads field.
const SLEEPING_SHIFT: u32 = 0;

/// Shift of the inactive-threads field.
const INACTIVE_SHIFT: u32 = THREADS_BITS;

/// Shift of the jobs event counter.
const JEC_SHIFT: u32 = 2 * THREADS_BITS;

/// The largest number of workers the counters can count: 65 535.
pub(crate) const THREADS_MAX: usize = (1 << THREADS_BITS) - 1;

const ONE_SLEEPING: u64 = 1 << SLEEPING_SHIFT;
const ONE_INACTIVE: u64 = 1 << INACTIVE_SHIFT;
const ONE_JEC: u64 = 1 << JEC_SHIFT;

/// The packed word, shared by every thread of one pool.
#[derive(Debug)]
pub(crate) struct AtomicCounters {
    value: AtomicU64,
}

/// A snapshot of the packed word.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Counters {
    word: u64,
}

/// The value of the jobs event counter in one snapshot.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct JobsEventCounter(u64);

impl JobsEventCounter {
    /// A value no snapshot can have (the field is only 32 bits wide): an idle
    /// state that has not announced itself sleepy holds this.
    pub(crate) const DUMMY: JobsEventCounter = JobsEventCounter(u64::MAX);

    /// Odd: work was posted since the last worker got sleepy.
    pub(crate) fn is_active(self) -> bool {
        self.0 & 1 == 1
    }

    /// Even: no work was posted since the last worker got sleepy.
    pub(crate) fn is_sleepy(self) -> bool {
        !self.is_active()
    }
}

impl AtomicCounters {
    pub(crate) fn new() -> AtomicCounters {
        AtomicCounters {
            value: AtomicU64::new(0),
        }
    }

    pub(crate) fn load(&self, ordering: Ordering) -> Counters {
        Counters {
            word: self.value.load(ordering),
        }
    }

    /// Compare-exchange the whole word from `old` to `new`.
    fn try_exchange(&self, old: Counters, new: Counters) -> bool {
        self.value
            .compare_exchange(old.word, new.word, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }

    /// Adds one to the JEC if `increment_when` holds for its current value;
    /// returns the counters as they are after the call.
    ///
    /// Posting work calls it with `is_sleepy` (make it odd); announcing
    /// sleepiness calls it with `is_active` (make it even).
    pub(crate) fn increment_jobs_event_counter_if(
        &self,
        increment_when: impl Fn(JobsEventCounter) -> bool,
    ) -> Counters {
        loop {
            let old = self.load(Ordering::SeqCst);
            if !increment_when(old.jobs_counter()) {
                return old;
            }
            let new = old.increment_jobs_counter();
            if self.try_exchange(old, new) {
                return new;
            }
        }
    }

    /// A worker starts searching for work (active -> idle).
    pub(crate) fn add_inactive_thread(&self) {
        self.value.fetch_add(ONE_INACTIVE, Ordering::SeqCst);
    }

    /// A worker found work or stopped searching (idle -> active). Returns
    /// the number of sleeping workers (Rayon's returns how many to wake; the
    /// caller here decides, see `SleepManager::work_found`).
    pub(crate) fn sub_inactive_thread(&self) -> usize {
        let old = Counters {
            word: self.value.fetch_sub(ONE_INACTIVE, Ordering::SeqCst),
        };
        debug_assert!(
            old.inactive_threads() > 0,
            "sub_inactive_thread: no inactive thread to remove ({old:?})"
        );
        debug_assert!(
            old.sleeping_threads() < old.inactive_threads(),
            "sub_inactive_thread: sleeping would exceed inactive ({old:?})"
        );
        old.sleeping_threads()
    }

    /// The waker of a sleeping worker takes it off the sleeping count.
    pub(crate) fn sub_sleeping_thread(&self) {
        let old = Counters {
            word: self.value.fetch_sub(ONE_SLEEPING, Ordering::SeqCst),
        };
        debug_assert!(
            old.sleeping_threads() > 0,
            "sub_sleeping_thread: no sleeping thread to remove ({old:?})"
        );
    }

    /// A sleepy worker commits to sleeping, but only if the word is still
    /// `old` (in particular, the JEC it checked has not moved since).
    pub(crate) fn try_add_sleeping_thread(&self, old: Counters) -> bool {
        debug_assert!(
            old.inactive_threads() > old.sleeping_threads(),
            "try_add_sleeping_thread: a sleeper must be inactive and awake ({old:?})"
        );
        self.try_exchange(old, old.add_sleeping_thread())
    }
}

impl Counters {
    fn field(self, shift: u32) -> usize {
        ((self.word >> shift) & THREADS_MAX as u64) as usize
    }

    pub(crate) fn sleeping_threads(self) -> usize {
        self.field(SLEEPING_SHIFT)
    }

    pub(crate) fn inactive_threads(self) -> usize {
        self.field(INACTIVE_SHIFT)
    }

    /// Idle workers that are still searching: they need no wakeup.
    pub(crate) fn awake_but_idle_threads(self) -> usize {
        debug_assert!(
            self.sleeping_threads() <= self.inactive_threads(),
            "{self:?}"
        );
        self.inactive_threads() - self.sleeping_threads()
    }

    pub(crate) fn jobs_counter(self) -> JobsEventCounter {
        JobsEventCounter(self.word >> JEC_SHIFT)
    }

    /// The same word with the JEC one higher; the carry out of bit 63 is
    /// dropped, which is the 32-bit rollover of the JEC.
    fn increment_jobs_counter(self) -> Counters {
        Counters {
            word: self.word.wrapping_add(ONE_JEC),
        }
    }

    fn add_sleeping_thread(self) -> Counters {
        debug_assert!(self.sleeping_threads() < THREADS_MAX);
        Counters {
            word: self.word + ONE_SLEEPING,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn with_word(word: u64) -> AtomicCounters {
        AtomicCounters {
            value: AtomicU64::new(word),
        }
    }

    #[test]
    fn fields_are_packed_where_documented() {
        let c = AtomicCounters::new();
        c.add_inactive_thread();
        c.add_inactive_thread();
        c.add_inactive_thread();
        assert!(c.try_add_sleeping_thread(c.load(Ordering::SeqCst)));
        c.increment_jobs_event_counter_if(JobsEventCounter::is_sleepy);
        let word = c.value.load(Ordering::SeqCst);
        assert_eq!(word, 1 | (3 << 16) | (1 << 32));
        let s = c.load(Ordering::SeqCst);
        assert_eq!(s.sleeping_threads(), 1);
        assert_eq!(s.inactive_threads(), 3);
        assert_eq!(s.awake_but_idle_threads(), 2);
        assert_eq!(s.jobs_counter(), JobsEventCounter(1));
    }

    #[test]
    fn jec_goes_odd_on_post_and_even_on_sleepy_once_each() {
        let c = AtomicCounters::new();
        assert!(c.load(Ordering::SeqCst).jobs_counter().is_sleepy());
        // Posting work flips an even JEC to odd...
        let after = c.increment_jobs_event_counter_if(JobsEventCounter::is_sleepy);
        assert_eq!(after.jobs_counter(), JobsEventCounter(1));
        // ...and a second post leaves an odd JEC alone.
        let again = c.increment_jobs_event_counter_if(JobsEventCounter::is_sleepy);
        assert_eq!(again.jobs_counter(), JobsEventCounter(1));
        // Getting sleepy flips odd to even, once.
        let sleepy = c.increment_jobs_event_counter_if(JobsEventCounter::is_active);
        assert_eq!(sleepy.jobs_counter(), JobsEventCounter(2));
        let sleepy_again = c.increment_jobs_event_counter_if(JobsEventCounter::is_active);
        assert_eq!(sleepy_again.jobs_counter(), JobsEventCounter(2));
    }

    #[test]
    fn jec_rollover_stays_in_its_field() {
        let max = THREADS_MAX as u64;
        let c = with_word((u64::MAX << JEC_SHIFT) | (max << INACTIVE_SHIFT) | max);
        assert!(c.load(Ordering::SeqCst).jobs_counter().is_active());
        let after = c.increment_jobs_event_counter_if(JobsEventCounter::is_active);
        assert_eq!(after.jobs_counter(), JobsEventCounter(0));
        assert_eq!(after.sleeping_threads(), THREADS_MAX);
        assert_eq!(after.inactive_threads(), THREADS_MAX);
    }

    #[test]
    fn full_thread_fields_do_not_carry_into_neighbours() {
        let c = AtomicCounters::new();
        for _ in 0..THREADS_MAX {
            c.add_inactive_thread();
        }
        for _ in 0..THREADS_MAX {
            assert!(c.try_add_sleeping_thread(c.load(Ordering::SeqCst)));
        }
        let s = c.load(Ordering::SeqCst);
        assert_eq!(s.sleeping_threads(), THREADS_MAX);
        assert_eq!(s.inactive_threads(), THREADS_MAX);
        assert_eq!(s.jobs_counter(), JobsEventCounter(0));
        c.sub_sleeping_thread();
        c.sub_inactive_thread();
        let s = c.load(Ordering::SeqCst);
        assert_eq!(s.sleeping_threads(), THREADS_MAX - 1);
        assert_eq!(s.inactive_threads(), THREADS_MAX - 1);
        assert_eq!(s.jobs_counter(), JobsEventCounter(0));
    }

    #[test]
    fn try_add_sleeping_fails_once_the_jec_moved() {
        let c = AtomicCounters::new();
        c.add_inactive_thread();
        let sleepy = c.increment_jobs_event_counter_if(JobsEventCounter::is_active);
        // Work is posted between the snapshot and the commit.
        c.increment_jobs_event_counter_if(JobsEventCounter::is_sleepy);
        assert!(!c.try_add_sleeping_thread(sleepy));
        assert_eq!(c.load(Ordering::SeqCst).sleeping_threads(), 0);
    }

    #[test]
    fn dummy_jec_never_equals_a_snapshot() {
        let c = with_word(u64::MAX);
        assert_ne!(
            c.load(Ordering::SeqCst).jobs_counter(),
            JobsEventCounter::DUMMY
        );
    }
}
