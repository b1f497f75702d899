//! The switches of the loom models' teeth check (`scripts/loom`). Each
//! removes one fence or check of the protocol, or moves one read, to show
//! that a model finds the fault without it: a model that passes with a
//! tooth pulled checks nothing.
//!
//! Under `cfg(loom)` the tooth that `POOL_LOOM_TOOTH` names is pulled for
//! the whole run, so that one build of the models serves every check (a
//! `--cfg` per tooth rebuilt the crate and all its dependencies each time:
//! most of CI's loom step). In every other build no tooth is ever pulled:
//! `pulled` is a constant `false` the compiler removes with the branch, and
//! the protocol's code is the code that runs.

/// One way to break the protocol, for its model to find.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tooth {
    /// The poster's seq-cst fence (#1, `SleepManager::new_injected_jobs`):
    /// an injected job's wake is lost.
    SkipPosterFence,
    /// The sleeper's seq-cst fence (#2, `SleepManager::sleep`): the same.
    SkipSleeperFence,
    /// The finder's fence (#3, `SleepManager::work_found`): a job whose
    /// tickle counted on a worker that found other work is stranded.
    SkipFinderFence,
    /// The watcher reads the counters before it announces itself parked
    /// (`WatcherPark::park_while`): it sleeps through a worker's poll.
    WatcherLooksFirst,
    /// A worker's inbox is left out of its final check before it sleeps
    /// (`models/inbox.rs`): a `spawn_local` task woken elsewhere waits.
    SkipInboxCheck,
    /// A sleeper in its guest runtime stores its waker apart from its read
    /// of its flag (`SleepState::block_in_guest`): a wake in between is
    /// lost.
    SplitGuestWaker,
    /// The fence (#6) of a sleeper that found the driver held
    /// (`SleepManager::sleep`): readiness nobody watches.
    SkipMissedFence,
    /// A paused clock's quiet report is dropped (`Activity::end`): a
    /// sleeper that decided not to jump never decides again.
    SkipQuietUnpark,
    /// A woken worker adds itself back to the pool's activity when it runs,
    /// instead of its waker (`SleepManager::blocked_sleeper_left`): the clock
    /// jumps before the woken worker runs its job.
    SleeperAddsItself,
    /// A task share's give-back is relaxed (`TaskShares::give_back`): a
    /// holder's read of the pool races its free.
    RelaxedShares,
    /// A worker going idle reads the driver sleeper's wait before it hands
    /// its timers over (`Deadlines::leave`): a timer waited for past its
    /// deadline.
    LeaveReadsFirst,
}

impl Tooth {
    /// Every tooth, in the order `scripts/loom` checks them.
    #[cfg_attr(not(loom), allow(dead_code))]
    pub(crate) const ALL: [Tooth; 11] = [
        Tooth::SkipPosterFence,
        Tooth::SkipSleeperFence,
        Tooth::SkipFinderFence,
        Tooth::WatcherLooksFirst,
        Tooth::SkipInboxCheck,
        Tooth::SplitGuestWaker,
        Tooth::SkipMissedFence,
        Tooth::SkipQuietUnpark,
        Tooth::SleeperAddsItself,
        Tooth::RelaxedShares,
        Tooth::LeaveReadsFirst,
    ];

    /// The name `POOL_LOOM_TOOTH` gives it.
    #[cfg_attr(not(loom), allow(dead_code))]
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Tooth::SkipPosterFence => "skip_poster_fence",
            Tooth::SkipSleeperFence => "skip_sleeper_fence",
            Tooth::SkipFinderFence => "skip_finder_fence",
            Tooth::WatcherLooksFirst => "watcher_looks_first",
            Tooth::SkipInboxCheck => "skip_inbox_check",
            Tooth::SplitGuestWaker => "split_guest_waker",
            Tooth::SkipMissedFence => "skip_missed_fence",
            Tooth::SkipQuietUnpark => "skip_quiet_unpark",
            Tooth::SleeperAddsItself => "sleeper_adds_itself",
            Tooth::RelaxedShares => "relaxed_shares",
            Tooth::LeaveReadsFirst => "leave_reads_first",
        }
    }
}

/// Is `tooth` pulled in this run? Only the one `POOL_LOOM_TOOTH` names, read
/// once.
///
/// # Panics
///
/// If `POOL_LOOM_TOOTH` names no tooth.
#[cfg(loom)]
pub(crate) fn pulled(tooth: Tooth) -> bool {
    // std's, not loom's: the switch is the run's setting, not a part of the
    // model.
    static PULLED: std::sync::OnceLock<Option<Tooth>> = std::sync::OnceLock::new();
    let pulled = PULLED.get_or_init(|| {
        let name = std::env::var("POOL_LOOM_TOOTH").ok()?;
        let found = Tooth::ALL.into_iter().find(|t| t.name() == name);
        Some(found.unwrap_or_else(|| {
            let names: Vec<&str> = Tooth::ALL.iter().map(|t| t.name()).collect();
            panic!("POOL_LOOM_TOOTH={name} names no tooth: it is one of {names:?}")
        }))
    });
    *pulled == Some(tooth)
}

/// No tooth is ever pulled outside the loom models.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) const fn pulled(_: Tooth) -> bool {
    false
}
