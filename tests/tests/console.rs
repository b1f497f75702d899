//! Feature `console`: a console-api client (the one tokio-console is built
//! on) sees the pool's tasks with their figures, task details for one id,
//! updates while every worker is stuck in a poll, pause and resume, and a
//! bounded table under many short tasks; a bad address is `InvalidInput`
//! and a taken port names the address.

use console_api::instrument::instrument_client::InstrumentClient;
use console_api::instrument::{InstrumentRequest, PauseRequest, ResumeRequest, TaskDetailsRequest};
use console_api::tasks::task_details::PollTimesHistogram;
use console_api::tasks::{Stats, Task};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tests::watchdog;
use tonic::Streaming;

type Client = InstrumentClient<tonic::transport::Channel>;

/// A task id as the console sends it (its `Display`).
fn raw(id: pool::TaskId) -> u64 {
    id.to_string()
        .parse()
        .expect("a task id displays as its number")
}

/// A timestamp as nanoseconds (for comparing two).
fn nanos(t: &Option<prost_types::Timestamp>) -> i128 {
    let t = t.as_ref().expect("a timestamp");
    i128::from(t.seconds) * 1_000_000_000 + i128::from(t.nanos)
}

/// Run `f` on a tokio runtime of the test's own (the client's).
fn client<T>(f: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

async fn connect(pool: &pool::Pool) -> Client {
    let addr = pool.console_addr().expect("the pool serves the console");
    InstrumentClient::connect(format!("http://{addr}"))
        .await
        .unwrap_or_else(|e| panic!("connect to the console at {addr}: {e}"))
}

fn console_pool(workers: usize) -> pool::Pool {
    pool::Builder::new()
        .worker_threads(workers)
        .console("127.0.0.1:0")
        .build()
        .expect("a pool serving the console starts")
}

/// What a client knows after some updates: every task announced, its
/// latest stats, the metadata ids registered, the events reported lost.
#[derive(Default)]
struct View {
    tasks: HashMap<u64, Task>,
    stats: HashMap<u64, Stats>,
    metadata: Vec<u64>,
    lost: u64,
    updates: usize,
    resources: HashMap<u64, console_api::resources::Resource>,
    resource_stats: HashMap<u64, console_api::resources::Stats>,
    async_ops: HashMap<u64, console_api::async_ops::AsyncOp>,
    async_op_stats: HashMap<u64, console_api::async_ops::Stats>,
}

impl View {
    /// Read the next update into the view (fails the test after 5 s).
    async fn next(&mut self, stream: &mut Streaming<console_api::instrument::Update>) {
        let update = tokio::time::timeout(Duration::from_secs(5), stream.message())
            .await
            .expect("an update within 5 s (one comes every second)")
            .expect("the stream is healthy")
            .expect("the stream goes on");
        self.updates += 1;
        if let Some(meta) = update.new_metadata {
            self.metadata
                .extend(meta.metadata.iter().filter_map(|m| m.id.map(|i| i.id)));
        }
        let tasks = update.task_update.expect("every update has a task update");
        self.lost += tasks.dropped_events;
        for task in tasks.new_tasks {
            let id = task.id.expect("a task has an id").id;
            assert!(
                tasks.stats_update.contains_key(&id),
                "task {id} is new without its stats in the same update"
            );
            let meta = task.metadata.expect("a task names its metadata").id;
            assert!(
                self.metadata.contains(&meta),
                "task {id} names unregistered metadata {meta}"
            );
            assert!(
                self.tasks.insert(id, task).is_none(),
                "task {id} announced twice"
            );
        }
        for (id, stats) in tasks.stats_update {
            assert!(
                self.tasks.contains_key(&id),
                "stats of task {id}, never announced"
            );
            assert!(stats.created_at.is_some() && stats.poll_stats.is_some());
            self.stats.insert(id, stats);
        }
        // What tokio-console needs of resources and async ops: each new one
        // with its stats in the same update (with `created_at`; an async
        // op's with `poll_stats` too), its metadata registered.
        let resources = update
            .resource_update
            .expect("every update has a resource update");
        for resource in resources.new_resources {
            let id = resource.id.expect("a resource has an id").id;
            let stats = resources.stats_update.get(&id);
            assert!(
                stats.is_some_and(|s| s.created_at.is_some()),
                "resource {id} is new without its stats"
            );
            let meta = resource.metadata.expect("a resource names its metadata").id;
            assert!(
                self.metadata.contains(&meta),
                "resource {id}: metadata {meta}"
            );
            assert!(resource.kind.is_some(), "resource {id} has a kind");
            self.resources.insert(id, resource);
        }
        for (id, stats) in resources.stats_update {
            assert!(
                self.resources.contains_key(&id),
                "stats of resource {id}, never announced"
            );
            self.resource_stats.insert(id, stats);
        }
        let ops = update
            .async_op_update
            .expect("every update has an async op update");
        for op in ops.new_async_ops {
            let id = op.id.expect("an async op has an id").id;
            let stats = ops.stats_update.get(&id);
            assert!(
                stats.is_some_and(|s| s.created_at.is_some() && s.poll_stats.is_some()),
                "async op {id} is new without its stats"
            );
            let meta = op.metadata.expect("an async op names its metadata").id;
            assert!(
                self.metadata.contains(&meta),
                "async op {id}: metadata {meta}"
            );
            let resource = op.resource_id.expect("an async op names its resource").id;
            assert!(
                self.resources.contains_key(&resource),
                "async op {id} on an unknown resource"
            );
            self.async_ops.insert(id, op);
        }
        for (id, stats) in ops.stats_update {
            assert!(
                self.async_ops.contains_key(&id),
                "stats of async op {id}, never announced"
            );
            self.async_op_stats.insert(id, stats);
        }
    }

    /// The resource of concrete type `ty` made at `line` of this file, if
    /// announced.
    fn resource_at(&self, ty: &str, line: u32) -> Option<u64> {
        self.resources.iter().find_map(|(id, r)| {
            let at = r.location.as_ref()?;
            (r.concrete_type == ty && at.file.as_deref() == Some(file!()) && at.line == Some(line))
                .then_some(*id)
        })
    }

    /// The tasks whose async ops await resource `id`, and have not ended.
    fn awaiting(&self, resource: u64) -> Vec<u64> {
        self.async_ops
            .iter()
            .filter(|(_, op)| op.resource_id.map(|r| r.id) == Some(resource))
            .filter_map(|(id, _)| {
                let stats = self.async_op_stats.get(id)?;
                stats
                    .dropped_at
                    .is_none()
                    .then(|| stats.task_id.map(|t| t.id))?
            })
            .collect()
    }

    /// Read updates until `done` holds (fails the test after `secs`).
    async fn until(
        &mut self,
        stream: &mut Streaming<console_api::instrument::Update>,
        secs: u64,
        what: &str,
        mut done: impl FnMut(&View) -> bool,
    ) {
        let start = Instant::now();
        while !done(self) {
            assert!(
                start.elapsed() < Duration::from_secs(secs),
                "{what}: not seen within {secs} s"
            );
            self.next(stream).await;
        }
    }

    fn polls(&self, id: u64) -> u64 {
        self.stats[&id].poll_stats.as_ref().unwrap().polls
    }

    fn field(&self, id: u64, name: &str) -> Option<String> {
        self.tasks[&id].fields.iter().find_map(|f| {
            use console_api::field::{Name, Value};
            match (&f.name, &f.value) {
                (Some(Name::StrName(n)), Some(Value::StrVal(v))) if n == name => Some(v.clone()),
                _ => None,
            }
        })
    }
}

async fn watch(client: &mut Client) -> Streaming<console_api::instrument::Update> {
    client
        .watch_updates(InstrumentRequest {})
        .await
        .expect("watch_updates")
        .into_inner()
}

#[test]
fn a_client_sees_the_tasks_of_this_file_with_their_polls_wakes_and_wakers() {
    watchdog("console: tasks", 60, || {
        let pool = console_pool(2);
        // A task that yields 5 times (6 polls, 5 self-wakes), then waits
        // on a channel that holds a clone of its waker.
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let waiting = pool.spawn(async move {
            for _ in 0..5 {
                pool::yield_now().await;
            }
            let _ = rx.await;
        });
        // Woken in its last poll, which completes it: no poll follows the
        // wake, and tokio-console must not count it scheduled for ever.
        let finished = pool.spawn(std::future::poll_fn(|cx| {
            cx.waker().wake_by_ref();
            std::task::Poll::Ready(7)
        }));
        let blocking = pool.spawn_blocking(|| 8);
        let (waiting_id, finished_id, blocking_id) =
            (raw(waiting.id()), raw(finished.id()), raw(blocking.id()));
        assert_eq!(pool.block_on(finished).unwrap(), 7);
        assert_eq!(pool.block_on(blocking).unwrap(), 8);
        client(async {
            let mut client = connect(&pool).await;
            let mut stream = watch(&mut client).await;
            let mut view = View::default();
            view.until(&mut stream, 10, "the three tasks, settled", |v| {
                v.stats
                    .get(&waiting_id)
                    .is_some_and(|_| v.polls(waiting_id) == 6)
                    && v.stats
                        .get(&finished_id)
                        .is_some_and(|s| s.dropped_at.is_some())
                    && v.stats
                        .get(&blocking_id)
                        .is_some_and(|s| s.dropped_at.is_some())
            })
            .await;
            let task = &view.tasks[&waiting_id];
            let location = task.location.as_ref().expect("a spawn location");
            assert!(
                location.file.as_deref().unwrap().ends_with("console.rs"),
                "{location:?}"
            );
            assert!(location.line.unwrap() > 0);
            assert_eq!(view.field(waiting_id, "kind").as_deref(), Some("task"));
            assert_eq!(view.field(blocking_id, "kind").as_deref(), Some("blocking"));
            assert_eq!(task.kind, console_api::tasks::task::Kind::Spawn as i32);
            let s = &view.stats[&waiting_id];
            assert!(s.dropped_at.is_none(), "the waiting task is alive");
            assert!(s.wakes >= 5 && s.self_wakes >= 5, "5 yields: {s:?}");
            // The channel keeps a clone: tokio-console must not flag the
            // task as having lost its waker.
            assert!(s.waker_clones > s.waker_drops, "no waker alive: {s:?}");
            let poll = s.poll_stats.as_ref().unwrap();
            assert!(nanos(&poll.last_poll_ended) >= nanos(&poll.last_poll_started));
            assert!(nanos(&poll.last_poll_started) >= nanos(&poll.first_poll));
            assert!(poll.busy_time.is_some());
            let f = &view.stats[&finished_id];
            let poll = f.poll_stats.as_ref().unwrap();
            assert_eq!(poll.polls, 1);
            assert_eq!((f.wakes, f.self_wakes), (1, 1), "{f:?}");
            let total = nanos(&f.dropped_at) - nanos(&f.created_at);
            assert!(total >= 0);
            // tokio-console adds the time since the last wake to the
            // scheduled time while that wake is later than the last poll's
            // start: settled at the drop, it is not.
            assert!(
                nanos(&f.last_wake) <= nanos(&poll.last_poll_started),
                "{f:?}"
            );
            let scheduled = f.scheduled_time.unwrap();
            let scheduled =
                i128::from(scheduled.seconds) * 1_000_000_000 + i128::from(scheduled.nanos);
            assert!(
                scheduled <= total,
                "scheduled {scheduled} ns of a {total} ns life"
            );
            // Wake it: it finishes, and the next updates say so.
            tx.send(()).unwrap();
            view.until(&mut stream, 10, "the waiting task finished", |v| {
                v.stats[&waiting_id].dropped_at.is_some()
            })
            .await;
            let s = &view.stats[&waiting_id];
            assert_eq!(s.poll_stats.as_ref().unwrap().polls, 7);
            assert!(s.wakes >= 6, "{s:?}");
        });
        pool.block_on(waiting).unwrap();
    });
}

#[test]
fn task_details_give_the_poll_and_scheduled_time_histograms_of_one_task() {
    watchdog("console: details", 60, || {
        let pool = console_pool(1);
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let task = pool.spawn(async move {
            for _ in 0..9 {
                pool::yield_now().await;
            }
            // The tenth poll, and the last until `tx` sends: 15 ms.
            std::thread::sleep(Duration::from_millis(15));
            let _ = rx.await;
        });
        let id = raw(task.id());
        client(async {
            let mut client = connect(&pool).await;
            let start = Instant::now();
            let details = loop {
                let mut stream = client
                    .watch_task_details(TaskDetailsRequest {
                        id: Some(console_api::Id { id }),
                    })
                    .await
                    .expect("details of a live task")
                    .into_inner();
                let details = stream
                    .message()
                    .await
                    .unwrap()
                    .expect("a first details message");
                let Some(PollTimesHistogram::Histogram(h)) = &details.poll_times_histogram else {
                    panic!("a poll-time histogram: {details:?}");
                };
                let mut raw = &h.raw_histogram[..];
                let polls: hdrhistogram::Histogram<u64> =
                    hdrhistogram::serialization::Deserializer::new()
                        .deserialize(&mut raw)
                        .expect("an HdrHistogram, V2");
                if polls.len() == 10 {
                    break (polls, details);
                }
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "10 polls not seen"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            let (polls, details) = details;
            assert!(
                polls.max() >= 15_000_000,
                "the 15 ms poll: max {} ns",
                polls.max()
            );
            let scheduled = details.scheduled_times_histogram.expect("scheduled times");
            let mut raw = &scheduled.raw_histogram[..];
            let scheduled: hdrhistogram::Histogram<u64> =
                hdrhistogram::serialization::Deserializer::new()
                    .deserialize(&mut raw)
                    .unwrap();
            assert_eq!(scheduled.len(), 10, "a scheduled time per poll");
            let missing = client
                .watch_task_details(TaskDetailsRequest {
                    id: Some(console_api::Id { id: u64::MAX >> 20 }),
                })
                .await
                .expect_err("no such task");
            assert_eq!(missing.code(), tonic::Code::NotFound, "{missing}");
        });
        tx.send(()).unwrap();
        pool.block_on(task).unwrap();
    });
}

#[test]
fn updates_keep_coming_while_every_worker_is_stuck_in_a_poll() {
    watchdog("console: stuck workers", 60, || {
        let pool = console_pool(2);
        let release = Arc::new(AtomicBool::new(false));
        let stuck: Vec<_> = (0..2)
            .map(|_| {
                let release = Arc::clone(&release);
                pool.spawn(async move {
                    let start = Instant::now();
                    while !release.load(Ordering::Acquire)
                        && start.elapsed() < Duration::from_secs(30)
                    {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let ids: Vec<u64> = stuck.iter().map(|t| raw(t.id())).collect();
        tests::wait_for("both workers stuck", Duration::from_secs(10), || {
            pool.tasks()
                .iter()
                .filter(|t| matches!(t.state, pool::TaskState::Running { .. }))
                .count()
                == 2
        });
        client(async {
            let mut client = connect(&pool).await;
            let mut stream = watch(&mut client).await;
            let mut view = View::default();
            view.next(&mut stream).await;
            for id in &ids {
                let poll = view.stats[id].poll_stats.unwrap();
                assert!(
                    poll.last_poll_started.is_some() && poll.last_poll_ended.is_none(),
                    "running"
                );
            }
            // And the next, a second later, with the workers still stuck.
            let before = view.updates;
            view.next(&mut stream).await;
            assert_eq!(view.updates, before + 1);
        });
        release.store(true, Ordering::Release);
        for t in stuck {
            pool.block_on(t).unwrap();
        }
    });
}

#[test]
fn a_paused_console_sends_nothing_until_resumed() {
    watchdog("console: pause", 60, || {
        let pool = console_pool(1);
        client(async {
            let mut client = connect(&pool).await;
            let mut stream = watch(&mut client).await;
            let mut view = View::default();
            view.next(&mut stream).await;
            client.pause(PauseRequest {}).await.unwrap();
            // An update already under way may still come; then none.
            let _ = tokio::time::timeout(Duration::from_millis(1200), stream.message()).await;
            let quiet = tokio::time::timeout(Duration::from_millis(2500), stream.message()).await;
            assert!(quiet.is_err(), "an update while paused: {quiet:?}");
            client.resume(ResumeRequest {}).await.unwrap();
            view.next(&mut stream).await;
        });
    });
}

#[test]
fn many_short_tasks_keep_the_table_bounded_and_are_counted_when_let_go() {
    watchdog("console: bounded", 120, || {
        let pool = console_pool(2);
        client(async {
            let mut client = connect(&pool).await;
            let mut stream = watch(&mut client).await;
            let mut view = View::default();
            view.next(&mut stream).await;
            // 50 000 tasks, at most 100 alive at once: a publish a second
            // sees the live ones and at most 4 096 finished.
            const N: usize = 50_000;
            let spawned: HashSet<u64> = pool.block_on(async {
                let mut ids = HashSet::new();
                for _ in 0..N / 100 {
                    let handles: Vec<_> = (0..100).map(|_| pool::spawn(async {})).collect();
                    for h in handles {
                        ids.insert(raw(h.id()));
                        h.await.unwrap();
                    }
                }
                ids
            });
            let ours = |v: &View| v.tasks.keys().filter(|id| spawned.contains(id)).count();
            view.until(
                &mut stream,
                10,
                "every short task seen or counted lost",
                |v| ours(v) as u64 + v.lost >= N as u64,
            )
            .await;
            let publishes = view.updates;
            assert!(
                ours(&view) <= publishes * (4096 + 100),
                "{} tasks seen in {publishes} updates: more than 4 096 finished kept",
                ours(&view)
            );
            assert!(
                view.lost > 0,
                "{N} tasks: some let go before a publish saw them"
            );
        });
    });
}

#[test]
fn a_bad_console_address_is_invalid_input_and_a_taken_port_names_the_address() {
    let err = pool::Builder::new()
        .console("localhost:6669")
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(
        err.to_string().contains("127.0.0.1:6669"),
        "says what to write: {err}"
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let err = pool::Builder::new()
        .console(addr.to_string())
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AddrInUse);
    assert!(
        err.to_string().contains(&addr.to_string()),
        "names {addr}: {err}"
    );
}

#[test]
fn a_pool_without_a_console_has_no_address_and_its_server_stops_with_it() {
    assert_eq!(tests::pool(1).console_addr(), None);
    let pool = console_pool(1);
    let addr = pool.console_addr().unwrap();
    drop(pool);
    // The port is free again: the server's thread ended with the pool.
    std::net::TcpListener::bind(addr).expect("the console's port is let go with the pool");
}

/// A task spawned with a name carries it in the console's `task.name`
/// field (tokio-console's Name column); an unnamed one has no such field.
#[test]
fn a_named_task_shows_its_name_in_the_console() {
    watchdog("console: task names", 60, || {
        let pool = console_pool(1);
        let named = pool::task::Builder::new()
            .name("fetcher")
            .spawn_on(std::future::pending::<()>(), &pool.handle())
            .unwrap();
        let unnamed = pool.spawn(std::future::pending::<()>());
        let (named_id, unnamed_id) = (raw(named.id()), raw(unnamed.id()));
        client(async {
            let mut client = connect(&pool).await;
            let mut stream = watch(&mut client).await;
            let mut view = View::default();
            view.until(&mut stream, 10, "both tasks announced", |v| {
                v.tasks.contains_key(&named_id) && v.tasks.contains_key(&unnamed_id)
            })
            .await;
            assert_eq!(
                view.field(named_id, "task.name").as_deref(),
                Some("fetcher")
            );
            assert_eq!(view.field(unnamed_id, "task.name"), None);
        });
        named.abort();
        unnamed.abort();
    });
}

#[test]
fn a_sleep_and_a_listener_are_console_resources_made_in_this_file_with_their_tasks() {
    watchdog("console: resources", 60, || {
        let pool = console_pool(2);
        let (tx, rx) = std::sync::mpsc::channel();
        let sleeper = pool.spawn(async move {
            tx.send(line!() + 1).unwrap();
            pool::time::sleep(Duration::from_secs(60)).await;
        });
        let (tx, rx2) = std::sync::mpsc::channel();
        let acceptor = pool.spawn(async move {
            tx.send(line!() + 1).unwrap();
            let listener = pool::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let _ = listener.accept().await;
        });
        let (sleep_line, bind_line) = (rx.recv().unwrap(), rx2.recv().unwrap());
        let (sleeper_id, acceptor_id) = (raw(sleeper.id()), raw(acceptor.id()));
        client(async {
            let mut client = connect(&pool).await;
            let mut stream = watch(&mut client).await;
            let mut view = View::default();
            view.until(&mut stream, 10, "the Sleep and the TcpListener", |v| {
                v.resource_at("Sleep", sleep_line).is_some()
                    && v.resource_at("TcpListener", bind_line).is_some()
            })
            .await;
            let sleep = view.resource_at("Sleep", sleep_line).unwrap();
            use console_api::resources::resource::kind::{Kind, Known};
            assert_eq!(
                view.resources[&sleep].kind.as_ref().unwrap().kind,
                Some(Kind::Known(Known::Timer as i32)),
                "a sleep is a timer"
            );
            assert_eq!(view.awaiting(sleep), [sleeper_id], "its task awaits it");
            let listener = view.resource_at("TcpListener", bind_line).unwrap();
            assert_eq!(view.awaiting(listener), [acceptor_id]);
            // Its address is an attribute.
            let attrs = &view.resource_stats[&listener].attributes;
            assert!(
                attrs.iter().any(|a| matches!(
                    a.field.as_ref().and_then(|f| f.value.as_ref()),
                    Some(console_api::field::Value::StrVal(addr)) if addr.starts_with("127.0.0.1:")
                )),
                "{attrs:?}"
            );
            // The task gone, the sleep is dropped.
            sleeper.abort();
            view.until(&mut stream, 10, "the sleep dropped", |v| {
                v.resource_stats[&sleep].dropped_at.is_some()
            })
            .await;
            assert!(view.awaiting(sleep).is_empty());
        });
        acceptor.abort();
    });
}
