//! `Seeded`: what the registry keeps of a seeded pool. A leaf of the
//! scheduler (its runner, which steps the logical workers, is reached
//! through the `Runner` trait, `seeded/`), so that the registry holds it
//! without importing the workers it steps.
//!
//! # Invariants
//!
//! * Task ids come from one block reserved for the pool (`IDS_PER_POOL`):
//!   block 0 for spawns from outside its logical workers, block `i + 1`
//!   for worker `i`, each handed out in spawn order. The schedule hash
//!   takes ids relative to the block's start, so the same schedule hashes
//!   the same in every pool of every process.
//! * The hash is FNV-1a over (worker, task) of every step that ran a task
//!   or a job, in order: which worker polled which task.

use crate::sim::settings::Network;
use crate::task::id::TaskId;
use parking_lot::Mutex;
use std::any::Any;
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Wake, Waker};

/// Task ids a seeded pool reserves: block 0 for spawns from outside its
/// workers, block `i + 1` for logical worker `i`.
const IDS_PER_POOL: u64 = 1 << 32;
const IDS_PER_BLOCK: u64 = IDS_PER_POOL / 64;

/// The most logical workers a seeded pool has (one id block each, and one
/// for outside spawns).
pub(crate) const MAX_SEEDED_WORKERS: usize = 63;

/// Logical workers a seeded pool has unless `worker_threads` says: a fixed
/// number, so that a seed replays on any machine.
pub(crate) const DEFAULT_SEEDED_WORKERS: usize = 4;

/// `POOL_SEED`: replaces the seed of every seeded pool of the process.
pub(crate) const SEED_VAR: &str = "POOL_SEED";

/// FNV-1a's offset basis and prime (64 bits).
const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Marks a fork-join job's step in the hash (jobs have no ids).
const JOB_MARK: u64 = u64::MAX;

/// How a seeded pool ([`Builder::seed`](crate::Builder::seed)) picks the
/// actor of each step (a logical worker's search or run, the `block_on`
/// future, the logical blocking thread) among those that can act:
/// [`Builder::seed_strategy`](crate::Builder::seed_strategy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SeedStrategy {
    /// Uniformly at random (the default): every interleaving of the steps
    /// has a chance, and a short race (a read, a yield, a write) shows in
    /// a few seeds.
    #[default]
    Random,
    /// Probabilistic concurrency testing (PCT; Burckhardt, Kothari,
    /// Musuvathi, Nagarakatte, ASPLOS 2010). The actors get a seeded
    /// priority order and the highest that can act takes every step, but
    /// at `depth - 1` seeded steps among the first `steps` the actor that
    /// just stepped drops below all the others. A bug that shows only
    /// when `depth` steps happen in one order is found with probability at
    /// least `1 / (n * steps^(depth - 1))` per seed (`n` the actors): this
    /// finds a task starved behind another for long, which uniform choice
    /// almost never runs. `steps` should be about the run's length in
    /// steps; `depth` is usually 2 or 3. From step `steps` on the choice
    /// is uniform, as `Random`'s, so that a task spinning on `yield_now`
    /// for another cannot starve it for ever behind its priority.
    Pct {
        /// Ordering constraints of the bugs looked for (at least 1; 1 never
        /// changes the priorities).
        depth: u32,
        /// The steps among which the priority changes fall (at least 1).
        steps: u64,
    },
}

/// What the registry keeps of a seeded pool (`Registry::seeded`).
pub(crate) struct Seeded {
    seed: u64,
    strategy: SeedStrategy,
    /// The first task id of this pool's reserved block.
    ids_base: u64,
    /// The next id of block 0 (spawns from outside the logical workers).
    outside_ids: AtomicU64,
    /// The schedule hash so far. Relaxed: only the driving thread writes
    /// it; a reader elsewhere gets some recent value, all that
    /// `schedule_hash` promises.
    hash: AtomicU64,
    /// What steps the logical workers, installed by `start`.
    runner: OnceLock<Box<dyn Runner>>,
    /// Its simulated network (`Builder::network`), if it has one.
    network: Option<SeededNetwork>,
}

/// The host of a task that was not spawned on one (`Host::spawn`), nor by
/// a task on one: 127.0.1.1.
pub(crate) const DEFAULT_HOST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 1, 1));

