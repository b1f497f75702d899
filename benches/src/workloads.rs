//! The workloads, written once for every [`Exec`]. Each returns a checksum
//! that [`expected`] computes without any executor.

use crate::exec::Exec;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Tasks in spawn_many_local and spawn_many_remote.
pub const SPAWN_MANY: u64 = 10_000;
/// Tasks and yields per task in yield_many.
pub const YIELD_TASKS: u64 = 200;
pub const YIELDS: u64 = 1_000;
/// Pairs and round trips in ping_pong.
pub const PING_PONG_PAIRS: u64 = 1_000;
pub const ROUND_TRIPS: u64 = 10;
/// Length of the chain in chained_spawn.
pub const CHAIN: u64 = 1_000;
/// fork_join computes fib(FIB_N), spawning for n >= FIB_SPAWN_MIN.
pub const FIB_N: u64 = 22;
pub const FIB_SPAWN_MIN: u64 = 10;
/// quicksort sorts SORT_LEN u64, sequentially below SORT_SEQUENTIAL_BELOW.
pub const SORT_LEN: usize = 4_000_000;
pub const SORT_SEQUENTIAL_BELOW: usize = 64 * 1024;
/// mixed: one CPU unit is fib(MIXED_FIB_N) by fork-join, joining for
/// n >= MIXED_JOIN_MIN (jobs of about 2 us).
pub const MIXED_FIB_N: u64 = 27;
pub const MIXED_JOIN_MIN: u64 = 14;
/// Tasks in task_tree, and the CPU work of each.
pub const TREE_TASKS: u64 = 100_000;
pub const TREE_TASK_WORK: Duration = Duration::from_micros(2);
/// bursty: bursts, tasks per burst, work per task, idle gap.
pub const BURSTS: u64 = 200;
pub const BURST_TASKS: u64 = 64;
pub const BURST_TASK_WORK: Duration = Duration::from_micros(5);
pub const BURST_GAP: Duration = Duration::from_millis(1);
/// sparse_wake: messages, and the period of the outside sender.
pub const SPARSE_MESSAGES: u64 = 1_000;
pub const SPARSE_PERIOD: Duration = Duration::from_micros(200);
/// task_memory: pending tasks held at once.
pub const MEMORY_TASKS: usize = 100_000;
/// long_poll: the CPU-bound poll that follows making a task runnable, and
/// the measurements per repetition (the runtime falls idle before each).
pub const LONG_POLL: Duration = Duration::from_millis(20);
pub const LONG_POLL_SAMPLES: usize = 5;

// ---------------------------------------------------------------- CPU work

/// Iterations of [`spin`] per microsecond on this machine, measured once.
pub fn spins_per_micro() -> u64 {
    static CALIBRATED: OnceLock<u64> = OnceLock::new();
    *CALIBRATED.get_or_init(|| {
        let mut best = u64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            std::hint::black_box(spin(200_000, 1));
            best = best.min(t.elapsed().as_nanos() as u64);
        }
        (200_000 * 1_000 / best.max(1)).max(1)
    })
}

