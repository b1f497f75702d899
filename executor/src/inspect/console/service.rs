//! The `Instrument` gRPC service tokio-console connects to, and the
//! publisher that feeds its subscribers.
//!
//! # Invariants
//!
//! * One publisher (`publish_loop`) reads the table: every second, while
//!   the console is not paused, it sends what changed to every subscriber
//!   of updates and the details of their task to every subscriber of
//!   details. Subscriptions and pause/resume reach it as commands, so a new
//!   subscriber is added between two publishes: the others first get what
//!   changed until then, the new one everything as it is then; after that
//!   all get the same updates, and none is told of a task twice.
//! * A subscriber whose channel is full (it reads slower than the pool
//!   changes, for `BUFFER` publishes) or closed is dropped: the publisher
//!   never waits for a client.

use super::proto;
use super::resources::Resources;
use crate::inspect::console::table::TaskTable;
use console_api as api;
use console_api::instrument::instrument_server::Instrument;
use futures::Stream;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::{Request, Response, Status};

/// How often the subscribers are sent what changed (tokio-console's own
/// default publish interval).
pub(super) const PUBLISH_INTERVAL: Duration = Duration::from_secs(1);

/// The updates a subscriber's channel holds before it is dropped as too
/// slow.
const BUFFER: usize = 64;

/// What the service asks of the publisher.
pub(super) enum Command {
    Updates(mpsc::Sender<Result<api::instrument::Update, Status>>),
    Details(u64, mpsc::Sender<Result<api::tasks::TaskDetails, Status>>),
    State(mpsc::Sender<Result<api::instrument::State, Status>>),
    Pause,
    Resume,
}

/// The gRPC service: it passes every request on to the publisher.
pub(super) struct Service {
    pub(super) table: Arc<TaskTable>,
    pub(super) commands: mpsc::UnboundedSender<Command>,
}

/// A channel's receiver as the response stream tonic wants.
pub(super) struct Updates<T>(mpsc::Receiver<Result<T, Status>>);

impl<T> Stream for Updates<T> {
    type Item = Result<T, Status>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

impl Service {
    fn subscribe<T>(
        &self,
        command: impl FnOnce(mpsc::Sender<Result<T, Status>>) -> Command,
    ) -> Result<Response<Updates<T>>, Status> {
        let (tx, rx) = mpsc::channel(BUFFER);
        self.commands
            .send(command(tx))
            .map_err(|_| Status::unavailable("the pool is shutting down"))?;
        Ok(Response::new(Updates(rx)))
    }
}

#[tonic::async_trait]
impl Instrument for Service {
    type WatchUpdatesStream = Updates<api::instrument::Update>;
    type WatchTaskDetailsStream = Updates<api::tasks::TaskDetails>;
    type WatchStateStream = Updates<api::instrument::State>;

    async fn watch_updates(
        &self,
        _: Request<api::instrument::InstrumentRequest>,
    ) -> Result<Response<Self::WatchUpdatesStream>, Status> {
        self.subscribe(Command::Updates)
    }

    async fn watch_task_details(
        &self,
        request: Request<api::instrument::TaskDetailsRequest>,
    ) -> Result<Response<Self::WatchTaskDetailsStream>, Status> {
        let id = request
            .into_inner()
            .id
            .ok_or_else(|| Status::invalid_argument("a task details request names a task id"))?
            .id;
        if self.table.find(id).is_none() {
            return Err(Status::not_found(format!(
                "no task {id} in this pool (finished tasks are kept about 10 s)"
            )));
        }
        self.subscribe(|tx| Command::Details(id, tx))
    }

    async fn watch_state(
        &self,
        _: Request<api::instrument::StateRequest>,
    ) -> Result<Response<Self::WatchStateStream>, Status> {
        self.subscribe(Command::State)
    }

    async fn pause(
        &self,
        _: Request<api::instrument::PauseRequest>,
    ) -> Result<Response<api::instrument::PauseResponse>, Status> {
        let _ = self.commands.send(Command::Pause);
        Ok(Response::new(api::instrument::PauseResponse {}))
    }

    async fn resume(
        &self,
        _: Request<api::instrument::ResumeRequest>,
    ) -> Result<Response<api::instrument::ResumeResponse>, Status> {
        let _ = self.commands.send(Command::Resume);
        Ok(Response::new(api::instrument::ResumeResponse {}))
    }
}

/// Send `message` to every sender of `subscribers`, dropping those that
/// are full or closed.
fn send_all<T: Clone>(subscribers: &mut Vec<mpsc::Sender<Result<T, Status>>>, messages: &[T]) {
    subscribers.retain(|tx| messages.iter().all(|m| tx.try_send(Ok(m.clone())).is_ok()));
}

/// The publisher (see the module's invariants); returns when the service
/// is gone.
pub(super) async fn publish_loop(
    table: Arc<TaskTable>,
    mut resources: Resources,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let mut updates = Vec::new();
    let mut details: Vec<(u64, mpsc::Sender<Result<api::tasks::TaskDetails, Status>>)> = Vec::new();
    let mut states = Vec::new();
    let mut paused = false;
    let mut tick = tokio::time::interval(PUBLISH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if paused {
                    continue;
                }
                if !updates.is_empty() {
                    let looked = resources.look();
                    send_all(&mut updates, &proto::updates(table.publish(false), false, looked));
                }
                details.retain(|(id, tx)| match table.find(*id) {
                    Some(entry) => tx.try_send(Ok(proto::details(&entry))).is_ok(),
                    // Let go of (finished over `RETAIN` ago): the stream ends.
                    None => false,
                });
            }
            command = commands.recv() => match command {
                None => return,
                Some(Command::Updates(tx)) => {
                    let looked = resources.look();
                    if !updates.is_empty() {
                        send_all(&mut updates, &proto::updates(table.publish(false), false, looked));
                    } else {
                        // Nobody to send to: mark it all sent all the same.
                        let _ = table.publish(false);
                    }
                    let mut new = vec![tx];
                    let all = proto::updates(table.publish(true), true, resources.all());
                    send_all(&mut new, &all);
                    updates.extend(new);
                }
                Some(Command::Details(id, tx)) => {
                    if let Some(entry) = table.find(id) {
                        if tx.try_send(Ok(proto::details(&entry))).is_ok() {
                            details.push((id, tx));
                        }
                    }
                }
                Some(Command::State(tx)) => {
                    let mut new = vec![tx];
                    send_all(&mut new, &[state(paused)]);
                    states.extend(new);
                }
                Some(Command::Pause) => {
                    paused = true;
                    send_all(&mut states, &[state(paused)]);
                }
                Some(Command::Resume) => {
                    paused = false;
                    send_all(&mut states, &[state(paused)]);
                }
            }
        }
    }
}

fn state(paused: bool) -> api::instrument::State {
    let temporality = if paused {
        api::instrument::Temporality::Paused
    } else {
        api::instrument::Temporality::Live
    };
    api::instrument::State {
        temporality: temporality as i32,
    }
}
