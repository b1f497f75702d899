//! `WaitBoard`: what each live task of a table shard is waiting on, as
//! the pool's own futures recorded it when they returned `Pending` inside
//! the task's last poll (`TaskInfo::waiting_on`, API "Where each task
//! waits").
//!
//! A pool future that returns `Pending` inside a task's poll records a
//! `Wait` (what it is, where it was made, one or two numbers) in its
//! task's `WaitSlot`, found by the task's table slot: no lock, no
//! allocation, a few stores. The slot says which poll its records belong
//! to (the task's id and its poll count, from its header), so the next
//! poll starts afresh at its first record, and a poll that records nothing
//! leaves records that no reader believes (their poll is not the task's
//! last). A dump reads a task's slot from any thread.
//!
//! # Invariants
//!
//! * One writer per slot at a time: the thread polling the task, which
//!   async-task serializes; a key is reused only after its task's future
//!   was dropped (`owned.rs`), so a new task's writes come after the old
//!   one's. Readers are any thread.
//! * A slot is a seqlock: the writer makes `seq` odd, writes, and makes it
//!   even again (release); a reader takes a copy between two equal even
//!   readings of `seq` (the copy's loads ordered before the second reading
//!   by an acquire fence) or gives up. Every field is an atomic, so a
//!   racing read is a retry, never undefined behaviour.
//! * A slot's records belong to the poll whose task id and poll count it
//!   holds: a reader shows them only for that task, and only while its
//!   header's poll count is still that poll (`read`). The count saturates
//!   at 2^29 - 1 polls (the header's), from where a poll that records
//!   nothing no longer hides its predecessor's records.
//! * A board's segments are allocated the first time a key in their range
//!   records (zeroed: a zero slot belongs to no task), installed with one
//!   compare-exchange, and let go only with the board: a slot's address
//!   never changes. A segment let go is kept for the next board that
//!   needs one of its size (`SPARES`; a pool made per test or per
//!   benchmark repetition then pays no page faults for it), as it is: its
//!   slots hold the ids of tasks of a pool that is gone, and task ids are
//!   never reused in a process, so no reader or writer takes them for its
//!   own.
//! * The board is not the sleep protocol: every atomic here is a record,
//!   and nothing here blocks, wakes or posts work.

use super::waits::Wait;
use std::alloc::Layout;
use std::cell::RefCell;
use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// The records a slot keeps for one poll: the `Wait`s after these are
/// counted only.
pub(crate) const RECORDS: usize = 3;

/// Slots in a board's first segment; segment `s` has `FIRST << s`.
const FIRST: usize = 16;

/// Segments enough for every key a shard can have (2^32 with one shard).
const SEGMENTS: usize = 29;

/// `ID_BITS` low bits of `WaitSlot::task` hold the task's id, the rest the
/// number of waits recorded in that poll (saturating).
const ID_BITS: u32 = 48;
const ID_MASK: u64 = (1 << ID_BITS) - 1;

/// One task's waits: 16 bytes of header and `RECORDS` records of two
/// words (the head with `since` in its top 32 bits, then `a`), on a cache
/// line of its own, so that two tasks polled on two workers do not write
/// one line.
#[repr(C, align(64))]
struct WaitSlot {
    seq: AtomicU32,
    /// The task's poll count (its header's) when these were recorded.
    poll: AtomicU32,
    /// The task's id and how many waits its poll recorded.
    task: AtomicU64,
    records: [[AtomicU64; 2]; RECORDS],
}

/// What the recording thread keeps of the records a new poll replaces, so
/// that a wait that goes on across polls keeps its `since`: the task and
/// poll it was taken for (a nested poll of another task on this thread
/// replaces it; the outer task's later records then start their `since`
/// afresh), and each record's words and `since`.
#[derive(Default)]
pub(crate) struct WaitScratch {
    owner: (u64, u32),
    len: usize,
    old: [(u64, u64, u32); RECORDS],
}