/// `iters` rounds of integer mixing seeded by `seed`: CPU work that the
/// compiler cannot remove, with a checkable result.
pub fn spin(iters: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..iters {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

fn work_iters(d: Duration) -> u64 {
    spins_per_micro() * d.as_micros() as u64
}

/// A splitmix step: children counts and seeds of the task tree.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Split `rest` tasks among 1 to 4 children of node `id`: (child id, size).
fn children(id: u64, rest: u64) -> impl Iterator<Item = (u64, u64)> {
    let k = (1 + mix(id) % 4).min(rest.max(1));
    (0..if rest == 0 { 0 } else { k }).map(move |i| {
        let size = rest / k + u64::from(i < rest % k);
        (mix(id ^ (i + 1)), size)
    })
}

// ---------------------------------------------------------------- helpers

/// Yield once: wake itself and return `Pending` (the same for every
/// executor, so yield_many compares schedulers, not yield functions).
pub fn yield_now() -> impl Future<Output = ()> {
    struct Yield(bool);
    impl Future for Yield {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                Poll::Ready(())
            } else {
                self.0 = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
    Yield(false)
}

type BoxFut<T> = Pin<Box<dyn Future<Output = T> + Send>>;

// ---------------------------------------------------------------- workloads

/// A task spawns 10 000 tiny tasks, then awaits them all.
pub fn spawn_many_local<E: Exec>(e: &E) -> u64 {
    e.run(async {
        let handles: Vec<_> = (0..SPAWN_MANY)
            .map(|i| E::spawn(async move { i }))
            .collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await;
        }
        sum
    })
}

/// The outside thread spawns 10 000 tiny tasks onto an idle runtime, then
/// awaits them.
pub fn spawn_many_remote<E: Exec>(e: &E) -> u64 {
    let handles: Vec<_> = (0..SPAWN_MANY)
        .map(|i| e.spawn_outside(async move { i }))
        .collect();
    e.wait(async {
        let mut sum = 0;
        for h in handles {
            sum += h.await;
        }
        sum
    })
}

/// 200 tasks, each yielding 1 000 times.
pub fn yield_many<E: Exec>(e: &E) -> u64 {
    e.run(async {
        let handles: Vec<_> = (0..YIELD_TASKS)
            .map(|_| {
                E::spawn(async {
                    for _ in 0..YIELDS {
                        yield_now().await;
                    }
                    YIELDS
                })
            })
            .collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await;
        }
        sum
    })
}

/// 1 000 task pairs, 10 round trips each over bounded(1) channels.
pub fn ping_pong<E: Exec>(e: &E) -> u64 {
    e.run(async {
        let handles: Vec<_> = (0..PING_PONG_PAIRS)
            .map(|pair| {
                E::spawn(async move {
                    let (to_echo, echo_in) = async_channel::bounded::<u64>(1);
                    let (to_main, main_in) = async_channel::bounded::<u64>(1);
                    let echo = E::spawn(async move {
                        while let Ok(v) = echo_in.recv().await {
                            if to_main.send(v + 1).await.is_err() {
                                break;
                            }
                        }
                    });
                    let mut v = pair;
                    for _ in 0..ROUND_TRIPS {
                        to_echo.send(v).await.unwrap();
                        v = main_in.recv().await.unwrap();
                    }
                    drop(to_echo);
                    echo.await;
                    v
                })
            })
            .collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await;
        }
        sum
    })
}

fn chain<E: Exec>(n: u64) -> BoxFut<u64> {
    Box::pin(async move {
        if n == 0 {
            0
        } else {
            E::spawn(chain::<E>(n - 1)).await + 1
        }
    })
}

/// A chain of 1 000 tasks, each spawning the next and awaiting it.
pub fn chained_spawn<E: Exec>(e: &E) -> u64 {
    e.run(chain::<E>(CHAIN))
}

pub fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

fn fib<E: Exec>(n: u64) -> BoxFut<u64> {
    Box::pin(async move {
        if n < FIB_SPAWN_MIN {
            fib_seq(n)
        } else {
            let left = E::spawn(fib::<E>(n - 1));
            let right = fib::<E>(n - 2).await;
            left.await + right
        }
    })
}

/// fib(22), each call with n >= 10 spawning one half and computing the other.
pub fn fork_join<E: Exec>(e: &E) -> u64 {
    e.run(fib::<E>(FIB_N))
}

fn tree_node<E: Exec>(id: u64, size: u64, iters: u64) -> BoxFut<u64> {
    Box::pin(async move {
        let mut acc = spin(iters, id);
        let handles: Vec<_> = children(id, size - 1)
            .map(|(child, child_size)| E::spawn(tree_node::<E>(child, child_size, iters)))
            .collect();
        for h in handles {
            acc = acc.wrapping_add(h.await);
        }
        acc
    })
}

/// A seeded tree of 100 000 tasks of about 2 us of CPU work each.
pub fn task_tree<E: Exec>(e: &E) -> u64 {
    task_tree_of::<E>(e, TREE_TASKS)
}

/// task_tree with `tasks` tasks (for the scale mode).
pub fn task_tree_of<E: Exec>(e: &E, tasks: u64) -> u64 {
    let iters = work_iters(TREE_TASK_WORK);
    e.run(tree_node::<E>(1, tasks, iters))
}

/// task_tree's 100 000 tasks without their CPU work: the tree's spawns,
/// polls and joins alone, for counting instructions (the spin's are the
/// same on every executor, and its length is calibrated per run).
pub fn task_tree_bare<E: Exec>(e: &E) -> u64 {
    e.run(tree_node::<E>(1, TREE_TASKS, 0))
}