/// What a seeded pool with a simulated network keeps of it: its settings,
/// the host each task runs on, and the network itself (`sim/network.rs`),
/// made on first use.
pub(crate) struct SeededNetwork {
    settings: Network,
    /// The host of each live task that is not on `DEFAULT_HOST`, by task
    /// id: a task is on its spawner's host, or the one `Host::spawn` names.
    /// Only the driving thread reads and writes it; a lock because the
    /// registry is shared.
    hosts: Mutex<BTreeMap<u64, IpAddr>>,
    /// The network, type-erased so that this leaf imports nothing of
    /// `sim/` but its settings.
    sim: OnceLock<Arc<dyn Any + Send + Sync>>,
}

impl SeededNetwork {
    pub(crate) fn settings(&self) -> &Network {
        &self.settings
    }

    /// The host task `task` runs on (`None`: a future that is no task, the
    /// `block_on` one, on the default host).
    pub(crate) fn host_of(&self, task: Option<TaskId>) -> IpAddr {
        task.and_then(|t| self.hosts.lock().get(&t.as_u64()).copied())
            .unwrap_or(DEFAULT_HOST)
    }

    /// Task `task` runs on `host` (`Host::spawn`).
    pub(crate) fn set_host(&self, task: TaskId, host: IpAddr) {
        let mut hosts = self.hosts.lock();
        if host == DEFAULT_HOST {
            hosts.remove(&task.as_u64());
        } else {
            hosts.insert(task.as_u64(), host);
        }
    }

    /// The live tasks on `host` (`Host::crash`).
    pub(crate) fn tasks_on(&self, host: IpAddr) -> Vec<u64> {
        let hosts = self.hosts.lock();
        hosts
            .iter()
            .filter(|(_, h)| **h == host)
            .map(|(t, _)| *t)
            .collect()
    }

    /// The network of `sim/`, made by `make` on the first call.
    pub(crate) fn sim(
        &self,
        make: impl FnOnce() -> Arc<dyn Any + Send + Sync>,
    ) -> &Arc<dyn Any + Send + Sync> {
        self.sim.get_or_init(make)
    }
}

/// What steps a seeded pool's logical workers (`seeded/`).
pub(crate) trait Runner: Send + Sync {
    /// Step the pool until `waiter` is done.
    fn run(&self, waiter: &mut dyn Waiter);
    /// The pool's shutdown: the workers leave and let go of the registry.
    fn shut_down(&self);
}

impl Seeded {
    pub(crate) fn new(seed: u64, strategy: SeedStrategy, network: Option<Network>) -> Seeded {
        let ids_base = TaskId::reserve(IDS_PER_POOL);
        Seeded {
            seed,
            strategy,
            ids_base,
            outside_ids: AtomicU64::new(ids_base),
            hash: AtomicU64::new(FNV_BASIS),
            runner: OnceLock::new(),
            network: network.map(|settings| SeededNetwork {
                settings,
                hosts: Mutex::new(BTreeMap::new()),
                sim: OnceLock::new(),
            }),
        }
    }

    /// Its simulated network, if it has one (`Builder::network`).
    #[inline]
    pub(crate) fn network(&self) -> Option<&SeededNetwork> {
        self.network.as_ref()
    }

    /// Task `child` was spawned, by task `parent` if a task spawned it: it
    /// runs on its spawner's host (a pool with a simulated network; one
    /// branch for any other).
    #[inline]
    pub(crate) fn task_spawned(&self, parent: Option<TaskId>, child: TaskId) {
        if let Some(net) = &self.network {
            let host = net.host_of(parent);
            if host != DEFAULT_HOST {
                net.hosts.lock().insert(child.as_u64(), host);
            }
        }
    }

    /// Task `task`'s future was dropped: it is on no host any more.
    #[inline]
    pub(crate) fn task_ended(&self, task: TaskId) {
        if let Some(net) = &self.network {
            net.hosts.lock().remove(&task.as_u64());
        }
    }

    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    pub(crate) fn strategy(&self) -> SeedStrategy {
        self.strategy
    }

    pub(crate) fn schedule_hash(&self) -> u64 {
        self.hash.load(Ordering::Relaxed)
    }

    /// The id block of logical worker `index`: its `ids` cell's start.
    pub(crate) fn worker_ids(&self, index: usize) -> (u64, u64) {
        let start = self.ids_base + (index as u64 + 1) * IDS_PER_BLOCK;
        (start, start + IDS_PER_BLOCK)
    }

