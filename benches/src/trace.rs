//! A pool timeline (`Builder::trace`, Chrome trace-event JSON) read back:
//! each worker's spans (polls, sleeps, fork-join jobs) in time order, and
//! what a worker was doing at a given moment. Times are microseconds from
//! the timeline's start (the pool's build).

use std::path::Path;

/// What a span of a worker's lane was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// A poll of the task with this id.
    Poll(u64),
    /// Asleep, on its condvar or in the I/O driver.
    Sleep,
    /// A fork-join job, or a `block_on` running other work.
    Other,
}

/// One span of one worker's lane.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub start: f64,
    pub end: f64,
    pub what: What,
}

/// The spans of a trace, per worker, each lane sorted by start.
#[derive(Debug)]
pub struct Timeline {
    pub lanes: Vec<Vec<Span>>,
    /// The earliest timestamp of any event, spans and instants alike: where
    /// `examples::trace_svg` counts a `View`'s milliseconds from.
    pub first: f64,
}

impl Timeline {
    /// Parse a trace's JSON.
    pub fn parse(json: &str) -> Timeline {
        let v: serde_json::Value = serde_json::from_str(json).expect("the trace is JSON");
        let events = v["traceEvents"].as_array().expect("traceEvents");
        let mut lanes: Vec<Vec<Span>> = Vec::new();
        let first = events
            .iter()
            .filter(|e| e["ph"] == "X" || e["ph"] == "i")
            .filter_map(|e| e["ts"].as_f64())
            .fold(f64::INFINITY, f64::min);
        for e in events.iter().filter(|e| e["ph"] == "X") {
            let (Some(start), Some(dur), Some(worker)) =
                (e["ts"].as_f64(), e["dur"].as_f64(), e["tid"].as_u64())
            else {
                continue;
            };
            let what = match e["name"].as_str() {
                Some("poll") => What::Poll(e["args"]["task"].as_u64().unwrap_or(0)),
                Some("sleep") => What::Sleep,
                _ => What::Other,
            };
            let worker = worker as usize;
            if lanes.len() <= worker {
                lanes.resize_with(worker + 1, Vec::new);
            }
            lanes[worker].push(Span {
                start,
                end: start + dur,
                what,
            });
        }
        for lane in &mut lanes {
            lane.sort_by(|a, b| a.start.total_cmp(&b.start));
        }
        Timeline { lanes, first }
    }

    /// Read and parse the trace at `path`.
    pub fn read(path: &Path) -> Timeline {
        let json = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("reading the trace {}: {e}", path.display()));
        Timeline::parse(&json)
    }

    /// Every poll, as (worker, span), in no particular order.
    pub fn polls(&self) -> impl Iterator<Item = (usize, &Span)> {
        self.lanes.iter().enumerate().flat_map(|(w, lane)| {
            lane.iter()
                .filter(|s| matches!(s.what, What::Poll(_)))
                .map(move |s| (w, s))
        })
    }

    /// The span worker `worker` was in at time `t`, if any (`None`: awake
    /// outside a span, searching or in the pool's own code).
    pub fn at(&self, worker: usize, t: f64) -> Option<&Span> {
        let lane = self.lanes.get(worker)?;
        let i = lane.partition_point(|s| s.start <= t);
        // Spans of one lane do not overlap, except a `block_on`'s polls
        // inside it: the latest span that began before `t` decides.
        lane[..i].last().filter(|s| s.end >= t)
    }
}