/// spawn_many_local with `tasks` tasks (for the scale mode).
pub fn spawn_many_local_of<E: Exec>(e: &E, tasks: u64) -> u64 {
    e.run(async move {
        let handles: Vec<_> = (0..tasks).map(|i| E::spawn(async move { i })).collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await;
        }
        sum
    })
}

/// 200 bursts of 64 tasks of about 5 us each, 1 ms of idleness between.
pub fn bursty<E: Exec>(e: &E) -> u64 {
    let iters = work_iters(BURST_TASK_WORK);
    let mut sum = 0u64;
    for burst in 0..BURSTS {
        let handles: Vec<_> = (0..BURST_TASKS)
            .map(|i| e.spawn_outside(async move { spin(iters, burst * BURST_TASKS + i) }))
            .collect();
        sum = sum.wrapping_add(e.wait(async {
            let mut s = 0u64;
            for h in handles {
                s = s.wrapping_add(h.await);
            }
            s
        }));
        std::thread::sleep(BURST_GAP);
    }
    sum
}

/// Wake latencies, in microseconds, of `receivers` tasks receiving a message
/// from this (outside) thread every 200 us, in turn.
pub fn sparse_wake<E: Exec>(e: &E, receivers: usize) -> Vec<f64> {
    let mut senders = Vec::new();
    let mut tasks = Vec::new();
    for _ in 0..receivers {
        let (tx, rx) = async_channel::unbounded::<Instant>();
        senders.push(tx);
        tasks.push(e.spawn_outside(async move {
            let mut latencies = Vec::new();
            while let Ok(sent) = rx.recv().await {
                latencies.push(sent.elapsed().as_secs_f64() * 1e6);
            }
            latencies
        }));
    }
    std::thread::sleep(Duration::from_millis(5)); // every receiver waits
    let start = Instant::now();
    for i in 0..SPARSE_MESSAGES {
        let due = start + SPARSE_PERIOD * (i as u32 + 1);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        senders[i as usize % receivers]
            .try_send(Instant::now())
            .expect("unbounded send");
    }
    drop(senders);
    e.wait(async {
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await);
        }
        all
    })
}

/// How long_poll's task makes another runnable before its long poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LongPoll {
    /// It spawns a child.
    Spawn,
    /// It wakes a waiting task (a message on a channel).
    Wake,
    /// A child it spawned yields once.
    Yield,
}

/// Busy-wait (a CPU-bound poll) for `d`.
fn busy(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// On an idle runtime, a task makes another runnable (`case`) and then runs
/// a CPU-bound poll of `LONG_POLL`: how long (us) the other task waited to
/// start (or to resume after its yield). A work-conserving executor runs it
/// on an idle worker at once; one that keeps it behind the long poll makes
/// it wait `LONG_POLL`.
pub fn long_poll<E: Exec>(e: &E, case: LongPoll) -> f64 {
    let micros = |t: Instant| t.elapsed().as_secs_f64() * 1e6;
    match case {
        LongPoll::Spawn => e.run(async move {
            let made_runnable = Instant::now();
            let child = E::spawn(async move { micros(made_runnable) });
            busy(LONG_POLL);
            child.await
        }),
        LongPoll::Wake => {
            let (tx, rx) = async_channel::bounded::<Instant>(1);
            let waiter = e.spawn_outside(async move { micros(rx.recv().await.unwrap()) });
            // The waiter waits, and the runtime falls idle again.
            std::thread::sleep(Duration::from_millis(5));
            e.run(async move {
                tx.try_send(Instant::now()).unwrap();
                busy(LONG_POLL);
            });
            e.wait(waiter)
        }
        LongPoll::Yield => e.run(async move {
            let child = E::spawn(async move {
                let yielded = Instant::now();
                yield_now().await;
                micros(yielded)
            });
            // Let the child run up to its yield, then take the worker.
            yield_now().await;
            busy(LONG_POLL);
            child.await
        }),
    }
}

// ---------------------------------------------------------------- quicksort

/// quicksort's input: SORT_LEN xorshift values, the same every run.
fn sort_data() -> &'static [u64] {
    static DATA: OnceLock<Vec<u64>> = OnceLock::new();
    DATA.get_or_init(|| {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..SORT_LEN)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect()
    })
}

