//! The worker timeline: [`Builder::trace`](crate::Builder::trace) and
//! `POOL_TRACE` for the global pool.
//!
//! Each worker records into its own lane: a fixed ring of events, written
//! only by that worker, without locks (three relaxed stores and a release
//! store of the length per event). The lanes are turned into Chrome
//! trace-event JSON when the pool is dropped (the global pool: at process
//! exit), one thread lane per worker, which Perfetto and chrome://tracing
//! open.
//!
//! # Invariants
//!
//! * Only worker `i` writes lane `i` (`record`); anyone may read it. An
//!   event's words are atomics, so a reader racing a writer (the global
//!   pool's trace, written at exit while its workers may still run) reads
//!   a torn event at worst, never undefined behaviour; a pool's own trace is
//!   written after its workers have exited, and reads every event whole.
//! * A lane keeps the last `LANE_EVENTS` events; older ones are
//!   overwritten, and the JSON says how many were lost.
//! * Timestamps come from one clock for all lanes: the TSC on x86_64
//!   (`ticks.rs`: 10-13 ns a reading against 25-35 ns for
//!   `Instant::now` on the machines measured), scaled to nanoseconds by two readings of both
//!   clocks, at the start and when written; elsewhere `Instant`.
//! * `woken_by` is written by the thread that wakes a sleeping worker,
//!   before it wakes it (under the sleeper's lock), and taken by the woken
//!   worker after it woke: so it names the last waker of that sleep.

use super::ticks::ticks;
use crate::sleep::manager::WakeNote;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Events a lane keeps (24 bytes each: 24 MiB of address space per worker,
/// touched only as the lane fills).
const LANE_EVENTS: usize = 1 << 20;

/// What an event records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// A poll of a task; arg: the task id.
    Poll = 1,
    /// A fork-join job (a stolen `join` half, a `scope` spawn).
    Job = 2,
    /// Asleep (on the condvar or in the I/O driver); arg: who woke it.
    Sleep = 3,
    /// The worker announced itself sleepy (one search left).
    Sleepy = 4,
    /// Tasks taken from another worker; arg: victim << 32 | count.
    Steal = 5,
    /// Tasks taken from the injector; arg: count.
    Injector = 6,
    /// A `block_on` on this worker thread, running other work meanwhile.
    BlockOn = 7,
    /// A poll of the I/O driver by this worker without blocking and the
    /// wakes of what it found, or the wakes of what a sleep in the driver
    /// ended with (the span is the wakes alone); arg: `driver_arg`.
    Driver = 8,
}

/// A `Kind::Driver` event's arg: the tasks of this pool made ready, and
/// whether the worker was busy (a periodic or forced-yield poll) or had
/// just slept in the driver (`event_json` unpacks it).
pub(crate) fn driver_arg(tasks: usize, busy: bool, after_sleep: bool) -> u64 {
    (tasks as u64) << 2 | u64::from(after_sleep) << 1 | u64::from(busy)
}

impl Kind {
    fn from_u8(k: u8) -> Option<Kind> {
        Some(match k {
            1 => Kind::Poll,
            2 => Kind::Job,
            3 => Kind::Sleep,
            4 => Kind::Sleepy,
            5 => Kind::Steal,
            6 => Kind::Injector,
            7 => Kind::BlockOn,
            8 => Kind::Driver,
            _ => return None,
        })
    }
}

/// `woken_by` values besides a worker's index + 1.
const WOKEN_BY_NONE: u32 = 0;
const WOKEN_BY_OUTSIDE: u32 = u32::MAX;
const WOKEN_BY_WATCHER: u32 = u32::MAX - 1;

/// One event: start time, duration and kind (kind in the top 8 bits),
/// argument.
struct Event {
    start: AtomicU64,
    dur_kind: AtomicU64,
    arg: AtomicU64,
}

const DUR_MASK: u64 = (1 << 56) - 1;

/// One worker's events.
pub(crate) struct Lane {
    events: Box<[Event]>,
    /// Events recorded so far (the next one goes to `len % LANE_EVENTS`).
    len: AtomicUsize,
    woken_by: AtomicU32,
}

