//! An idle pool burns (almost) no CPU. Its own test binary, so that the
//! process's CPU time is the idle pool's and nothing else's.

use pool::Builder;
use std::time::Duration;
use tests::{process_cpu_time, wait_until_asleep, watchdog};

#[test]
fn an_idle_pool_uses_almost_no_cpu() {
    watchdog("idle_cpu", 20, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        wait_until_asleep(&p);
        let before = process_cpu_time();
        std::thread::sleep(Duration::from_millis(500));
        let used = process_cpu_time() - before;
        // Spinning or yielding workers would burn ~1 s of CPU here (two
        // workers for half a second); sleeping ones burn nothing. The
        // allowance covers the test harness's own threads.
        assert!(
            used < Duration::from_millis(25),
            "idle pool used {used:?} of CPU in 500 ms"
        );
        assert_eq!(p.metrics().wakeups, 0, "nobody woke an idle pool");
    });
}