/// A copy of one task's waits (`WaitBoard::read`): each with the coarse
/// time it began (`coarse_clock.rs` ticks), and how many the poll
/// recorded in all (more than the copies when they did not fit).
#[derive(Debug, Default)]
pub(crate) struct WaitCopy {
    pub(crate) waits: Vec<(Wait, u32)>,
    pub(crate) recorded: usize,
}

/// The waits of one shard's tasks, by table key.
pub(crate) struct WaitBoard {
    segments: [AtomicPtr<WaitSlot>; SEGMENTS],
}

impl Default for WaitBoard {
    fn default() -> WaitBoard {
        WaitBoard {
            segments: [const { AtomicPtr::new(std::ptr::null_mut()) }; SEGMENTS],
        }
    }
}

impl std::fmt::Debug for WaitBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let made = self
            .segments
            .iter()
            .filter(|s| !s.load(Ordering::Relaxed).is_null())
            .count();
        f.debug_struct("WaitBoard")
            .field("segments", &made)
            .finish()
    }
}

/// The segment of `key` and its index there.
fn locate(key: usize) -> (usize, usize) {
    let n = key + FIRST;
    let segment = (usize::BITS - 1 - n.leading_zeros()) as usize - FIRST.trailing_zeros() as usize;
    (segment, n - (FIRST << segment))
}

fn segment_layout(segment: usize) -> Layout {
    Layout::array::<WaitSlot>(FIRST << segment).expect("a wait segment's size fits a usize")
}

/// Segments up to this index (1 MiB, 16 384 slots) are kept when a board
/// is dropped, `SPARES_EACH` of each size at most.
const SPARE_SEGMENTS: usize = 11;
const SPARES_EACH: usize = 4;

/// The segments let go by dropped boards, by index, for the next boards
/// (module invariants). A lock taken only when a segment is made or let
/// go.
static SPARES: [std::sync::Mutex<Vec<SpareSegment>>; SPARE_SEGMENTS] =
    [const { std::sync::Mutex::new(Vec::new()) }; SPARE_SEGMENTS];

/// A segment no board holds.
struct SpareSegment(*mut WaitSlot);

// SAFETY: a spare segment is plain memory of atomics that nothing points
// into; whoever takes it owns it.
unsafe impl Send for SpareSegment {}

/// A spare segment of index `segment`, if one is kept.
fn take_spare(segment: usize) -> Option<*mut WaitSlot> {
    let spares = SPARES.get(segment)?;
    let mut spares = spares.lock().unwrap_or_else(|e| e.into_inner());
    spares.pop().map(|s| s.0)
}

/// Keep `base`, a segment of index `segment` that no board holds, or free
/// it.
fn let_go(segment: usize, base: *mut WaitSlot) {
    if let Some(spares) = SPARES.get(segment) {
        let mut spares = spares.lock().unwrap_or_else(|e| e.into_inner());
        if spares.len() < SPARES_EACH {
            spares.push(SpareSegment(base));
            return;
        }
    }
    // SAFETY: allocated by `install` with this segment's layout, and held
    // by no board.
    unsafe { std::alloc::dealloc(base.cast(), segment_layout(segment)) };
}

impl WaitBoard {
    /// The slot of `key`, its segment allocated if this is the first time.
    fn slot(&self, key: usize) -> &WaitSlot {
        let (segment, index) = locate(key);
        let cell = &self.segments[segment];
        // Acquire pairs with the install's release: the zeroed memory is
        // seen before the pointer.
        let mut base = cell.load(Ordering::Acquire);
        if base.is_null() {
            base = self.install(segment);
        }
        // SAFETY: `base` is a live segment of `FIRST << segment` slots
        // (module invariants), and `index` is below that.
        unsafe { &*base.add(index) }
    }

    #[cold]
    fn install(&self, segment: usize) -> *mut WaitSlot {
        let new = take_spare(segment).unwrap_or_else(|| {
            let layout = segment_layout(segment);
            // SAFETY: the layout is not zero-sized; zeroed atomics are
            // valid.
            let new = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<WaitSlot>();
            if new.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            new
        });
        match self.segments[segment].compare_exchange(
            std::ptr::null_mut(),
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => new,
            Err(theirs) => {
                // `new` was never published.
                let_go(segment, new);
                theirs
            }
        }
    }

