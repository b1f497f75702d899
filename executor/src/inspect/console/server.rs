//! Feature `console`: tokio-console's gRPC service (console-api's
//! `rs.tokio.console.instrument.Instrument`), served by the pool itself, so
//! that `tokio-console http://ADDR` lists a pool's tasks with no `tracing`
//! subscriber and no `--cfg tokio_unstable`.
//!
//! The data is the pool's task table (`record.rs`); the server only
//! serves it.
//!
//! # Invariants
//!
//! * The server runs on a thread of its own (`<prefix>-console`), in a
//!   tokio current-thread runtime of its own, never on a worker: a pool
//!   whose every worker is stuck in a poll is still served, and the
//!   console's work never delays a task.
//! * It reads the table only, under the table's locks (each held for a
//!   map operation): it never polls, wakes or drops a task.
//! * `stop` ends the service and the publisher and joins the thread; the
//!   pool's shutdown calls it first thing.

use super::resources::Resources;
use super::service::{publish_loop, Service};
use super::table::TaskTable;
use crate::context::thread_kind::ThreadKind;
use crate::scheduler::registry::Registry;
use console_api::instrument::instrument_server::InstrumentServer;
use std::io;
use std::net::TcpListener;
use std::sync::{Arc, Weak};
use std::thread::{self, JoinHandle};
use tokio::sync::{mpsc, oneshot};

/// The console's server: its thread, and what stops it.
#[derive(Debug)]
pub(crate) struct Server {
    stop: oneshot::Sender<()>,
    thread: JoinHandle<()>,
}

impl Server {
    /// Serve `table`, and what the tasks of `registry` wait on (the
    /// Resources view), on `listener` from a new thread of pool `prefix`
    /// (`ThreadKind::Console`).
    pub(crate) fn start(
        table: Arc<TaskTable>,
        registry: Weak<Registry>,
        listener: TcpListener,
        prefix: &str,
    ) -> io::Result<Server> {
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        // Registered with the runtime's reactor here, so that an error
        // fails `build`.
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = ThreadKind::Console.spawn(prefix, thread::Builder::new(), move || {
            runtime.block_on(serve(table, Resources::new(registry), listener, stopped));
        })?;
        Ok(Server { stop, thread })
    }

    /// Stop serving, and join the thread.
    pub(crate) fn stop(self) {
        let _ = self.stop.send(());
        // The thread catches nothing: a panic in it was reported already.
        let _ = self.thread.join();
    }
}

/// Serve until `stopped` fires (or its sender is gone). Not a graceful
/// shutdown, which would wait for the clients' endless streams: the
/// runtime, dropped with the thread, drops every connection.
async fn serve(
    table: Arc<TaskTable>,
    resources: Resources,
    listener: tokio::net::TcpListener,
    stopped: oneshot::Receiver<()>,
) {
    let (commands, received) = mpsc::unbounded_channel();
    tokio::spawn(publish_loop(Arc::clone(&table), resources, received));
    let service = InstrumentServer::new(Service { table, commands });
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::select! {
        served = tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming) => {
            if let Err(e) = served {
                eprintln!("pool: the console's server stopped: {e}");
            }
        }
        _ = stopped => {}
    }
}
