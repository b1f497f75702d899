//! Spawn sites: a task's `&'static Location` kept as a 14-bit index into one
//! process-wide table, so that a task's header holds its id and its spawn
//! site (and its kind) in one 8-byte field (`TaskHeader::ident`).
//!
//! # Invariants
//!
//! * The table is open-addressed, keyed by the location's address: a site's
//!   index is the table position where its pointer was stored, and a stored
//!   pointer is never moved or removed. So an index, once handed out, names
//!   the same location for the life of the process.
//! * Inserting is one compare-exchange of an empty position; looking up is
//!   loads only. A spawn from a known site reads a few shared, read-mostly
//!   cache lines and writes none.
//! * A program with more than `MAX_SITES` distinct spawn sites (a spawn call
//!   in its source, `#[track_caller]` passing through generic code) gets
//!   `OVERFLOW` for the sites beyond: their tasks report `full_table`'s own
//!   location, which says so. No real program comes near: it is the number
//!   of `spawn` calls written in its source.

use std::panic::Location;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// Positions in the table: a power of two, so that a hash is masked; with
/// `OVERFLOW`, an index takes 14 bits (`TaskHeader::ident`).
const SLOTS: usize = 1 << 13;
/// Sites stored at most: the table is kept at most three quarters full, so a
/// probe stays short.
const MAX_SITES: usize = SLOTS / 4 * 3;
/// The index of every site past `MAX_SITES` (outside the table's positions).
const OVERFLOW: u16 = SLOTS as u16;

/// The table: a null pointer is an empty position.
static TABLE: [AtomicPtr<Location<'static>>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
/// Sites stored so far (a `Relaxed` count: it only bounds the load).
static STORED: AtomicUsize = AtomicUsize::new(0);

/// The index of `site`, stored in the table the first time it is seen.
#[inline]
pub(crate) fn index_of(site: &'static Location<'static>) -> u16 {
    let wanted = site as *const Location<'static> as *mut Location<'static>;
    // Fibonacci hashing of the address (its low bits are alignment).
    let mut i = ((wanted as usize as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 51) as usize;
    loop {
        // Acquire pairs with the insert's Release: the location a stored
        // pointer names is `'static` data anyway; the pairing only makes
        // the pointer itself visible as written.
        let found = TABLE[i].load(Ordering::Acquire);
        if found == wanted {
            return i as u16;
        }
        if found.is_null() {
            return insert_at(i, wanted);
        }
        i = (i + 1) & (SLOTS - 1);
    }
}

/// Store `wanted` at the empty position `i`, or at the next empty one, or
/// find that another thread stored it first.
#[cold]
fn insert_at(mut i: usize, wanted: *mut Location<'static>) -> u16 {
    if STORED.load(Ordering::Relaxed) >= MAX_SITES {
        return OVERFLOW;
    }
    loop {
        match TABLE[i].compare_exchange(
            std::ptr::null_mut(),
            wanted,
            Ordering::Release,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                STORED.fetch_add(1, Ordering::Relaxed);
                return i as u16;
            }
            Err(found) if found == wanted => return i as u16,
            Err(_) => i = (i + 1) & (SLOTS - 1),
        }
    }
}

/// The location whose index is `index` (from `index_of`).
pub(crate) fn location(index: u16) -> &'static Location<'static> {
    match TABLE.get(usize::from(index)) {
        Some(slot) => {
            let found = slot.load(Ordering::Acquire);
            // SAFETY: `index_of` only returns positions where it stored (or
            // found) a pointer made from a `&'static Location`, and a stored
            // pointer is never changed.
            unsafe { found.as_ref() }.unwrap_or_else(|| full_table())
        }
        None => full_table(),
    }
}

/// The location reported for the tasks of a site beyond `MAX_SITES`.
fn full_table() -> &'static Location<'static> {
    // This line: "the spawn-site table of pool was full when this task was
    // spawned, so its real site is not known".
    Location::caller()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[track_caller]
    fn here() -> &'static Location<'static> {
        Location::caller()
    }

    #[test]
    fn a_site_keeps_its_index_and_names_its_location() {
        let (a, b) = (here(), here());
        let (ia, ib) = (index_of(a), index_of(b));
        assert_ne!(ia, ib);
        assert_eq!(index_of(a), ia, "a site keeps its index");
        assert!(std::ptr::eq(location(ia), a));
        assert!(std::ptr::eq(location(ib), b));
        assert_eq!(location(OVERFLOW).file(), file!());
    }
}
