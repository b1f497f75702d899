//! An idle pool with open sockets and pending timers burns (almost) no CPU:
//! one worker blocks in the driver until the next deadline, the others on
//! their condvars. Its own test binary, so that the process's CPU time is
//! the pool's.

use pool::net::{TcpListener, TcpStream, UdpSocket};
use pool::Builder;
use std::time::Duration;
use tests::{process_cpu_time, wait_until_asleep, watchdog};

#[test]
fn an_idle_pool_with_sockets_and_timers_uses_almost_no_cpu() {
    watchdog("idle io cpu", 20, || {
        let p = Builder::new().worker_threads(2).build().unwrap();
        let _keep = p.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let client = TcpStream::connect(listener.local_addr().unwrap())
                .await
                .unwrap();
            let (server, _) = listener.accept().await.unwrap();
            let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            // Tasks waiting on each socket and on a far timer.
            let accept = pool::spawn(async move { listener.accept().await.map(drop) });
            let read = pool::spawn(async move {
                let mut buf = [0; 1];
                futures::AsyncReadExt::read(&mut &server, &mut buf).await
            });
            let recv = pool::spawn(async move {
                let mut buf = [0; 1];
                udp.recv_from(&mut buf).await.map(drop)
            });
            let timer = pool::spawn(pool::time::sleep(Duration::from_secs(3600)));
            (client, accept, read, recv, timer)
        });
        wait_until_asleep(&p);
        let before = process_cpu_time();
        let metrics_before = p.metrics();
        std::thread::sleep(Duration::from_millis(500));
        let used = process_cpu_time() - before;
        assert!(
            used < Duration::from_millis(25),
            "idle pool with sockets and timers used {used:?} of CPU in 500 ms"
        );
        let m = p.metrics();
        assert_eq!(m.polls, metrics_before.polls, "an idle pool polled tasks");
        assert_eq!(m.wakeups, metrics_before.wakeups, "an idle pool woke up");
    });
}