impl Lane {
    fn new() -> Lane {
        Lane {
            events: zeroed_events(LANE_EVENTS),
            len: AtomicUsize::new(0),
            woken_by: AtomicU32::new(WOKEN_BY_NONE),
        }
    }

    /// Record an event (only this lane's worker calls it).
    #[inline]
    pub(crate) fn record(&self, kind: Kind, start: u64, end: u64, arg: u64) {
        let n = self.len.load(Ordering::Relaxed);
        let e = &self.events[n % LANE_EVENTS];
        e.start.store(start, Ordering::Relaxed);
        e.dur_kind.store(
            (end.saturating_sub(start) & DUR_MASK) | (kind as u64) << 56,
            Ordering::Relaxed,
        );
        e.arg.store(arg, Ordering::Relaxed);
        // Release: a reader that sees the new length sees the event.
        self.len.store(n + 1, Ordering::Release);
    }

    /// Who woke this worker from its last sleep (and forget it).
    pub(crate) fn take_woken_by(&self) -> u64 {
        u64::from(self.woken_by.swap(WOKEN_BY_NONE, Ordering::Relaxed))
    }
}

/// `n` zeroed events, from `alloc_zeroed`: the pages are mapped as they
/// are first written, so an unused lane costs address space, not memory.
fn zeroed_events(n: usize) -> Box<[Event]> {
    let layout = std::alloc::Layout::array::<Event>(n).expect("a lane fits in memory");
    // SAFETY: `layout` has a non-zero size; an `Event` is three `AtomicU64`s,
    // for which all-zero bytes are a valid value (0); the allocation has
    // exactly the layout that `Box<[Event]>` of length `n` frees with.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<Event>();
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n))
    }
}

/// Where a timeline's time starts: an `Instant` and a tick reading taken
/// together.
struct Anchor {
    instant: Instant,
    ticks: u64,
}

impl Anchor {
    fn now() -> Anchor {
        Anchor {
            instant: Instant::now(),
            ticks: ticks(),
        }
    }
}

/// A pool's timeline: one lane per worker.
pub(crate) struct Timeline {
    path: PathBuf,
    lanes: Box<[Lane]>,
    start: Anchor,
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeline")
            .field("path", &self.path)
            .field("workers", &self.lanes.len())
            .finish_non_exhaustive()
    }
}

impl Timeline {
    pub(crate) fn new(path: PathBuf, workers: usize) -> Timeline {
        Timeline {
            path,
            lanes: (0..workers).map(|_| Lane::new()).collect(),
            start: Anchor::now(),
        }
    }

    pub(crate) fn lane(&self, worker: usize) -> &Lane {
        &self.lanes[worker]
    }

    /// A timestamp for `record`.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        ticks()
    }

    /// Mark the current thread as worker `index` of this timeline's pool
    /// (`Some`), or as its watcher (`None`), for `woken_by`.
    pub(crate) fn enter_thread(&self, index: Option<usize>) {
        let tag = index.map_or(WOKEN_BY_WATCHER, |i| i as u32 + 1);
        // The thread's tag lives in the context: (this timeline, the tag).
        crate::context::plain_cells::set_timeline_tag((self as *const Timeline as usize, tag));
    }

    /// Write the trace to its path; an error is printed (a pool's drop has
    /// no one to return it to).
    pub(crate) fn write(&self) {
        if let Err(e) = self.write_to(&self.path) {
            eprintln!(
                "pool: could not write the trace to {}: {e}",
                self.path.display()
            );
        }
    }

    fn write_to(&self, path: &Path) -> io::Result<()> {
        let end = Anchor::now();
        let elapsed_ns = end.instant.duration_since(self.start.instant).as_nanos() as f64;
        let elapsed_ticks = end.ticks.wrapping_sub(self.start.ticks).max(1) as f64;
        let ns_per_tick = if cfg!(target_arch = "x86_64") {
            elapsed_ns / elapsed_ticks
        } else {
            1.0
        };
        let to_us = |ticks: u64| ticks.wrapping_sub(self.start.ticks) as f64 * ns_per_tick / 1e3;
        let mut out = io::BufWriter::new(std::fs::File::create(path)?);
        let mut line = String::with_capacity(256);
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        out.write_all(
            b"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"pool\"}}",
        )?;
        for (worker, lane) in self.lanes.iter().enumerate() {
            let len = lane.len.load(Ordering::Acquire);
            let first = len.saturating_sub(LANE_EVENTS);
            write!(
                out,
                ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{worker},\
                 \"args\":{{\"name\":\"worker {worker}\",\"lost_events\":{first}}}}}"
            )?;
            write!(
                out,
                ",\n{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":{worker},\
                 \"args\":{{\"sort_index\":{worker}}}}}"
            )?;
            for i in first..len {
                let e = &lane.events[i % LANE_EVENTS];
                let start = e.start.load(Ordering::Relaxed);
                let dur_kind = e.dur_kind.load(Ordering::Relaxed);
                let arg = e.arg.load(Ordering::Relaxed);
                let Some(kind) = Kind::from_u8((dur_kind >> 56) as u8) else {
                    continue; // torn by a racing writer (global pool at exit)
                };
                let ts = to_us(start);
                let dur = (dur_kind & DUR_MASK) as f64 * ns_per_tick / 1e3;
                line.clear();
                event_json(&mut line, kind, worker, ts, dur, arg);
                out.write_all(b",\n")?;
                out.write_all(line.as_bytes())?;
            }
        }
        out.write_all(b"\n]}\n")?;
        out.flush()
    }
}