    /// Record `wait` for the task `id` registered at `key`, in its poll
    /// `poll` (its header's count), at coarse time `now`. The first record
    /// of a poll replaces the last poll's; one that goes on from it (the
    /// same wait) keeps its `since`.
    pub(crate) fn record(
        &self,
        key: usize,
        id: u64,
        poll: u32,
        wait: Wait,
        now: impl FnOnce() -> u32,
        scratch: &RefCell<WaitScratch>,
    ) {
        let slot = self.slot(key);
        let mut scratch = scratch.borrow_mut();
        // Relaxed: this thread is the slot's one writer (module invariants),
        // and these are its own last stores or those of a writer before it
        // that the task's hand-off ordered.
        let task = slot.task.load(Ordering::Relaxed);
        let same_task = task & ID_MASK == id;
        let head = wait.head();
        let count = if same_task && slot.poll.load(Ordering::Relaxed) == poll {
            if scratch.owner != (id, poll) {
                scratch.owner = (id, poll);
                scratch.len = 0;
            }
            let count = (task >> ID_BITS) as usize;
            // A future polled twice in one poll (a loop around a `select`)
            // is one wait.
            let again = slot.records[..count.min(RECORDS)].iter().any(|r| {
                r[0].load(Ordering::Relaxed) & u64::from(u32::MAX) == head
                    && r[1].load(Ordering::Relaxed) == wait.a
            });
            if again {
                return;
            }
            count
        } else {
            // A new poll: keep what the last one recorded, for `since`.
            scratch.owner = (id, poll);
            scratch.len = 0;
            if same_task {
                let last = ((task >> ID_BITS) as usize).min(RECORDS);
                for (r, old) in slot.records[..last].iter().zip(&mut scratch.old) {
                    let head = r[0].load(Ordering::Relaxed);
                    let a = r[1].load(Ordering::Relaxed);
                    *old = (head & u64::from(u32::MAX), a, (head >> 32) as u32);
                }
                scratch.len = last;
            }
            0
        };
        let since = scratch.old[..scratch.len]
            .iter()
            .find(|o| (o.0, o.1) == (head, wait.a))
            .map_or_else(now, |o| o.2);
        let seq = slot.seq.load(Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        // Release: a reader that sees any store below also sees `seq` odd
        // (it reads `seq` again after an acquire fence).
        fence(Ordering::Release);
        if count == 0 {
            slot.poll.store(poll, Ordering::Relaxed);
        }
        if let Some(r) = slot.records.get(count) {
            r[0].store(head | u64::from(since) << 32, Ordering::Relaxed);
            r[1].store(wait.a, Ordering::Relaxed);
        }
        let recorded = (count as u64 + 1).min(u64::MAX >> ID_BITS);
        slot.task.store(id | recorded << ID_BITS, Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// The waits recorded for task `id` at `key` in its poll `poll`, if
    /// that poll recorded any and they could be read whole (a task being
    /// polled meanwhile gives none: it is not idle).
    pub(crate) fn read(&self, key: usize, id: u64, poll: u32) -> Option<WaitCopy> {
        let (segment, index) = locate(key);
        let base = self.segments[segment].load(Ordering::Acquire);
        if base.is_null() {
            return None;
        }
        // SAFETY: as in `slot`.
        let slot = unsafe { &*base.add(index) };
        for _ in 0..8 {
            let before = slot.seq.load(Ordering::Acquire);
            if before & 1 != 0 {
                std::hint::spin_loop();
                continue;
            }
            let task = slot.task.load(Ordering::Relaxed);
            let their_poll = slot.poll.load(Ordering::Relaxed);
            let recorded = (task >> ID_BITS) as usize;
            let mut words = [[0u64; 2]; RECORDS];
            for (w, r) in words
                .iter_mut()
                .zip(&slot.records)
                .take(recorded.min(RECORDS))
            {
                *w = [r[0].load(Ordering::Relaxed), r[1].load(Ordering::Relaxed)];
            }
            // Acquire: the loads above are ordered before this reading of
            // `seq`; equal to `before`, no write overlapped them.
            fence(Ordering::Acquire);
            if slot.seq.load(Ordering::Relaxed) != before {
                continue;
            }
            if task & ID_MASK != id || their_poll != poll || recorded == 0 {
                return None;
            }
            let waits = words
                .iter()
                .take(recorded.min(RECORDS))
                .filter_map(|w| Wait::from_words(w[0], w[1]))
                .collect();
            return Some(WaitCopy { waits, recorded });
        }
        None
    }
}

impl Drop for WaitBoard {
    fn drop(&mut self) {
        for (segment, cell) in self.segments.iter_mut().enumerate() {
            let base = *cell.get_mut();
            if !base.is_null() {
                // Nobody reads or writes the board any more (`&mut self`).
                let_go(segment, base);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::task::waits::WaitKind;

    fn sleep(deadline: u64) -> Wait {
        Wait::new(WaitKind::Sleep, 3, deadline)
    }

    #[test]
    fn keys_map_onto_segments_without_gaps_or_overlaps() {
        let mut expected = (0, 0);
        for key in 0..100_000 {
            assert_eq!(locate(key), expected, "key {key}");
            expected.1 += 1;
            if expected.1 == FIRST << expected.0 {
                expected = (expected.0 + 1, 0);
            }
        }
        assert!(locate((1 << 32) - 1).0 < SEGMENTS);
    }

    #[test]
    fn a_poll_replaces_the_last_polls_waits_and_a_wait_that_goes_on_keeps_its_since() {
        let board = WaitBoard::default();
        let scratch = RefCell::default();
        assert!(board.read(5, 7, 1).is_none(), "nothing recorded yet");
        board.record(5, 7, 1, sleep(100), || 10, &scratch);
        board.record(5, 7, 1, sleep(200), || 10, &scratch);
        let copy = board.read(5, 7, 1).unwrap();
        assert_eq!(copy.recorded, 2);
        assert_eq!(copy.waits, [(sleep(100), 10), (sleep(200), 10)]);
        assert!(
            board.read(5, 7, 2).is_none(),
            "a later poll recorded nothing"
        );
        assert!(board.read(5, 8, 1).is_none(), "another task at the key");

        // The next poll: one wait goes on (its since kept), one is new.
        board.record(5, 7, 2, sleep(200), || 30, &scratch);
        board.record(5, 7, 2, sleep(300), || 30, &scratch);
        let copy = board.read(5, 7, 2).unwrap();
        assert_eq!(copy.waits, [(sleep(200), 10), (sleep(300), 30)]);

        // Past RECORDS, waits are counted only.
        for d in 0..6 {
            board.record(5, 7, 3, sleep(d), || 40, &scratch);
        }
        let copy = board.read(5, 7, 3).unwrap();
        assert_eq!((copy.waits.len(), copy.recorded), (RECORDS, 6));

        // A new task at the same key starts afresh.
        board.record(5, 9, 1, sleep(200), || 50, &scratch);
        assert_eq!(board.read(5, 9, 1).unwrap().waits, [(sleep(200), 50)]);
    }

    #[test]
    fn a_reader_racing_a_writer_sees_whole_polls_only() {
        let board = std::sync::Arc::new(WaitBoard::default());
        let writer = {
            let board = std::sync::Arc::clone(&board);
            std::thread::spawn(move || {
                let scratch = RefCell::default();
                for poll in 1..20_000u32 {
                    // Every poll records two waits whose numbers agree.
                    board.record(0, 1, poll, sleep(u64::from(poll)), || poll, &scratch);
                    board.record(0, 1, poll, sleep(u64::from(poll) << 20), || poll, &scratch);
                }
            })
        };
        let mut seen = 0;
        while !writer.is_finished() {
            for poll in 1..20_000u32 {
                if let Some(copy) = board.read(0, 1, poll) {
                    seen += 1;
                    for (w, _) in &copy.waits {
                        let p = u64::from(poll);
                        assert!(w.a == p || w.a == p << 20, "{w:?} in poll {poll}");
                    }
                }
            }
        }
        writer.join().unwrap();
        assert!(board.read(0, 1, 19_999).is_some());
        let _ = seen;
    }
}
