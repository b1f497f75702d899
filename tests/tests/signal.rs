//! Signals through the pool's driver. Handlers are process-wide, so each
//! test listens for a signal no other test of this binary sends.

use futures::StreamExt;
use pool::signal::unix::{signal, SignalKind};
use pool::Builder;
use std::io;
use std::sync::mpsc;
use std::time::Duration;
use tests::watchdog;

fn raise(signum: i32) {
    // SAFETY: `kill` sends `signum` to this process, which handles it (every
    // test installs its handler through `signal` first).
    assert_eq!(unsafe { libc::kill(libc::getpid(), signum) }, 0);
}

#[test]
fn a_delivery_wakes_recv_and_deliveries_before_a_recv_coalesce() {
    watchdog("signal delivery", 30, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        p.block_on(async {
            let mut usr1 = signal(SignalKind::user_defined1()).unwrap();
            let mut next = Box::pin(usr1.recv());
            assert!(futures::poll!(&mut next).is_pending(), "no signal yet");
            raise(libc::SIGUSR1);
            assert_eq!(next.await, Some(()));
            // Two deliveries before the next recv: at least one recv for
            // them, and nothing after.
            raise(libc::SIGUSR1);
            raise(libc::SIGUSR1);
            assert_eq!(usr1.recv().await, Some(()));
            pool::time::sleep(Duration::from_millis(20)).await;
            let mut more = 0;
            while futures::poll!(Box::pin(usr1.recv())).is_ready() {
                more += 1;
            }
            assert!(more <= 1, "{more} more deliveries for two signals");
            let mut after = Box::pin(usr1.recv());
            assert!(futures::poll!(&mut after).is_pending(), "no delivery left");
        });
    });
}

#[test]
fn every_signal_in_every_pool_sees_each_delivery() {
    watchdog("signal fan-out", 30, || {
        let a = Builder::new().worker_threads(2).build().unwrap();
        let b = Builder::new().worker_threads(1).build().unwrap();
        let kind = SignalKind::from_raw(40);
        let (tx, rx) = mpsc::channel();
        let mut ready = Vec::new();
        for (pool, n) in [(&a, 2), (&b, 1)] {
            for _ in 0..n {
                let tx = tx.clone();
                let (made_tx, made_rx) = mpsc::channel();
                pool.spawn(async move {
                    let mut s = signal(kind).unwrap();
                    made_tx.send(()).unwrap();
                    for round in 0..3 {
                        s.recv().await.unwrap();
                        tx.send(round).unwrap();
                    }
                });
                ready.push(made_rx);
            }
        }
        for r in ready {
            r.recv().unwrap();
        }
        for round in 0..3 {
            raise(40);
            for _ in 0..3 {
                let got = rx
                    .recv_timeout(Duration::from_secs(10))
                    .expect("every Signal sees the delivery");
                assert_eq!(got, round);
            }
        }
    });
}

#[test]
fn a_signal_wakes_a_pool_that_is_fully_asleep() {
    watchdog("signal wakes a sleeping pool", 30, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        let (tx, rx) = mpsc::channel();
        let (made_tx, made_rx) = mpsc::channel();
        p.spawn(async move {
            let mut s = signal(SignalKind::from_raw(41)).unwrap();
            made_tx.send(()).unwrap();
            for _ in 0..5 {
                s.recv().await.unwrap();
                tx.send(()).unwrap();
            }
        });
        made_rx.recv().unwrap();
        for _ in 0..5 {
            // Every worker asleep, one of them blocked in the driver: only
            // the signal pipe's readiness can wake the task.
            tests::wait_until_asleep(&p);
            raise(41);
            rx.recv_timeout(Duration::from_secs(5))
                .expect("the signal woke the sleeping pool");
        }
    });
}

#[test]
fn numbers_that_cannot_be_handled_are_invalid_input() {
    let p = Builder::new().worker_threads(1).build().unwrap();
    p.block_on(async {
        for signum in [
            0,
            -1,
            65,
            1000,
            libc::SIGKILL,
            libc::SIGSTOP,
            libc::SIGSEGV,
            libc::SIGILL,
            libc::SIGFPE,
            32,
            33,
        ] {
            let err = signal(SignalKind::from_raw(signum)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{signum}: {err}");
            assert!(
                err.to_string().contains(&signum.to_string()),
                "{signum}: {err}"
            );
        }
    });
}

#[test]
fn a_pending_signal_ends_when_its_pool_is_dropped() {
    watchdog("signal outlives its pool", 30, || {
        let p = Builder::new().worker_threads(1).build().unwrap();
        let mut s = p
            .block_on(async { signal(SignalKind::from_raw(42)) })
            .unwrap();
        let waiter = std::thread::spawn(move || futures::executor::block_on(s.next()));
        std::thread::sleep(Duration::from_millis(50));
        drop(p);
        assert_eq!(
            waiter.join().unwrap(),
            None,
            "the stream ends with its pool"
        );
    });
}

#[test]
fn ctrl_c_returns_on_sigint() {
    watchdog("ctrl_c", 30, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        p.block_on(async {
            let mut ctrl_c = Box::pin(pool::signal::ctrl_c());
            assert!(futures::poll!(&mut ctrl_c).is_pending());
            raise(libc::SIGINT);
            ctrl_c.await.unwrap();
        });
    });
}