/// The sleep manager tells the timeline who wakes a sleeping worker.
impl WakeNote for Timeline {
    /// The current thread is about to wake worker `index` (asleep), under
    /// that worker's sleep lock.
    fn waking(&self, index: usize) {
        let (timeline, tag) = crate::context::plain_cells::timeline_tag();
        let tag = if timeline == self as *const Timeline as usize {
            tag
        } else {
            WOKEN_BY_OUTSIDE
        };
        self.lanes[index].woken_by.store(tag, Ordering::Relaxed);
    }
}

/// Who a `woken_by` value names.
fn waker_name(tag: u64) -> String {
    match tag as u32 {
        WOKEN_BY_NONE => "I/O, timer or shutdown".to_string(),
        WOKEN_BY_OUTSIDE => "a thread outside the pool".to_string(),
        WOKEN_BY_WATCHER => "the watcher".to_string(),
        w => format!("worker {}", w - 1),
    }
}

/// One trace event as JSON (`X`: a span with a duration, `i`: an instant).
fn event_json(line: &mut String, kind: Kind, tid: usize, ts: f64, dur: f64, arg: u64) {
    let span = |line: &mut String, name: &str, cat: &str, args: &str| {
        let _ = write!(
            line,
            "{{\"name\":\"{name}\",\"cat\":\"{cat}\",\"ph\":\"X\",\"ts\":{ts:.3},\"dur\":{dur:.3},\
             \"pid\":1,\"tid\":{tid},\"args\":{{{args}}}}}"
        );
    };
    let instant = |line: &mut String, name: &str, cat: &str, args: &str| {
        let _ = write!(
            line,
            "{{\"name\":\"{name}\",\"cat\":\"{cat}\",\"ph\":\"i\",\"s\":\"t\",\"ts\":{ts:.3},\
             \"pid\":1,\"tid\":{tid},\"args\":{{{args}}}}}"
        );
    };
    match kind {
        Kind::Poll => span(line, "poll", "task", &format!("\"task\":{arg}")),
        Kind::Job => span(line, "job", "join", ""),
        Kind::Sleep => span(
            line,
            "sleep",
            "sleep",
            &format!("\"woken_by\":\"{}\"", waker_name(arg)),
        ),
        Kind::Sleepy => instant(line, "sleepy", "sleep", ""),
        Kind::Steal => instant(
            line,
            "steal",
            "search",
            &format!(
                "\"from\":\"worker {}\",\"tasks\":{}",
                arg >> 32,
                arg & 0xffff_ffff
            ),
        ),
        Kind::Injector => instant(line, "injector", "search", &format!("\"tasks\":{arg}")),
        Kind::BlockOn => span(line, "block_on", "task", ""),
        Kind::Driver => span(
            line,
            "driver",
            "io",
            &format!(
                "\"tasks\":{},\"busy\":{},\"after_sleep\":{}",
                arg >> 2,
                arg & 1 != 0,
                arg & 2 != 0
            ),
        ),
    }
}