/// Sort a fresh copy of the input with `sort` and return its checksum. The
/// copy goes into one buffer kept across runs, so it costs a memcpy (about
/// 3 ms, timed for everyone) and no page faults (a fresh 32 MB vector
/// costs about 20 ms of them).
fn sort_run(sort: impl FnOnce(&mut [u64])) -> u64 {
    static BUF: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());
    let mut buf = BUF.lock().unwrap_or_else(|e| e.into_inner());
    buf.clear();
    buf.extend_from_slice(sort_data());
    sort(&mut buf);
    sorted_checksum(&buf)
}

/// The sum of `v` if it is sorted, else 0.
fn sorted_checksum(v: &[u64]) -> u64 {
    if v.is_sorted() {
        v.iter().fold(0u64, |s, x| s.wrapping_add(*x))
    } else {
        0
    }
}

/// Split `v` at its median (the standard library's selection).
fn sort_partition(v: &mut [u64]) -> usize {
    let k = v.len() / 2;
    v.select_nth_unstable(k);
    k
}

/// A part of the vector, moved into the task that sorts it.
struct SortPart(*mut u64, usize);

// SAFETY: parts are disjoint and each is used by one task at a time, which
// its parent awaits before it returns (see `sort_tasks`).
unsafe impl Send for SortPart {}

fn sort_tasks<E: Exec>(part: SortPart) -> BoxFut<()> {
    Box::pin(async move {
        let part = part; // moved whole (a field alone is not `Send`)
                         // SAFETY: `part` is the only handle to its elements until this
                         // future completes: every task awaits the child it spawns, and the
                         // vector outlives the root (`quicksort` waits for it).
        let v = unsafe { std::slice::from_raw_parts_mut(part.0, part.1) };
        if v.len() < SORT_SEQUENTIAL_BELOW {
            v.sort_unstable();
            return;
        }
        let k = sort_partition(v);
        let (left, right) = v.split_at_mut(k);
        let left = E::spawn(sort_tasks::<E>(SortPart(left.as_mut_ptr(), left.len())));
        sort_tasks::<E>(SortPart(right.as_mut_ptr(), right.len())).await;
        left.await;
    })
}

/// A parallel quicksort of SORT_LEN u64 with async tasks: spawn one half,
/// sort the other, await the first.
pub fn quicksort<E: Exec>(e: &E) -> u64 {
    sort_run(|v| e.run(sort_tasks::<E>(SortPart(v.as_mut_ptr(), v.len()))))
}

/// quicksort with `sort_unstable` on one thread (the reference).
pub fn quicksort_sequential() -> u64 {
    sort_run(|v| v.sort_unstable())
}

macro_rules! join_sort {
    ($name:ident, $join:path) => {
        fn $name(v: &mut [u64]) {
            if v.len() < SORT_SEQUENTIAL_BELOW {
                v.sort_unstable();
                return;
            }
            let k = sort_partition(v);
            let (left, right) = v.split_at_mut(k);
            $join(|| $name(left), || $name(right));
        }
    };
}
join_sort!(pool_join_sort, pool::join);
join_sort!(rayon_join_sort, rayon::join);

/// quicksort with `pool::join`.
pub fn pool_join_quicksort(p: &pool::Pool) -> u64 {
    sort_run(|v| {
        p.join(|| pool_join_sort(v), || ());
    })
}

/// quicksort with `rayon::join`.
pub fn rayon_quicksort(p: &rayon::ThreadPool) -> u64 {
    sort_run(|v| p.install(|| rayon_join_sort(v)))
}

// ---------------------------------------------------------------- rayon

