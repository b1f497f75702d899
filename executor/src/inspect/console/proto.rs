//! The console's wire format: the table's tasks as console-api messages.
//!
//! # Invariants
//!
//! * Every task sent is described by the one metadata (`META_ID`), which
//!   a subscriber receives in its first update, before any task.
//! * A task's first appearance carries its stats in the same update
//!   (tokio-console skips a new task without them), and every stats
//!   message carries `created_at` and `poll_stats` (it fails on one
//!   without).
//! * An update holds at most `TASKS_PER_UPDATE` tasks: a pool of many
//!   tasks is sent in several, each well under the 4 MiB a gRPC client
//!   takes by default.

use super::resources::Looked;
use crate::inspect::console::stats::now;
use crate::inspect::console::stats::wall;
use crate::inspect::console::stats::Stamp;
use crate::inspect::console::stats::TaskStats;
use crate::inspect::console::table::Entry;
use crate::inspect::console::table::Publish;
use crate::task::header::TaskKind;
use console_api as api;
use console_api::tasks::task_details::PollTimesHistogram;
use hdrhistogram::serialization::Serializer as _;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The id of the metadata every task names.
const META_ID: u64 = 1;

/// The most tasks (new ones and changed stats together) in one update.
const TASKS_PER_UPDATE: usize = 4096;

/// The largest duration the histograms sent keep apart (the spreads'
/// last doubling, about 69 s); a longer one is an outlier.
const HISTOGRAM_MAX: u64 = 1 << 36;

fn stamp(at: Stamp) -> prost_types::Timestamp {
    wall(at).into()
}

fn duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration::try_from(d).unwrap_or(prost_types::Duration {
        seconds: i64::MAX,
        nanos: 0,
    })
}

/// The metadata every task names: tokio's spawn span, as pool's.
fn metadata() -> api::register_metadata::NewMetadata {
    api::register_metadata::NewMetadata {
        id: Some(api::MetaId { id: META_ID }),
        metadata: Some(api::Metadata {
            name: "runtime.spawn".to_string(),
            target: "pool::task".to_string(),
            module_path: "pool".to_string(),
            location: None,
            kind: api::metadata::Kind::Span as i32,
            level: api::metadata::Level::Info as i32,
            field_names: vec![
                "kind".to_string(),
                "task.id".to_string(),
                "task.name".to_string(),
            ],
        }),
    }
}

fn field(name: &str, value: api::field::Value) -> api::Field {
    api::Field {
        metadata_id: Some(api::MetaId { id: META_ID }),
        name: Some(api::field::Name::StrName(name.to_string())),
        value: Some(value),
    }
}

/// A task as sent once, when it is new to a subscriber.
fn task(stats: &TaskStats) -> api::tasks::Task {
    let (kind, name) = match stats.kind {
        TaskKind::Async => (api::tasks::task::Kind::Spawn, "task"),
        TaskKind::Local => (api::tasks::task::Kind::Spawn, "local"),
        TaskKind::Blocking => (api::tasks::task::Kind::Blocking, "blocking"),
    };
    let at = stats.spawned_at;
    api::tasks::Task {
        id: Some(api::Id {
            id: stats.id.as_u64(),
        }),
        metadata: Some(api::MetaId { id: META_ID }),
        kind: kind as i32,
        fields: {
            let mut fields = vec![
                field("kind", api::field::Value::StrVal(name.to_string())),
                field("task.id", api::field::Value::U64Val(stats.id.as_u64())),
            ];
            if let Some(task_name) = &stats.name {
                fields.push(field(
                    "task.name",
                    api::field::Value::StrVal(task_name.to_string()),
                ));
            }
            fields
        },
        parents: Vec::new(),
        location: Some(api::Location {
            file: Some(at.file().to_string()),
            module_path: None,
            line: Some(at.line()),
            column: Some(at.column()),
        }),
    }
}

/// A task's figures now.
fn task_stats(stats: &TaskStats) -> api::tasks::Stats {
    let s = stats.snapshot();
    api::tasks::Stats {
        created_at: Some(stamp(stats.created)),
        dropped_at: s.dropped.map(stamp),
        wakes: s.wakes,
        waker_clones: s.waker_clones,
        waker_drops: s.waker_drops,
        last_wake: s.last_wake.map(stamp),
        poll_stats: Some(api::PollStats {
            polls: s.polls,
            first_poll: s.first_poll.map(stamp),
            last_poll_started: s.last_poll_started.map(stamp),
            last_poll_ended: s.last_poll_ended.map(stamp),
            busy_time: Some(duration(s.busy)),
        }),
        self_wakes: s.self_wakes,
        scheduled_time: Some(duration(s.scheduled)),
    }
}