    /// An id for a task spawned from outside the logical workers.
    pub(crate) fn outside_id(&self) -> TaskId {
        // Relaxed: a counter; the driving thread's spawns are ordered by
        // its program order, and that is what replays.
        TaskId::from_reserved(self.outside_ids.fetch_add(1, Ordering::Relaxed))
    }

    /// Worker `worker` ran `task` (`None`: a fork-join job).
    pub(crate) fn record(&self, worker: usize, task: Option<TaskId>) {
        let task = task.map_or(JOB_MARK, |id| id.as_u64().wrapping_sub(self.ids_base));
        let mut h = self.hash.load(Ordering::Relaxed);
        for byte in (worker as u64)
            .to_le_bytes()
            .into_iter()
            .chain(task.to_le_bytes())
        {
            h = (h ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
        }
        self.hash.store(h, Ordering::Relaxed);
    }

    /// The runner, once `start` built it.
    pub(crate) fn install(&self, runner: Box<dyn Runner>) {
        assert!(self.runner.set(runner).is_ok(), "a seeded pool starts once");
    }

    fn runner(&self) -> &dyn Runner {
        &**self
            .runner
            .get()
            .expect("a seeded pool's runner is installed by its start")
    }

    pub(crate) fn shut_down(&self) {
        if let Some(runner) = self.runner.get() {
            runner.shut_down();
        }
    }

    /// `block_on` of this seeded pool on a thread that is not one of its
    /// logical workers: run the pool until `future` is ready, polling it
    /// (outside every worker) at the steps it was woken for.
    pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
        let wake = Arc::new(MainWake(AtomicBool::new(true)));
        let waker = Waker::from(Arc::clone(&wake));
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        let mut output = None;
        let mut waiter = BlockOn {
            woken: &wake.0,
            poll: &mut || match crate::scheduler::coop::budgeted(|| future.as_mut().poll(&mut cx)) {
                Poll::Ready(v) => {
                    output = Some(v);
                    true
                }
                Poll::Pending => false,
            },
            ready: false,
        };
        self.runner().run(&mut waiter);
        output.expect("a seeded run returns once its future is ready")
    }

    /// `wait_until` of a logical worker (a `block_on` in one of its tasks,
    /// a `join` or `scope` waiting for stolen work): run the pool until
    /// `done()`, this worker among the others.
    pub(crate) fn wait_until(&self, done: &dyn Fn() -> bool) {
        self.runner().run(&mut Until(done));
    }
}

/// What a run waits for.
pub(crate) trait Waiter {
    fn done(&self) -> bool;
    /// Woken since its last poll (a `block_on`'s future).
    fn woken(&self) -> bool;
    /// Poll it.
    fn poll(&mut self);
}

/// A `block_on`'s future, polled by the run when woken.
struct BlockOn<'a> {
    woken: &'a AtomicBool,
    poll: &'a mut dyn FnMut() -> bool,
    ready: bool,
}

impl Waiter for BlockOn<'_> {
    fn done(&self) -> bool {
        self.ready
    }

    fn woken(&self) -> bool {
        // Relaxed: set and read on this thread (a wake from another thread
        // is not replayed by a seeded pool anyway, and is seen later).
        self.woken.load(Ordering::Relaxed)
    }

    fn poll(&mut self) {
        // Reset before the poll: a wake during it leaves it set.
        self.woken.store(false, Ordering::Relaxed);
        self.ready = (self.poll)();
    }
}

/// A logical worker's `wait_until`: done when its latch is.
struct Until<'a>(&'a dyn Fn() -> bool);

impl Waiter for Until<'_> {
    fn done(&self) -> bool {
        (self.0)()
    }

    fn woken(&self) -> bool {
        false
    }

    fn poll(&mut self) {}
}

/// The waker of a seeded `block_on`'s future: a flag the run reads.
struct MainWake(AtomicBool);

impl Wake for MainWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The error of real I/O in a seeded pool.
pub(crate) fn no_real_io(seed: u64, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "{what}: a seeded pool (seed {seed}) has no real I/O, since the OS would decide \
             when it is ready and no seed could replay that; run this on a pool built \
             without Builder::seed"
        ),
    )
}