/// fork_join and task_tree on a fork-join pool: `$pool` with `$join` and
/// `$scope` (rayon's, or pool's own `join` and `scope`).
macro_rules! fork_join_refs {
    ($fork_join:ident, $task_tree:ident, $pool:ty, $scope:ty, $join:path) => {
        /// fork_join with fork-join's `join` instead of spawned tasks.
        pub fn $fork_join(pool: &$pool) -> u64 {
            fn fib(n: u64) -> u64 {
                if n < FIB_SPAWN_MIN {
                    fib_seq(n)
                } else {
                    let (a, b) = $join(|| fib(n - 1), || fib(n - 2));
                    a + b
                }
            }
            pool.install_or_join(|| fib(FIB_N))
        }

        /// task_tree with fork-join's `scope` instead of spawned tasks.
        pub fn $task_tree(pool: &$pool) -> u64 {
            use std::sync::atomic::{AtomicU64, Ordering};
            let iters = work_iters(TREE_TASK_WORK);
            let sum = AtomicU64::new(0);
            fn node<'s>(s: &$scope, id: u64, size: u64, iters: u64, sum: &'s AtomicU64) {
                sum.fetch_add(spin(iters, id), Ordering::Relaxed);
                for (child, child_size) in children(id, size - 1) {
                    s.spawn(move |s| node(s, child, child_size, iters, sum));
                }
            }
            pool.scope(|s| node(s, 1, TREE_TASKS, iters, &sum));
            sum.into_inner()
        }
    };
}

/// Run `f` on the fork-join pool's workers.
trait InstallOrJoin {
    fn install_or_join<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R;
}

impl InstallOrJoin for rayon::ThreadPool {
    fn install_or_join<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.install(f)
    }
}

impl InstallOrJoin for pool::Pool {
    fn install_or_join<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.join(f, || ()).0
    }
}

fork_join_refs!(
    rayon_fork_join,
    rayon_task_tree,
    rayon::ThreadPool,
    rayon::Scope<'s>,
    rayon::join
);
fork_join_refs!(
    pool_join_fork_join,
    pool_scope_task_tree,
    pool::Pool,
    pool::Scope<'s>,
    pool::join
);

// ---------------------------------------------------------------- mixed

macro_rules! mixed_unit {
    ($name:ident, $join:path) => {
        /// One CPU unit of mixed: fib(MIXED_FIB_N) by fork-join.
        pub fn $name() -> u64 {
            fn fib(n: u64) -> u64 {
                if n < MIXED_JOIN_MIN {
                    fib_seq(n)
                } else {
                    let (a, b) = $join(|| fib(n - 1), || fib(n - 2));
                    a + b
                }
            }
            fib(MIXED_FIB_N)
        }
    };
}
mixed_unit!(mixed_unit_pool, pool::join);
mixed_unit!(mixed_unit_rayon, rayon::join);

// ---------------------------------------------------------------- checks

/// The checksum of a workload, computed without any executor.
pub fn expected(workload: &str) -> Option<u64> {
    Some(match workload {
        "spawn_many_local" | "spawn_many_remote" => SPAWN_MANY * (SPAWN_MANY - 1) / 2,
        "yield_many" => YIELD_TASKS * YIELDS,
        "ping_pong" => (0..PING_PONG_PAIRS).map(|p| p + ROUND_TRIPS).sum(),
        "chained_spawn" => CHAIN,
        "fork_join" => fib_seq(FIB_N),
        "quicksort" => sort_data().iter().fold(0u64, |s, x| s.wrapping_add(*x)),
        "task_tree" => tree_checksum(TREE_TASKS),
        "task_tree_bare" => tree_checksum_of(TREE_TASKS, 0),
        "bursty" => {
            let iters = work_iters(BURST_TASK_WORK);
            (0..BURSTS * BURST_TASKS).fold(0u64, |s, i| s.wrapping_add(spin(iters, i)))
        }
        _ => return None,
    })
}

/// The task_tree checksum of a tree of `tasks` tasks, sequentially.
pub fn tree_checksum(tasks: u64) -> u64 {
    tree_checksum_of(tasks, work_iters(TREE_TASK_WORK))
}

/// The checksum of a tree of `tasks` tasks of `iters` spins each.
fn tree_checksum_of(tasks: u64, iters: u64) -> u64 {
    fn node(id: u64, size: u64, iters: u64) -> u64 {
        let mut acc = spin(iters, id);
        for (child, child_size) in children(id, size - 1) {
            acc = acc.wrapping_add(node(child, child_size, iters));
        }
        acc
    }
    node(1, tasks, iters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_has_exactly_the_requested_number_of_tasks() {
        fn count(id: u64, size: u64) -> u64 {
            1 + children(id, size - 1)
                .map(|(c, s)| count(c, s))
                .sum::<u64>()
        }
        for n in [1, 2, 5, 1_000, TREE_TASKS] {
            assert_eq!(count(1, n), n);
        }
    }
}
