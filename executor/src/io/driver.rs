//! `Driver`: one pool's reactor (an epoll instance, through `mio`) and its
//! timer store, driven by the pool's own workers.
//!
//! Nothing here runs on a thread of its own. A worker *holds* the driver
//! (`try_acquire` .. `release`) to poll it: a busy worker without blocking
//! every `DRIVER_INTERVAL` searches (`scheduler/worker/search.rs`, through
//! [`IoDriver`]), and the sleeper that blocks in it (`sleep/mod.rs`,
//! through [`Park`]) until an I/O event, the next timer deadline or
//! `unpark`. The scheduler (`scheduler/`, a floor below) names this type through its
//! driver binding (`scheduler/io_driver.rs`), implemented here. Readiness goes to the sources'
//! [`ScheduledIo`]; the wakers it satisfies are handed back to the polling
//! worker, which schedules their tasks on its own deque.
//!
//! # Invariants
//!
//! * At most one thread holds the driver; only the holder touches `core`.
//! * A token is a slot index plus that slot's generation: an event for a
//!   source deregistered meanwhile (from another thread, while the holder
//!   held the events) finds a newer generation, or nothing, and is dropped.
//! * Once shut down (the pool dropped, or the OS poll failed) the driver is
//!   never held again; every registered source and every timer has been
//!   woken with the shutdown, and new registrations are refused.

use super::io_grace::{IoGrace, Polled};
#[cfg(target_os = "linux")]
use super::ring_slots::RingSlots;
use super::scheduled_io::{ScheduledIo, READABLE, READ_CLOSED, WRITABLE, WRITE_CLOSED};
#[cfg(target_os = "linux")]
use super::uring::Ring;
use crate::scheduler::io_driver::DriverBinding;
use crate::scheduler::io_driver::DriverBound;
use crate::scheduler::io_driver::IoDriver;
use crate::seeded::pool_seed::no_real_io;
use crate::sleep::park::Park;
use crate::time::pool_clock::PoolClock;
use crate::time::timers::Timers;
use mio::event::Source;
use mio::{Events, Interest, Poll, Token};
use parking_lot::Mutex;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};

/// Events taken from the OS in one poll.
const EVENTS_CAPACITY: usize = 1024;

/// The token of the driver's own waker (the eventfd behind `unpark`).
const WAKE_TOKEN: Token = Token(usize::MAX);

/// Bits of a token that index the slot; the rest is its generation.
const INDEX_BITS: u32 = 24;
const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;

/// What only the holder touches.
#[derive(Debug)]
struct Core {
    poll: Poll,
    events: Events,
}

#[derive(Debug, Default)]
struct SourceSlot {
    generation: usize,
    io: Option<Arc<ScheduledIo>>,
}

/// The registered sources, by slot.
#[derive(Debug, Default)]
struct Sources {
    slots: Vec<SourceSlot>,
    free: Vec<usize>,
}

/// A pool's I/O driver and timer store.
#[derive(Debug)]
pub(crate) struct Driver {
    /// The epoll instance's descriptor (owned by `core.poll`): a guest
    /// runtime watches it for a sleeper that holds the driver; the ring of
    /// `pool::fs` is armed in it.
    #[cfg_attr(
        not(any(feature = "tokio-compat", target_os = "linux")),
        allow(dead_code)
    )]
    epoll_fd: std::os::fd::RawFd,
    /// True while a thread holds the driver.
    held: AtomicBool,
    core: Mutex<Core>,
    mio_registry: mio::Registry,
    waker: mio::Waker,
    sources: Mutex<Sources>,
    /// Registered sources, a hint for the busy workers' polls.
    num_sources: AtomicUsize,
    timers: Timers,
    /// The pool's time, which the timers' deadlines are in (`time/pool_clock.rs`).
    clock: PoolClock,
    /// I/O since the clock last jumped (noted only while it is paused;
    /// `did_io`), for a paused park's grace (`io_grace.rs`).
    io_grace: IoGrace,
    shut_down: AtomicBool,
    /// The io_urings of `pool::fs` (`ring_slots.rs`).
    #[cfg(target_os = "linux")]
    rings: RingSlots,
    /// Readiness events delivered to sources (`Metrics::io_events`);
    /// written only by the holder.
    delivered: AtomicU64,
    /// Accepts that failed at `EMFILE`/`ENFILE` on the pool's listeners
    /// (`Metrics::accept_errors`, `net/spare_fd.rs`).
    accept_errors: AtomicU64,
    /// A seeded pool's seed: it registers no source and keeps its clock
    /// paused (`seeded/`).
    seed: Option<u64>,
}

