//! The global pool (its own test binary: it is process-wide state).

use pool::Handle;
use tests::watchdog;

#[test]
fn the_global_pool_starts_on_first_use_with_the_env_worker_count() {
    watchdog("global_pool", 10, || {
        assert!(
            Handle::try_current().is_none(),
            "nothing started the global pool yet"
        );
        // SAFETY-free in edition 2021; this binary runs this one test only.
        std::env::set_var("POOL_WORKER_THREADS", "3");
        let h = pool::spawn(async { std::thread::current().name().map(str::to_owned) });
        let name = pool::block_on(h).unwrap().unwrap();
        assert!(name.starts_with("pool-global-"), "{name}");
        let current = Handle::try_current().expect("the global pool now runs");
        assert_eq!(current.metrics().workers, 3);
        assert_eq!(Handle::current().metrics().spawned, 1);
        // Inside another pool, that pool is current, not the global one.
        let p = pool::Builder::new().worker_threads(1).build().unwrap();
        assert_eq!(p.block_on(async { Handle::current().metrics().workers }), 1);
    });
}