/// One publish as updates: the new tasks (with their stats) and the
/// changed stats, `TASKS_PER_UPDATE` at a time; the first update also
/// registers the metadata if `with_metadata`, and counts `lost`. Always
/// at least one update (an empty one says "nothing changed, still here").
pub(super) fn updates(
    publish: Publish,
    with_metadata: bool,
    looked: Looked,
) -> Vec<api::instrument::Update> {
    let Publish { new, changed, lost } = publish;
    let mut looked = Some(looked);
    let mut updates = Vec::new();
    let mut new = new.into_iter().peekable();
    let mut changed = changed.into_iter().peekable();
    loop {
        let mut task_update = api::tasks::TaskUpdate {
            new_tasks: Vec::new(),
            stats_update: HashMap::new(),
            dropped_events: if updates.is_empty() { lost } else { 0 },
        };
        let mut add = |entry: Arc<Entry>, is_new: bool| {
            if is_new {
                task_update.new_tasks.push(task(&entry.stats));
            }
            task_update
                .stats_update
                .insert(entry.stats.id.as_u64(), task_stats(&entry.stats));
        };
        let mut room = TASKS_PER_UPDATE;
        while room > 0 {
            if let Some(entry) = new.next() {
                add(entry, true);
            } else if let Some(entry) = changed.next() {
                add(entry, false);
            } else {
                break;
            }
            room -= 1;
        }
        let first = updates.is_empty();
        // The resources go with the first update, after its metadata.
        let Looked {
            resources,
            async_ops,
        } = looked.take().unwrap_or_default();
        updates.push(api::instrument::Update {
            now: Some(stamp(now())),
            task_update: Some(task_update),
            resource_update: Some(resources),
            async_op_update: Some(async_ops),
            new_metadata: (first && with_metadata).then(|| {
                let mut metadata = vec![metadata()];
                metadata.extend(super::resources::metadata());
                api::RegisterMetadata { metadata }
            }),
        });
        if new.peek().is_none() && changed.peek().is_none() {
            return updates;
        }
    }
}

/// A histogram as console-api sends one: an HdrHistogram (2 significant
/// digits) of one value per bucket, the bucket's upper bound, counted as
/// often as the bucket; the durations past `HISTOGRAM_MAX` as outliers.
fn histogram(buckets: &[(u64, u32)]) -> api::tasks::DurationHistogram {
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, HISTOGRAM_MAX, 2)
        .expect("1..2^36 at 2 digits is a valid histogram");
    let mut high_outliers = 0;
    for &(upper, count) in buckets {
        if upper > HISTOGRAM_MAX {
            high_outliers += u64::from(count);
        } else {
            // Within the bounds above: recording cannot fail.
            let _ = h.record_n(upper.max(1), u64::from(count));
        }
    }
    let mut raw = Vec::new();
    // Serializing into a `Vec` cannot fail.
    let _ = hdrhistogram::serialization::V2Serializer::new().serialize(&h, &mut raw);
    api::tasks::DurationHistogram {
        raw_histogram: raw,
        max_value: h.max(),
        high_outliers,
        // The spreads keep no more than "over 2^36 ns" of an outlier.
        highest_outlier: (high_outliers > 0).then_some(HISTOGRAM_MAX),
    }
}

/// Task details: the poll-time and scheduled-time histograms of `entry`.
pub(super) fn details(entry: &Entry) -> api::tasks::TaskDetails {
    let (mut polls, mut scheduled) = (Vec::new(), Vec::new());
    entry.stats.spreads(
        |upper, count| polls.push((upper, count)),
        |upper, count| scheduled.push((upper, count)),
    );
    api::tasks::TaskDetails {
        task_id: Some(api::Id {
            id: entry.stats.id.as_u64(),
        }),
        now: Some(stamp(now())),
        poll_times_histogram: Some(PollTimesHistogram::Histogram(histogram(&polls))),
        scheduled_times_histogram: Some(histogram(&scheduled)),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_keeps_its_counts_and_its_outliers() {
        let h = histogram(&[(1_000, 3), (2_000_000, 1), (u64::MAX, 2)]);
        assert_eq!(h.high_outliers, 2);
        let mut raw = &h.raw_histogram[..];
        let back: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut raw)
            .unwrap();
        assert_eq!(back.len(), 4);
        assert!(back.max() >= 2_000_000 && back.max() < 2_100_000);
    }
}