/// The scheduler's pools are driven by this driver.
impl DriverBinding for DriverBound {
    type Driver = Driver;
}

impl IoDriver for Driver {
    fn new(start_paused: bool, workers: usize, seed: Option<u64>) -> io::Result<Driver> {
        let poll = Poll::new()?;
        let mio_registry = poll.registry().try_clone()?;
        let waker = mio::Waker::new(poll.registry(), WAKE_TOKEN)?;
        Ok(Driver {
            epoll_fd: std::os::fd::AsRawFd::as_raw_fd(&poll),
            held: AtomicBool::new(false),
            core: Mutex::new(Core {
                poll,
                events: Events::with_capacity(EVENTS_CAPACITY),
            }),
            mio_registry,
            waker,
            sources: Mutex::new(Sources::default()),
            num_sources: AtomicUsize::new(0),
            timers: Timers::new(workers, Instant::now()),
            clock: PoolClock::new(start_paused),
            io_grace: IoGrace::default(),
            shut_down: AtomicBool::new(false),
            #[cfg(target_os = "linux")]
            rings: RingSlots::new(),
            delivered: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
            seed,
        })
    }

    #[inline]
    fn has_interest(&self) -> bool {
        // Relaxed: a hint; see `Timers::is_empty`.
        self.num_sources.load(Ordering::Relaxed) != 0
            || !self.timers.is_empty()
            || self.ring_in_flight() != 0
    }

    fn poll_now(&self, wakers: &mut Vec<Waker>) {
        self.poll(None, wakers);
    }

