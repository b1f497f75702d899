//! The console's Resources view: pool's timers, sockets, pipes,
//! descriptors, signals and child processes that tasks are waiting on, and
//! for each the tasks awaiting it (console-api's `ResourceUpdate` and
//! `AsyncOpUpdate`), read from the records of what each idle task's last
//! poll waited on (`task/waits.rs`), with no `tracing`.
//!
//! At each publish (every second) the publisher looks at every live idle
//! task's waits. A resource is one thing waited on (a sleep: its kind, the
//! line that made it and its deadline; a socket: its type, the line that
//! made it and its descriptor), an async op one task's wait on it. One new
//! since the last look is sent as new, with the time its wait began; one
//! no longer waited on is sent as dropped.
//!
//! # Invariants
//!
//! * The workers do nothing for this: the records are the ones the dump
//!   reads, and only the publisher's thread reads them here, under one
//!   registry shard's lock at a time.
//! * A resource is seen while a task waits on it at a look: one awaited
//!   for less than a second between two looks may never appear, and a
//!   socket between two waits (its task running or queued) shows as
//!   dropped and comes back as a new resource. That is what sampling costs
//!   against tokio's instrumentation of every resource's life, which costs
//!   every timer a span.
//! * Every resource and async op sent new carries its stats in the same
//!   update, with `created_at`, and every async op's stats `poll_stats`
//!   (tokio-console skips the first without them and panics on the
//!   second without).

use crate::inspect::addr;
use crate::scheduler::registry::Registry;
use crate::task::site;
use crate::task::waits::{Resource, Wait, WaitKind, NO_SITE};
use console_api as api;
use std::collections::HashMap;
use std::sync::Weak;
use std::time::{Duration, SystemTime};

/// The metadata ids of resources of each kind, and of their async ops.
/// (Tasks' is 1, `proto.rs`.)
const META_TIMER: u64 = 2;
const META_NET: u64 = 3;
const META_IO: u64 = 4;
const META_SIGNAL: u64 = 5;
const META_PROCESS: u64 = 6;
const META_ASYNC_OP: u64 = 7;

/// What makes one resource: its kind and resource type, its site and a
/// number (a sleep's deadline, an interval's period, a descriptor, a
/// signal, a process id).
type Key = (WaitKind, u8, u16, u64);

/// The resource `wait` is on: a socket waited on for reading and for
/// writing is one, an interval is one across its ticks.
fn key(wait: &Wait) -> Key {
    match wait.kind {
        WaitKind::Interval => (WaitKind::Interval, 0, wait.site, wait.timer_asked_bits()),
        WaitKind::Read | WaitKind::Write => (WaitKind::Read, wait.on, wait.site, wait.a),
        kind => (kind, wait.on, wait.site, wait.a),
    }
}

/// A resource being waited on at a look: the wait, the longest any task
/// has waited on it, and each task waiting with how long.
type Waiting = (Wait, Duration, Vec<(u64, Duration)>);

/// One resource being waited on, as last sent.
struct Seen {
    id: u64,
    created: SystemTime,
    wait: Wait,
    /// The tasks waiting on it: their async op's id and since when.
    ops: HashMap<u64, (u64, SystemTime)>,
}

/// The resources the publisher has sent, and where its ids are.
pub(super) struct Resources {
    registry: Weak<Registry>,
    seen: HashMap<Key, Seen>,
    next_id: u64,
}

/// A look's updates, for the subscribers.
#[derive(Default)]
pub(super) struct Looked {
    pub(super) resources: api::resources::ResourceUpdate,
    pub(super) async_ops: api::async_ops::AsyncOpUpdate,
}

impl Looked {
    /// `seen` is new (or new to this subscriber).
    fn announce(&mut self, seen: &Seen) {
        self.resources.new_resources.push(resource(seen));
        self.resources
            .stats_update
            .insert(seen.id, resource_stats(seen, None));
    }

    /// `task`'s async op `op` on `seen`, since `created`, is new.
    fn announce_op(&mut self, seen: &Seen, task: u64, (op, created): (u64, SystemTime)) {
        self.async_ops
            .new_async_ops
            .push(async_op(op, seen.id, &seen.wait));
        self.async_ops
            .stats_update
            .insert(op, op_stats(task, created, None));
    }

    /// `task`'s async op `op`, since `created`, ended `now`.
    fn end_op(&mut self, task: u64, (op, created): (u64, SystemTime), now: SystemTime) {
        self.async_ops
            .stats_update
            .insert(op, op_stats(task, created, Some(now)));
    }
}

/// Is `wait` on a resource (not a task, a set or a file operation)?
fn is_resource(wait: &Wait) -> bool {
    !matches!(
        wait.kind,
        WaitKind::Join | WaitKind::JoinSet | WaitKind::File
    )
}

impl Resources {
    pub(super) fn new(registry: Weak<Registry>) -> Resources {
        Resources {
            registry,
            seen: HashMap::new(),
            next_id: 1,
        }
    }

