//! Spawn sites: where a task was spawned and which waker vtable its wakers
//! have, kept as a 14-bit index into one process-wide table, so that a
//! task's header holds its id, its kind and its site in one 8-byte field
//! (`TaskHeader`'s `site`), and the table of live tasks keeps a task's
//! waker in one word, its task pointer, finding the vtable here
//! (`waker.rs`).
//!
//! A site is a pair: the caller's `&'static Location` and the
//! `&'static RawWakerVTable` of async-task's wakers for the task's type.
//! Both are fixed for one `spawn` call in the source and one type of
//! future, so a program has as many sites as it has spawn calls times the
//! future types each spawns.
//!
//! # Invariants
//!
//! * The table is open-addressed, keyed by the pair's two addresses; a
//!   position holds a pointer to a `Site` allocated once and never freed,
//!   and a stored pointer is never moved or removed. So an index, once
//!   handed out, names the same pair for the life of the process.
//! * Inserting is one compare-exchange of an empty position; looking up is
//!   loads only. A spawn from a known site reads a few shared, read-mostly
//!   cache lines and writes none.
//! * A program with more than `MAX_SITES` distinct sites gets `OVERFLOW` for
//!   the sites beyond: their tasks report `full_table`'s own location, which
//!   says so, and the table keeps their wakers whole (boxed, `waker.rs`):
//!   an overflow costs bytes, never a wrong waker.

use std::panic::Location;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::task::RawWakerVTable;

/// Positions in the table: a power of two, so that a hash is masked; with
/// `OVERFLOW`, an index takes 14 bits (`TaskHeader`'s `site`).
const SLOTS: usize = 1 << 13;
/// Sites stored at most: the table is kept at most three quarters full, so a
/// probe stays short.
const MAX_SITES: usize = SLOTS / 4 * 3;
/// The index of every site past `MAX_SITES` (outside the table's positions).
pub(crate) const OVERFLOW: u16 = SLOTS as u16;
/// The bits of a 16-bit word that hold a site index (a task header keeps its
/// kind in the other two).
pub(crate) const INDEX_MASK: u16 = (1 << 14) - 1;

/// A spawn call and the vtable of its tasks' wakers.
struct Site {
    location: &'static Location<'static>,
    vtable: &'static RawWakerVTable,
}

/// The table: a null pointer is an empty position.
static TABLE: [AtomicPtr<Site>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
/// Sites stored so far (a `Relaxed` count: it only bounds the load).
static STORED: AtomicUsize = AtomicUsize::new(0);

/// The index of the site (`location`, `vtable`), stored in the table the
/// first time it is seen.
#[inline]
pub(crate) fn index_of(
    location: &'static Location<'static>,
    vtable: &'static RawWakerVTable,
) -> u16 {
    let key = (location as *const Location<'static> as usize)
        ^ (vtable as *const RawWakerVTable as usize).rotate_left(29);
    // Fibonacci hashing of the addresses (their low bits are alignment).
    let mut i = ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 51) as usize;
    loop {
        // Acquire pairs with the insert's Release: the `Site` a stored
        // pointer names is initialized before it is published.
        let found = TABLE[i].load(Ordering::Acquire);
        // SAFETY: a non-null pointer in the table is a `Site` that is never
        // freed (module invariants).
        match unsafe { found.as_ref() } {
            Some(site) if is(site, location, vtable) => return i as u16,
            Some(_) => i = (i + 1) & (SLOTS - 1),
            None => return insert_at(i, location, vtable),
        }
    }
}

fn is(site: &Site, location: &'static Location<'static>, vtable: &'static RawWakerVTable) -> bool {
    std::ptr::eq(site.location, location) && std::ptr::eq(site.vtable, vtable)
}

/// Store the site at the empty position `i`, or at the next empty one, or
/// find that another thread stored it first.
#[cold]
fn insert_at(
    mut i: usize,
    location: &'static Location<'static>,
    vtable: &'static RawWakerVTable,
) -> u16 {
    if STORED.load(Ordering::Relaxed) >= MAX_SITES {
        return OVERFLOW;
    }
    let new = Box::into_raw(Box::new(Site { location, vtable }));
    loop {
        match TABLE[i].compare_exchange(
            std::ptr::null_mut(),
            new,
            Ordering::Release,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                STORED.fetch_add(1, Ordering::Relaxed);
                return i as u16;
            }
            Err(found) => {
                // SAFETY: as in `index_of`: a stored `Site` is never freed.
                if is(unsafe { &*found }, location, vtable) {
                    // SAFETY: `new` was never published: this is its only
                    // owner.
                    drop(unsafe { Box::from_raw(new) });
                    return i as u16;
                }
                i = (i + 1) & (SLOTS - 1);
            }
        }
    }
}

/// The site at `index` (from `index_of`), or `None` for `OVERFLOW`.
#[inline]
fn site(index: u16) -> Option<&'static Site> {
    let found = TABLE.get(usize::from(index))?.load(Ordering::Acquire);
    // SAFETY: `index_of` only returns positions where it stored (or found)
    // a `Site`, which is never freed or changed.
    unsafe { found.as_ref() }
}

/// The spawn location of the site at `index`.
pub(crate) fn location(index: u16) -> &'static Location<'static> {
    site(index).map_or_else(full_table, |s| s.location)
}

/// The waker vtable of the site at `index`; `None` for `OVERFLOW`.
#[inline]
pub(crate) fn vtable(index: u16) -> Option<&'static RawWakerVTable> {
    site(index).map(|s| s.vtable)
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
    use std::task::RawWaker;

    #[track_caller]
    fn here() -> &'static Location<'static> {
        Location::caller()
    }

    fn noop_raw(_: *const ()) -> RawWaker {
        RawWaker::new(std::ptr::null(), &VTABLE_A)
    }
    fn noop(_: *const ()) {}
    static VTABLE_A: RawWakerVTable = RawWakerVTable::new(noop_raw, noop, noop, noop);
    static VTABLE_B: RawWakerVTable = RawWakerVTable::new(noop_raw, noop, noop, noop);

    #[test]
    fn a_site_keeps_its_index_and_names_its_location_and_vtable() {
        let (a, b) = (here(), here());
        let (ia, ib) = (index_of(a, &VTABLE_A), index_of(b, &VTABLE_A));
        let ia_b = index_of(a, &VTABLE_B);
        assert_ne!(ia, ib);
        assert_ne!(ia, ia_b, "one location, two vtables: two sites");
        assert_eq!(index_of(a, &VTABLE_A), ia, "a site keeps its index");
        assert!(std::ptr::eq(location(ia), a));
        assert!(std::ptr::eq(location(ia_b), a));
        assert!(std::ptr::eq(location(ib), b));
        assert!(std::ptr::eq(vtable(ia).unwrap(), &VTABLE_A));
        assert!(std::ptr::eq(vtable(ia_b).unwrap(), &VTABLE_B));
        assert_eq!(location(OVERFLOW).file(), file!());
        assert!(vtable(OVERFLOW).is_none());
    }
}
