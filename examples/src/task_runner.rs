//! The task runner's workload (`../../shared/seeds/002_fb160c1f20a02885.txt`),
//! reproduced draw for draw so that its outputs can be checked, and three
//! ways to run it: sequentially, on `pool` (one `pool::spawn` per task), and
//! on the seed's own design (plain threads, a crossbeam `Injector` and
//! per-thread deques, idle counting for termination).
//!
//! # The tree
//!
//! Every RNG is `ChaCha20Rng::seed_from_u64(seed)`. A set of tasks is drawn
//! by `generate_set`: `n: usize` in `0..=max_num`, then for each task its kind
//! index (`usize` in `0..3`) and its seed (`u64`), task by task. The roots are
//! `generate_set(seed, starting_height, max_children, 64)`; a task at height
//! `h > 0` with output `o` has the children
//! `generate_set(task.seed ^ o, h - 1, max_children, max_children)`.
//! `usize` draws have `usize` bounds (sampled as `u64` on 64-bit targets);
//! another integer type, or another order of draws, changes the tree.

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use hmac::digest::Digest;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Sha256, Sha512};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// What a task computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// Iterated SHA-256.
    Hash = 0,
    /// PBKDF2-HMAC-SHA512.
    Derive = 1,
    /// Discarded ChaCha20 draws.
    Random = 2,
}

impl TaskKind {
    fn from_index(i: usize) -> TaskKind {
        match i {
            0 => TaskKind::Hash,
            1 => TaskKind::Derive,
            2 => TaskKind::Random,
            _ => unreachable!("kind index is drawn in 0..3"),
        }
    }
}

/// One task of the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub kind: TaskKind,
    pub seed: u64,
    pub height: usize,
    pub max_children: usize,
}

/// Draw a set of at most `max_num` tasks from `seed`.
pub fn generate_set(seed: u64, height: usize, max_children: usize, max_num: usize) -> Vec<Task> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let n: usize = rng.gen_range(0..=max_num);
    (0..n)
        .map(|_| {
            let kind = TaskKind::from_index(rng.gen_range(0usize..3));
            let seed: u64 = rng.gen();
            Task {
                kind,
                seed,
                height,
                max_children,
            }
        })
        .collect()
}

/// The roots of the tree of `seed`.
pub fn roots(seed: u64, starting_height: usize, max_children: usize) -> Vec<Task> {
    generate_set(seed, starting_height, max_children, 64)
}

impl Task {
    /// Run the task: its output, and its children.
    pub fn execute(&self) -> (u64, Vec<Task>) {
        let output = match self.kind {
            TaskKind::Hash => hash(self.seed),
            TaskKind::Derive => derive(self.seed),
            TaskKind::Random => random(self.seed),
        };
        let children = if self.height == 0 {
            Vec::new()
        } else {
            generate_set(
                self.seed ^ output,
                self.height - 1,
                self.max_children,
                self.max_children,
            )
        };
        (output, children)
    }
}

fn le_u64(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

fn hash(seed: u64) -> u64 {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let rounds: usize = rng.gen_range(0x10000..0x20000);
    let mut state = [0u8; 32];
    rng.fill_bytes(&mut state);
    for _ in 0..rounds {
        state = Sha256::digest(state).into();
    }
    let k: usize = rng.gen_range(0..24);
    le_u64(&state[k..k + 8])
}

fn derive(seed: u64) -> u64 {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut state = [0u8; 64];
    rng.fill_bytes(&mut state);
    let iterations: u32 = rng.gen_range(0x10000..0x20000);
    let mut out = [0u8; 64];
    // Salt `state[..32]`, password (the HMAC key) `state[32..]`.
    pbkdf2::pbkdf2_hmac::<Sha512>(&state[32..], &state[..32], iterations, &mut out);
    let k: usize = rng.gen_range(0..56);
    le_u64(&out[k..k + 8])
}

fn random(seed: u64) -> u64 {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let rounds: usize = rng.gen_range(0x10000..0x20000);
    for _ in 0..rounds {
        let _: u64 = rng.gen();
    }
    rng.gen()
}

/// The run's result: the XOR of all outputs and the count of each kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub xor: u64,
    pub hash: u64,
    pub derive: u64,
    pub random: u64,
}

impl Tally {
    fn add(&mut self, kind: TaskKind, output: u64) {
        self.xor ^= output;
        match kind {
            TaskKind::Hash => self.hash += 1,
            TaskKind::Derive => self.derive += 1,
            TaskKind::Random => self.random += 1,
        }
    }

