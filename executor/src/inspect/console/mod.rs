//! Feature `console`: tokio-console's gRPC service (console-api's
//! `rs.tokio.console.instrument.Instrument`), served by the pool itself, so
//! that `tokio-console http://ADDR` lists a pool's tasks with no `tracing`
//! subscriber and no `--cfg tokio_unstable`; and the task table it serves,
//! which the scheduler records into.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | this map: it only declares |
//! | `record.rs` | `Console`: a pool's task table and address, recorded at spawn, poll, wake and drop; `POOL_CONSOLE` |
//! | `stats.rs` | `TaskStats`: one task's figures; the console clock; `Spread`, durations by bucket |
//! | `table.rs` | `TaskTable`: the tasks by id in locked shards, live and finished (kept a while), spare entries reused; what a publish sends |
//! | `counting_waker.rs` | the counting waker a task is polled with |
//! | `server.rs` | `Server`: the console's thread, its runtime, start and stop |
//! | `service.rs` | the `Instrument` service and the publisher of updates |
//! | `proto.rs` | the table's tasks as console-api messages |
//! | `resources.rs` | the Resources view: what idle tasks wait on (timers, sockets, pipes, signals, children), looked at each publish |

pub(crate) mod counting_waker;
pub(crate) mod proto;
pub(crate) mod record;
pub(crate) mod resources;
pub(crate) mod server;
pub(crate) mod service;
pub(crate) mod stats;
pub(crate) mod table;