    fn io_events(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    fn accept_errors(&self) -> u64 {
        self.accept_errors.load(Ordering::Relaxed)
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn clock(&self) -> &PoolClock {
        &self.clock
    }

    fn timers(&self) -> &Timers {
        &self.timers
    }

    #[inline]
    fn timer_shard(&self) -> usize {
        self.timers
            .shard_of(crate::context::current::worker_index_of(self))
    }

    fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    fn ring_ops(&self) -> Option<u64> {
        #[cfg(target_os = "linux")]
        return self
            .rings
            .made()
            .map(|r| r.completed() as u64)
            .reduce(|a, b| a + b);
        #[cfg(not(target_os = "linux"))]
        None
    }

    fn epoll_fd(&self) -> std::os::fd::RawFd {
        self.epoll_fd
    }

    fn park_deadline(
        &self,
        is_quiet: &dyn Fn() -> bool,
        wakers: &mut Vec<Waker>,
    ) -> Option<Instant> {
        match self.wait(is_quiet, wakers) {
            None => Some(Instant::now()),
            Some(wait) => wait.map(|wait| Instant::now() + wait),
        }
    }

    fn unparked(&self) {
        self.timers.unparked();
    }

    fn jump_to_next_timer(&self, wakers: &mut Vec<Waker>) -> bool {
        let jumped = self.timers.jump_if_quiet(&self.clock, &|| true, wakers);
        if !jumped {
            self.timers.unparked();
        }
        jumped
    }

    fn worker_idle(&self, worker: usize) {
        if self.timers.leave(worker) {
            self.unpark();
        }
    }

    #[inline]
    fn worker_awake(&self, worker: usize) {
        self.timers.attend(worker);
    }

    #[inline]
    fn fire_own_timers(&self, worker: usize, wakers: &mut Vec<Waker>) {
        self.timers.fire_own(worker, || self.clock.now(), wakers);
    }

    /// Shut the driver down: wake every registered source (its waits now
    /// fail) and every timer (it completes), and refuse new ones.
    fn shut_down(&self, wakers: &mut Vec<Waker>) {
        self.shut_down.store(true, Ordering::Release);
        {
            let sources = self.sources.lock();
            for io in sources.slots.iter().filter_map(|s| s.io.as_ref()) {
                io.shut_down(wakers);
            }
        }
        self.timers.shut_down(wakers);
    }
}

impl Driver {
    /// Acquisitions of a timer shard's lock by another thread than the
    /// shard's (`Timers::foreign_locks`).
    #[cfg(test)]
    pub(crate) fn timer_foreign_locks(&self) -> u64 {
        self.timers.foreign_locks()
    }

    /// The io_uring of worker `worker` (or, for `None`, of the threads
    /// that are not workers), made on the first call (`RingSlots::ring`).
    #[cfg(target_os = "linux")]
    pub(crate) fn ring(&self, worker: Option<usize>) -> Option<&Arc<Ring>> {
        self.rings.ring(self.epoll_fd, worker)
    }

    /// Does the kernel give this pool rings (`RingSlots::rings_work`)?
    #[cfg(target_os = "linux")]
    pub(crate) fn rings_work(&self, worker: Option<usize>) -> bool {
        self.rings.rings_work(self.epoll_fd, worker)
    }

    /// Operations in flight on the rings: while any is, the busy workers
    /// poll the driver for their completions.
    #[inline]
    fn ring_in_flight(&self) -> usize {
        #[cfg(target_os = "linux")]
        return self.rings.in_flight();
        #[cfg(not(target_os = "linux"))]
        0
    }

    /// Register `source` for read and write readiness, edge-triggered.
    pub(crate) fn register(
        &self,
        source: &mut impl Source,
    ) -> io::Result<(Token, Arc<ScheduledIo>)> {
        if self.is_shut_down() {
            return Err(shut_down_error());
        }
        if let Some(seed) = self.seed {
            return Err(no_real_io(
                seed,
                "a socket, pipe, signal, child process or io::Async",
            ));
        }
        let io = Arc::new(ScheduledIo::new());
        let token = {
            let mut sources = self.sources.lock();
            let index = match sources.free.pop() {
                Some(index) => index,
                None => {
                    if sources.slots.len() > INDEX_MASK {
                        return Err(io::Error::other(
                            "pool: more than 16 million sockets registered with one pool",
                        ));
                    }
                    sources.slots.push(SourceSlot::default());
                    sources.slots.len() - 1
                }
            };
            let slot = &mut sources.slots[index];
            slot.io = Some(Arc::clone(&io));
            Token(slot.generation << INDEX_BITS | index)
        };
        if let Err(e) =
            self.mio_registry
                .register(source, token, Interest::READABLE | Interest::WRITABLE)
        {
            self.release_slot(token);
            return Err(e);
        }
        self.num_sources.fetch_add(1, Ordering::Relaxed);
        Ok((token, io))
    }

    /// Deregister `source` (registered as `token`). Its pending events, if a
    /// holder has them, are dropped (see the token invariant).
    pub(crate) fn deregister(&self, token: Token, source: &mut impl Source) {
        // The only error is "not registered", after a failed register or a
        // closed epoll fd: either way the source is gone from the OS's set.
        let _ = self.mio_registry.deregister(source);
        self.release_slot(token);
        self.num_sources.fetch_sub(1, Ordering::Relaxed);
    }

    fn release_slot(&self, token: Token) {
        let index = token.0 & INDEX_MASK;
        let mut sources = self.sources.lock();
        let slot = &mut sources.slots[index];
        slot.io = None;
        // The next source in this slot gets new tokens; the generation wraps
        // within the token's upper bits, and never makes `WAKE_TOKEN`.
        slot.generation = (slot.generation + 1) & (usize::MAX >> (INDEX_BITS + 1));
        sources.free.push(index);
    }

    /// The holder: poll the OS, blocking until an event, the next timer
    /// deadline or `unpark` when `block` (the sleeper's quiet check, see
    /// `Park::park`), else not at all. The wakers of what became ready (I/O
    /// and due timers) go into `wakers`.
    ///
    /// With the clock paused, a blocking poll first polls without blocking;
    /// if that brings nothing and the pool is quiet, the clock jumps to the
    /// earliest timer, which fires instead of the wait (`paused_park`).
    fn poll(&self, block: Option<&dyn Fn() -> bool>, wakers: &mut Vec<Waker>) {
        match block {
            None => {
                // An unpark this takes had nobody to wake: while we hold the
                // driver, no sleeper blocks in it.
                let _ = self.poll_os(Some(Duration::ZERO), false, wakers);
            }
            Some(is_quiet) => {
                if let Some(wait) = self.wait(is_quiet, wakers) {
                    // The last poll of this park: it returns either way.
                    let _ = self.poll_os(wait, true, wakers);
                }
            }
        }
    }

    /// The holder, about to block: how long it may (`Some(None)`: until an
    /// unpark), recorded for the timer store; or `None` if a paused clock's
    /// `paused_park` brought work (its wakers are in `wakers`) or took an
    /// unpark: no wait.
    fn wait(
        &self,
        is_quiet: &dyn Fn() -> bool,
        wakers: &mut Vec<Waker>,
    ) -> Option<Option<Duration>> {
        if self.clock.is_paused() {
            return (!self.paused_park(is_quiet, wakers)).then_some(None);
        }
        // Paused meanwhile: `real_wait` is `None`, and the pause unparks us.
        Some(
            self.timers
                .park_until()
                .and_then(|deadline| self.clock.real_wait(deadline)),
        )
    }

    /// The holder: one poll of the OS, for up to `timeout`; `parked` if
    /// the timer store recorded the wait (`Timers::park_until`). True if
    /// the poll took an `unpark` (the eventfd's edge): it is then spent, so
    /// a caller that would poll again must return instead (`paused_park`).
    #[must_use = "an unpark this poll took is spent: the park must end"]
    fn poll_os(&self, timeout: Option<Duration>, parked: bool, wakers: &mut Vec<Waker>) -> bool {
        debug_assert!(self.held.load(Ordering::Relaxed));
        let mut core = self.core.lock();
        let Core { poll, events } = &mut *core;
        let result = poll.poll(events, timeout);
        if parked {
            self.timers.unparked();
        }
        match result {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                drop(core);
                self.fail(&e, wakers);
                // Shut down: the park ends (and is never taken again).
                return true;
            }
        }
        let mut unparked = false;
        if !events.is_empty() {
            let sources = self.sources.lock();
            let mut delivered = 0;
            for event in events.iter() {
                let token = event.token();
                if token == WAKE_TOKEN {
                    unparked = true;
                    continue;
                }
                #[cfg(target_os = "linux")]
                if RingSlots::is_ring_token(token) {
                    if let Some(ring) = self.rings.of_token(token) {
                        ring.reap_fired(wakers);
                    }
                    continue;
                }
                let Some(slot) = sources.slots.get(token.0 & INDEX_MASK) else {
                    continue;
                };
                let Some(io) = slot
                    .io
                    .as_ref()
                    .filter(|_| slot.generation == token.0 >> INDEX_BITS)
                else {
                    continue;
                };
                let mut ready = 0;
                if event.is_readable() || event.is_error() {
                    ready |= READABLE;
                }
                if event.is_read_closed() {
                    ready |= READ_CLOSED | READABLE;
                }
                if event.is_writable() || event.is_error() {
                    ready |= WRITABLE;
                }
                if event.is_write_closed() {
                    ready |= WRITE_CLOSED | WRITABLE;
                }
                io.set_ready(ready, wakers);
                delivered += 1;
            }
            if delivered > 0 {
                // A statistic written by the holder alone: the next holder
                // acquired `held` after this one released it, so a relaxed
                // load and store lose no count.
                let total = &self.delivered;
                total.store(total.load(Ordering::Relaxed) + delivered, Ordering::Relaxed);
            }
        }
        if !self.timers.is_empty() {
            self.timers
                .fire(self.timer_shard(), self.clock.now(), wakers);
        }
        unparked
    }

    /// The holder, its clock paused, about to block: poll without blocking
    /// (readiness the pool's tasks caused before they slept counts as
    /// activity), then, if that found nothing, jump the clock to the
    /// earliest timer if the pool is quiet (`Timers::jump_if_quiet`). True
    /// if either brought wakers: no wait then. Else the holder blocks with
    /// no timeout, until an unpark: a wake, an earlier timer, the pool
    /// becoming quiet (`pool_quiet`), a resume or an advance.
    ///
    /// If the pool's tasks did I/O since the last jump, the holder first
    /// waits a little for readiness, and an unpark that either poll takes
    /// ends the park there (true, maybe with no wakers): see `io_grace.rs`.
    fn paused_park(&self, is_quiet: &dyn Fn() -> bool, wakers: &mut Vec<Waker>) -> bool {
        if self.poll_os(Some(Duration::ZERO), false, wakers) || !wakers.is_empty() {
            return true;
        }
        self.io_grace.decide(
            is_quiet,
            wakers,
            |grace, wakers| Polled {
                unparked: self.poll_os(Some(grace), false, wakers),
                woke: !wakers.is_empty(),
            },
            |quiet, wakers| self.timers.jump_if_quiet(&self.clock, quiet, wakers),
        )
    }

    /// An accept on one of the pool's listeners failed at `EMFILE` or
    /// `ENFILE`: see `net/spare_fd.rs`. Relaxed: a count, read by the metrics.
    pub(crate) fn count_accept_error(&self) {
        self.accept_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// A task did I/O on this driver's source (an operation completed, or
    /// a source was registered): noted while the clock is paused, for
    /// `paused_park`'s grace.
    #[inline]
    pub(crate) fn did_io(&self) {
        if self.clock.is_paused_hint() {
            self.io_grace.did_io();
        }
    }

    /// The OS poll failed (not interrupted): report it once and shut down,
    /// rather than spin on the error. Sockets then fail, timers complete.
    #[cold]
    fn fail(&self, error: &io::Error, wakers: &mut Vec<Waker>) {
        eprintln!(
            "pool: the I/O driver failed ({error}); this pool's sockets now return errors \
             and its timers complete at once"
        );
        IoDriver::shut_down(self, wakers);
    }
}

/// The driver as the sleep manager (and a busy worker) holds it.
impl Park for Driver {
    /// False also once the driver is shut down.
    #[inline]
    fn try_acquire(&self) -> bool {
        !self.is_shut_down()
            && !self.held.load(Ordering::Relaxed)
            // Acquire: pairs with `release`, so the previous holder's use of
            // `core` happened before ours.
            && self
                .held
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    fn park(&self, wakers: &mut Vec<Waker>, is_quiet: &dyn Fn() -> bool) {
        self.poll(Some(is_quiet), wakers);
    }

    #[inline]
    fn release(&self) {
        self.held.store(false, Ordering::Release);
    }

    fn unpark(&self) {
        // An eventfd write; it fails only if the counter would overflow, and
        // then a wakeup is pending anyway.
        let _ = self.waker.wake();
    }

    fn pool_quiet(&self) {
        // A running clock needs nothing: its sleeper's timeout is real.
        if self.clock.is_paused() {
            self.unpark();
        }
    }
}

/// The error of an operation on a socket whose pool is gone.
pub(crate) fn shut_down_error() -> io::Error {
    io::Error::other(
        "pool: the pool that drives this socket was shut down (or its I/O driver failed)",
    )
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::time::timers::Inserted;

    /// A paused driver that nothing can wake but an unpark: no sources, no
    /// timers, a quiet pool. Its holder parks on a thread of its own; the
    /// unpark comes before the park begins (`None`) or `unpark_after` it.
    fn park_paused_until_unparked(
        what: &'static str,
        did_io: bool,
        unpark_after: Option<Duration>,
    ) {
        let driver = Arc::new(<Driver as IoDriver>::new(true, 1, None).unwrap());
        assert!(driver.try_acquire());
        if did_io {
            driver.did_io();
        }
        if unpark_after.is_none() {
            Park::unpark(&*driver);
        }
        let (done, parked) = std::sync::mpsc::channel();
        {
            let driver = Arc::clone(&driver);
            std::thread::spawn(move || {
                let mut wakers = Vec::new();
                Park::park(&*driver, &mut wakers, &|| true);
                let _ = done.send(wakers.len());
            });
        }
        if let Some(after) = unpark_after {
            std::thread::sleep(after);
            Park::unpark(&*driver);
        }
        // A park that sleeps through the unpark never ends: fail, not hang
        // (its thread is left blocked in `epoll_wait`).
        match parked.recv_timeout(Duration::from_secs(10)) {
            Ok(woken) => assert_eq!(woken, 0, "{what}: nothing was ready"),
            Err(e) => panic!("{what}: the park did not end on the unpark ({e})"),
        }
    }

    #[test]
    fn a_paused_park_ends_on_an_unpark_its_first_poll_takes() {
        // The unpark is made before the holder polls without blocking: that
        // poll takes the eventfd's edge, and the park must end there rather
        // than block with no timeout.
        park_paused_until_unparked("an unpark before the paused park", false, None);
    }

    #[test]
    fn a_paused_park_ends_on_an_unpark_during_its_io_grace() {
        // After I/O the quiet holder waits `IO_GRACE` (5 ms) for readiness;
        // an unpark 2 ms in lands inside that wait (or, on a slow machine,
        // before or after it, which must end the park as well).
        for _ in 0..3 {
            park_paused_until_unparked(
                "an unpark during the paused park's grace",
                true,
                Some(Duration::from_millis(2)),
            );
        }
    }

    #[test]
    fn a_failed_poll_shuts_the_driver_down_instead_of_spinning() {
        let driver = <Driver as IoDriver>::new(false, 1, None).unwrap();
        let mut socket = mio::net::UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let (_token, io) = driver.register(&mut socket).unwrap();
        let deadline = Instant::now() + Duration::from_secs(3600);
        assert!(matches!(
            driver
                .timers
                .insert(0, Instant::now(), deadline, Waker::noop().clone()),
            Inserted::Yes { .. }
        ));
        let mut wakers = Vec::new();
        driver.fail(&io::Error::from_raw_os_error(9), &mut wakers);
        assert_eq!(wakers.len(), 1, "the timer's waker (the socket had none)");
        assert!(
            !driver.try_acquire(),
            "a failed driver is never polled again"
        );
        let waker = Waker::noop();
        let polled = io.poll_ready(
            &mut std::task::Context::from_waker(waker),
            crate::io::scheduled_io::Direction::Read,
        );
        assert!(matches!(polled, std::task::Poll::Ready(Err(_))));
        assert!(driver.register(&mut socket).is_err());
        assert!(matches!(
            driver
                .timers
                .insert(0, Instant::now(), deadline, Waker::noop().clone()),
            Inserted::ShutDown
        ));
    }
}
