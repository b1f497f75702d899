//! A worker's lane of the timeline (`Builder::trace`, `timeline.rs`):
//! what the worker records, and nothing when the pool is not traced.
//!
//! An untraced pool pays one predictable branch per record, on a field of
//! the worker's own stack, and reads no clock.

use super::timeline::{Kind, Lane, Timeline};
use crate::sleep::manager::Round;
use std::sync::Arc;

/// Where worker `index` records its events, if the pool is traced.
pub(crate) struct WorkerLane {
    timeline: Option<Arc<Timeline>>,
    index: usize,
}

impl WorkerLane {
    pub(crate) fn new(timeline: Option<Arc<Timeline>>, index: usize) -> WorkerLane {
        WorkerLane { timeline, index }
    }

    pub(crate) fn is_traced(&self) -> bool {
        self.timeline.is_some()
    }

    #[inline]
    fn lane(&self) -> Option<(&Timeline, &Lane)> {
        let timeline = self.timeline.as_deref()?;
        Some((timeline, timeline.lane(self.index)))
    }

    /// A start time for `record` (0 when the pool is not traced).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.timeline.as_deref().map_or(0, Timeline::now)
    }

    /// Record an instant event (one clock reading).
    #[inline]
    pub(crate) fn instant(&self, kind: Kind, arg: u64) {
        if let Some((timeline, lane)) = self.lane() {
            let now = timeline.now();
            lane.record(kind, now, now, arg);
        }
    }

    /// Record an event that began at `start` (from `now`) and ends now.
    #[inline]
    pub(crate) fn record(&self, kind: Kind, start: u64, arg: u64) {
        if let Some((timeline, lane)) = self.lane() {
            lane.record(kind, start, timeline.now(), arg);
        }
    }

    /// After an idle round that began at `start`: record getting sleepy or
    /// a sleep.
    #[cold]
    pub(crate) fn round(&self, round: Round, start: u64) {
        if let Some((_, lane)) = self.lane() {
            match round {
                // An instant, at the moment it was decided.
                Round::GotSleepy => lane.record(Kind::Sleepy, start, start, 0),
                Round::Slept => self.record(Kind::Sleep, start, lane.take_woken_by()),
                Round::Searched | Round::StayedAwake => {}
            }
        }
    }
}