    /// Look at every idle task's waits: what is new since the last look,
    /// and what is gone.
    pub(super) fn look(&mut self) -> Looked {
        let now = SystemTime::now();
        let mut current: HashMap<Key, Waiting> = HashMap::new();
        if let Some(registry) = self.registry.upgrade() {
            let coarse_now = registry.clock().now();
            registry.tasks().for_each_live(|header, _| {
                if !header.is_live_task() || header.activity().0 {
                    return;
                }
                let Some(copy) = header.waits() else {
                    return;
                };
                for (wait, since) in copy.waits.iter().filter(|(w, _)| is_resource(w)) {
                    let since = Duration::from_nanos(
                        u64::from(coarse_now.wrapping_sub(*since))
                            * crate::task::coarse_clock::COARSE_TICK_NS,
                    );
                    let key = key(wait);
                    let entry = current.entry(key).or_insert((*wait, since, Vec::new()));
                    entry.1 = entry.1.max(since);
                    entry.2.push((header.id().as_u64(), since));
                }
            });
        }
        let mut looked = Looked::default();
        // Gone: dropped.
        let gone: Vec<Key> = self
            .seen
            .keys()
            .filter(|k| !current.contains_key(k))
            .copied()
            .collect();
        for key in gone {
            let seen = self.seen.remove(&key).expect("a key just listed");
            looked
                .resources
                .stats_update
                .insert(seen.id, resource_stats(&seen, Some(now)));
            for (&task, &op) in &seen.ops {
                looked.end_op(task, op, now);
            }
        }
        for (key, (wait, since, tasks)) in current {
            let next_id = &mut self.next_id;
            let seen = self.seen.entry(key).or_insert_with(|| {
                let id = *next_id;
                *next_id += 1;
                let seen = Seen {
                    id,
                    created: now.checked_sub(since).unwrap_or(now),
                    wait,
                    ops: HashMap::new(),
                };
                looked.announce(&seen);
                seen
            });
            let waiting: Vec<u64> = tasks.iter().map(|t| t.0).collect();
            let left: Vec<u64> = seen
                .ops
                .keys()
                .filter(|t| !waiting.contains(t))
                .copied()
                .collect();
            for task in left {
                let op = seen.ops.remove(&task).expect("a task just listed");
                looked.end_op(task, op, now);
            }
            for (task, since) in tasks {
                if seen.ops.contains_key(&task) {
                    continue;
                }
                let op = (*next_id, now.checked_sub(since).unwrap_or(now));
                *next_id += 1;
                seen.ops.insert(task, op);
                looked.announce_op(seen, task, op);
            }
        }
        looked
    }

    /// Everything being waited on now, as new, for a new subscriber.
    pub(super) fn all(&self) -> Looked {
        let mut looked = Looked::default();
        for seen in self.seen.values() {
            looked.announce(seen);
            for (&task, &op) in &seen.ops {
                looked.announce_op(seen, task, op);
            }
        }
        looked
    }
}

/// The metadata of each kind of resource and of async ops.
pub(super) fn metadata() -> Vec<api::register_metadata::NewMetadata> {
    let meta =
        |id, name: &str, target: &str, fields: &[&str]| api::register_metadata::NewMetadata {
            id: Some(api::MetaId { id }),
            metadata: Some(api::Metadata {
                name: name.to_string(),
                target: target.to_string(),
                module_path: target.to_string(),
                location: None,
                kind: api::metadata::Kind::Span as i32,
                level: api::metadata::Level::Trace as i32,
                field_names: fields.iter().map(|f| f.to_string()).collect(),
            }),
        };
    vec![
        meta(
            META_TIMER,
            "runtime.resource",
            "pool::time",
            &["duration", "deadline"],
        ),
        meta(META_NET, "runtime.resource", "pool::net", &["fd", "addr"]),
        meta(META_IO, "runtime.resource", "pool::io", &["fd"]),
        meta(META_SIGNAL, "runtime.resource", "pool::signal", &["signal"]),
        meta(META_PROCESS, "runtime.resource", "pool::process", &["pid"]),
        meta(META_ASYNC_OP, "runtime.resource.async_op", "pool", &[]),
    ]
}