    fn merge(&mut self, other: Tally) {
        self.xor ^= other.xor;
        self.hash += other.hash;
        self.derive += other.derive;
        self.random += other.random;
    }

    /// Tasks counted.
    pub fn tasks(&self) -> u64 {
        self.hash + self.derive + self.random
    }

    /// The line the runner prints: `XOR,HASH_COUNT,DERIVE_COUNT,RANDOM_COUNT`.
    pub fn line(&self) -> String {
        format!("{},{},{},{}", self.xor, self.hash, self.derive, self.random)
    }
}

/// Run the tree on this thread, one task after another.
pub fn run_sequential(roots: Vec<Task>) -> Tally {
    let mut tally = Tally::default();
    let mut stack = roots;
    while let Some(task) = stack.pop() {
        let (output, children) = task.execute();
        tally.add(task.kind, output);
        stack.extend(children);
    }
    tally
}

/// Run the tree on the current pool: one `pool::spawn` per task; a task
/// awaits its children and returns the tally of its subtree. `done` counts
/// finished tasks (for a progress line).
pub fn run_on_pool(roots: Vec<Task>, done: Arc<AtomicU64>) -> impl Future<Output = Tally> + Send {
    fn subtree(task: Task, done: Arc<AtomicU64>) -> Pin<Box<dyn Future<Output = Tally> + Send>> {
        Box::pin(async move {
            let (output, children) = task.execute();
            done.fetch_add(1, Ordering::Relaxed);
            let mut tally = Tally::default();
            tally.add(task.kind, output);
            let handles: Vec<_> = children
                .into_iter()
                .map(|child| pool::spawn(subtree(child, done.clone())))
                .collect();
            for h in handles {
                tally.merge(h.await.expect("a task panicked"));
            }
            tally
        })
    }
    async move {
        let handles: Vec<_> = roots
            .into_iter()
            .map(|root| pool::spawn(subtree(root, done.clone())))
            .collect();
        let mut tally = Tally::default();
        for h in handles {
            tally.merge(h.await.expect("a task panicked"));
        }
        tally
    }
}

/// Run the tree on the seed's design: `threads` plain threads, the roots in
/// a global `Injector`, children on the running thread's own FIFO deque,
/// stealing from the others; a thread exits when no task is queued and
/// every thread is idle.
pub fn run_on_threads(roots: Vec<Task>, threads: usize, done: Arc<AtomicU64>) -> Tally {
    let injector = Arc::new(Injector::new());
    let queued = Arc::new(AtomicUsize::new(roots.len()));
    let idle = Arc::new(AtomicUsize::new(0));
    for root in roots {
        injector.push(root);
    }
    let locals: Vec<Worker<Task>> = (0..threads).map(|_| Worker::new_fifo()).collect();
    let stealers: Arc<Vec<Stealer<Task>>> = Arc::new(locals.iter().map(Worker::stealer).collect());
    let handles: Vec<_> = locals
        .into_iter()
        .map(|local| {
            let (injector, stealers, queued, idle, done) = (
                injector.clone(),
                stealers.clone(),
                queued.clone(),
                idle.clone(),
                done.clone(),
            );
            std::thread::spawn(move || {
                let mut tally = Tally::default();
                let mut is_idle = false;
                loop {
                    let found = local.pop().or_else(|| {
                        std::iter::repeat_with(|| {
                            injector.steal_batch_and_pop(&local).or_else(|| {
                                stealers.iter().map(Stealer::steal).collect::<Steal<_>>()
                            })
                        })
                        .find(|s| !s.is_retry())
                        .and_then(Steal::success)
                    });
                    match found {
                        Some(task) => {
                            if is_idle {
                                is_idle = false;
                                idle.fetch_sub(1, Ordering::AcqRel);
                            }
                            let (output, children) = task.execute();
                            tally.add(task.kind, output);
                            done.fetch_add(1, Ordering::Relaxed);
                            // Count the children before the parent leaves the
                            // queue count, so it never reads 0 too early.
                            queued.fetch_add(children.len(), Ordering::AcqRel);
                            for child in children {
                                local.push(child);
                            }
                            queued.fetch_sub(1, Ordering::AcqRel);
                        }
                        None => {
                            if !is_idle {
                                is_idle = true;
                                idle.fetch_add(1, Ordering::AcqRel);
                            }
                            if queued.load(Ordering::Acquire) == 0
                                && idle.load(Ordering::Acquire) == threads
                            {
                                break;
                            }
                            std::thread::yield_now();
                        }
                    }
                }
                tally
            })
        })
        .collect();
    let mut tally = Tally::default();
    for h in handles {
        tally.merge(h.join().expect("a runner thread panicked"));
    }
    tally
}
