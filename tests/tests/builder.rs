//! `Builder`: bad values are `InvalidInput` errors that say what to change.

use pool::Builder;
use std::io::ErrorKind;

#[test]
fn zero_workers_is_an_invalid_input_error_naming_the_range() {
    let err = Builder::new().worker_threads(0).build().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        err.to_string(),
        "worker_threads must be between 1 and 65535, got 0"
    );
}

#[test]
fn more_workers_than_the_counters_hold_is_refused_before_any_thread_starts() {
    let err = Builder::new().worker_threads(65_536).build().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("between 1 and 65535"), "{err}");
}

#[test]
fn zero_stack_size_is_an_invalid_input_error() {
    let err = Builder::new().stack_size(0).build().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().starts_with("stack_size must be"), "{err}");
}

#[test]
fn a_thread_that_cannot_start_is_an_error_not_a_panic() {
    // No machine can map a 64 TiB stack for a thread.
    let result = Builder::new().worker_threads(2).stack_size(1 << 46).build();
    let err = result.expect_err("a 64 TiB stack cannot be allocated");
    assert_ne!(err.kind(), ErrorKind::InvalidInput, "{err}");
}

#[test]
fn defaults_build_one_worker_per_cpu() {
    let p = Builder::default().build().unwrap();
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert_eq!(p.worker_threads(), cpus);
    assert_eq!(p.metrics().workers, cpus);
}

#[test]
fn a_custom_stack_size_runs_deep_recursion() {
    fn depth(n: u64) -> u64 {
        let pad = [n; 64];
        if n == 0 {
            0
        } else {
            std::hint::black_box(pad)[0] + depth(n - 1) - n + 1
        }
    }
    let p = Builder::new()
        .worker_threads(1)
        .stack_size(256 << 20)
        .build()
        .unwrap();
    assert_eq!(
        p.block_on(p.spawn(async { depth(20_000) })).unwrap(),
        20_000
    );
}

/// A `build` refused for a value leaves the file at the trace path as it
/// was: the trace file is created only once every other check passed.
#[test]
fn a_refused_build_does_not_truncate_the_trace_file() {
    let path = std::env::temp_dir().join(format!("pool-refused-trace-{}.json", std::process::id()));
    std::fs::write(&path, "an earlier trace").unwrap();
    let err = Builder::new()
        .trace(&path)
        .stack_size(0)
        .build()
        .expect_err("stack_size(0) is refused");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    let kept = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        kept, "an earlier trace",
        "the refused build truncated {path:?}"
    );
}

/// `Builder`'s `Debug` shows every setting, the paused clock and the
/// io_uring switch among them.
#[test]
fn the_builder_debug_shows_every_setting() {
    let shown = format!("{:?}", Builder::new().start_paused(true).io_uring(false));
    assert!(shown.contains("start_paused: true"), "{shown}");
    assert!(shown.contains("io_uring: false"), "{shown}");
}