/// A resource's kind, concrete type, metadata and attributes.
fn describe(
    wait: &Wait,
) -> (
    api::resources::resource::Kind,
    &'static str,
    u64,
    Vec<api::Attribute>,
) {
    use api::resources::resource::kind::{Kind, Known};
    let other = |k: &str| api::resources::resource::Kind {
        kind: Some(Kind::Other(k.to_string())),
    };
    let attr =
        |meta: u64, name: &str, value: api::field::Value, unit: Option<&str>| api::Attribute {
            field: Some(api::Field {
                metadata_id: Some(api::MetaId { id: meta }),
                name: Some(api::field::Name::StrName(name.to_string())),
                value: Some(value),
            }),
            unit: unit.map(str::to_string),
        };
    match wait.kind {
        WaitKind::Sleep | WaitKind::Timeout | WaitKind::Interval => {
            let timer = api::resources::resource::Kind {
                kind: Some(Kind::Known(Known::Timer as i32)),
            };
            let concrete = match wait.kind {
                WaitKind::Sleep => "Sleep",
                WaitKind::Timeout => "Timeout",
                _ => "Interval",
            };
            let mut attrs = Vec::new();
            if let (_, Some(asked)) = wait.timer_parts() {
                let ms = asked.as_millis() as u64;
                attrs.push(attr(
                    META_TIMER,
                    "duration",
                    api::field::Value::U64Val(ms),
                    Some("ms"),
                ));
            }
            (timer, concrete, META_TIMER, attrs)
        }
        WaitKind::Read | WaitKind::Write => {
            let resource = Resource::from_u8(wait.on);
            let fd = wait.a as i32;
            let mut attrs = vec![attr(
                META_NET,
                "fd",
                api::field::Value::U64Val(wait.a),
                None,
            )];
            match resource {
                Resource::TcpStream | Resource::UnixStream => {
                    if let Some(peer) = addr::peer(fd) {
                        attrs.push(attr(
                            META_NET,
                            "addr",
                            api::field::Value::StrVal(peer),
                            None,
                        ));
                    }
                    (other("net"), resource.name(), META_NET, attrs)
                }
                Resource::TcpListener
                | Resource::UnixListener
                | Resource::UdpSocket
                | Resource::UnixDatagram => {
                    if let Some(local) = addr::local(fd) {
                        attrs.push(attr(
                            META_NET,
                            "addr",
                            api::field::Value::StrVal(local),
                            None,
                        ));
                    }
                    (other("net"), resource.name(), META_NET, attrs)
                }
                _ => {
                    let attrs = vec![attr(META_IO, "fd", api::field::Value::U64Val(wait.a), None)];
                    (other("io"), resource.name(), META_IO, attrs)
                }
            }
        }
        WaitKind::Signal => (
            other("signal"),
            "Signal",
            META_SIGNAL,
            vec![attr(
                META_SIGNAL,
                "signal",
                api::field::Value::U64Val(wait.a),
                None,
            )],
        ),
        WaitKind::Child => (
            other("process"),
            "Child",
            META_PROCESS,
            vec![attr(
                META_PROCESS,
                "pid",
                api::field::Value::U64Val(wait.a),
                None,
            )],
        ),
        WaitKind::Join | WaitKind::JoinSet | WaitKind::File => {
            unreachable!("not a resource (`is_resource`)")
        }
    }
}

fn location(wait: &Wait) -> Option<api::Location> {
    (wait.site != NO_SITE).then(|| {
        let at = site::location(wait.site);
        api::Location {
            file: Some(at.file().to_string()),
            module_path: None,
            line: Some(at.line()),
            column: Some(at.column()),
        }
    })
}

fn resource(seen: &Seen) -> api::resources::Resource {
    let (kind, concrete, meta, _) = describe(&seen.wait);
    api::resources::Resource {
        id: Some(api::Id { id: seen.id }),
        kind: Some(kind),
        metadata: Some(api::MetaId { id: meta }),
        concrete_type: concrete.to_string(),
        location: location(&seen.wait),
        parent_resource_id: None,
        is_internal: false,
    }
}

fn resource_stats(seen: &Seen, dropped: Option<SystemTime>) -> api::resources::Stats {
    let (_, _, _, attributes) = describe(&seen.wait);
    api::resources::Stats {
        created_at: Some(seen.created.into()),
        dropped_at: dropped.map(Into::into),
        attributes,
    }
}

fn async_op(id: u64, resource: u64, wait: &Wait) -> api::async_ops::AsyncOp {
    let source = match (wait.kind, Resource::from_u8(wait.on)) {
        (WaitKind::Sleep | WaitKind::Timeout | WaitKind::Interval, _) => "Sleep::poll",
        (WaitKind::Read, Resource::TcpListener | Resource::UnixListener) => "poll_accept",
        (WaitKind::Read, _) => "poll_read",
        (WaitKind::Write, _) => "poll_write",
        (WaitKind::Signal, _) => "Signal::poll_recv",
        (WaitKind::Child, _) => "Child::wait",
        _ => "poll",
    };
    api::async_ops::AsyncOp {
        id: Some(api::Id { id }),
        metadata: Some(api::MetaId { id: META_ASYNC_OP }),
        source: source.to_string(),
        parent_async_op_id: None,
        resource_id: Some(api::Id { id: resource }),
    }
}

fn op_stats(task: u64, created: SystemTime, dropped: Option<SystemTime>) -> api::async_ops::Stats {
    api::async_ops::Stats {
        created_at: Some(created.into()),
        dropped_at: dropped.map(Into::into),
        task_id: Some(api::Id { id: task }),
        poll_stats: Some(api::PollStats {
            polls: 1,
            first_poll: Some(created.into()),
            last_poll_started: Some(created.into()),
            last_poll_ended: Some(created.into()),
            busy_time: Some(prost_types::Duration::default()),
        }),
        attributes: Vec::new(),
    }
}
