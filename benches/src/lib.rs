//! Benchmarks of `pool` side by side with tokio and async-executor: the
//! workload definitions shared by the criterion benches
//! (`cargo bench -p benches`) and the `compare` binary
//! (`cargo run --release -p benches --bin compare`).

/// The counting allocator (task_memory), shared with the tests.
pub use tests::alloc;
pub mod args;
pub mod exec;
pub mod load;
pub mod trace;
pub mod workloads;

/// CPU time (user + system) used so far by this process, all threads.
pub use tests::process_cpu_time;

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `p`-th percentile (0..=100) of `v` (sorted in place), nearest rank.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

/// The CPU's model name (`/proc/cpuinfo`).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}
