//! `RingSlots`: the io_urings of `pool::fs` a driver owns (`uring.rs`),
//! one per worker for the first `RING_SLOTS - 1` workers and one shared by
//! every other thread, each made on its first use and put in the driver's
//! epoll set, where its completions come as readiness of its descriptor.
//!
//! # Invariants
//!
//! * A slot's ring is made at most once (`OnceLock`); `None` inside if the
//!   kernel refused one, and then for good.
//! * A ring's token has its top bit set (`ring_token`), which no source's
//!   token has, so the driver tells a ring's event from a source's.

use super::uring::Ring;
use mio::Token;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The io_urings of `pool::fs` (`uring.rs`): one per worker, up to this
/// many less one, and the last shared by every other thread.
const RING_SLOTS: usize = 65;

/// The token of ring `slot`'s descriptor, readable while its completion
/// queue holds entries. Like the driver's own wake token, its top bit is
/// set, which no source slot's token has.
fn ring_token(slot: usize) -> Token {
    Token(usize::MAX - 1 - slot)
}

/// A driver's rings, by slot.
#[derive(Debug)]
pub(crate) struct RingSlots {
    /// Each made on its first use (`ring`): `None` inside if the kernel
    /// refused one.
    rings: Box<[OnceLock<Option<Arc<Ring>>>]>,
    /// Does the kernel give this pool rings? Probed once, by the first
    /// file operation's ring (`rings_work`).
    rings_work: OnceLock<bool>,
    /// Operations in flight on the rings, summed.
    in_flight: Arc<AtomicUsize>,
}

impl RingSlots {
    pub(crate) fn new() -> RingSlots {
        RingSlots {
            rings: (0..RING_SLOTS).map(|_| OnceLock::new()).collect(),
            rings_work: OnceLock::new(),
            in_flight: Arc::default(),
        }
    }

    /// The io_uring of worker `worker` (or, for `None`, of the threads
    /// that are not workers), made and put in the epoll set `epoll_fd` on
    /// the first call; `None` (for this call and every later one) if the
    /// kernel refuses one (`Ring::new`).
    pub(crate) fn ring(&self, epoll_fd: i32, worker: Option<usize>) -> Option<&Arc<Ring>> {
        let slot = worker
            .filter(|&w| w < RING_SLOTS - 1)
            .unwrap_or(RING_SLOTS - 1);
        self.rings[slot]
            .get_or_init(|| {
                let token = ring_token(slot).0 as u64;
                Ring::new(epoll_fd, token, Arc::clone(&self.in_flight))
                    .ok()
                    .map(Arc::new)
            })
            .as_ref()
    }

    /// Does the kernel give this pool rings? The first call makes
    /// `worker`'s ring to find out; the other workers' are made only when
    /// an operation needs them (`ring`).
    pub(crate) fn rings_work(&self, epoll_fd: i32, worker: Option<usize>) -> bool {
        *self
            .rings_work
            .get_or_init(|| self.ring(epoll_fd, worker).is_some())
    }

    /// The rings made so far.
    pub(crate) fn made(&self) -> impl Iterator<Item = &Arc<Ring>> {
        self.rings
            .iter()
            .filter_map(|r| r.get().and_then(Option::as_ref))
    }

    /// The ring whose descriptor has `token`, if it is a ring's and made.
    pub(crate) fn of_token(&self, token: Token) -> Option<&Arc<Ring>> {
        let slot = (usize::MAX - 1)
            .checked_sub(token.0)
            .filter(|&slot| slot < RING_SLOTS)?;
        self.rings[slot].get().and_then(Option::as_ref)
    }

    /// Is `token` a ring's (made or not)?
    pub(crate) fn is_ring_token(token: Token) -> bool {
        (usize::MAX - 1)
            .checked_sub(token.0)
            .is_some_and(|slot| slot < RING_SLOTS)
    }

    /// Operations in flight on the rings: while any is, the busy workers
    /// poll the driver for their completions.
    #[inline]
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}
