//! Code shared by the examples, their tests and the benchmarks: the task
//! runner's workload, the HTTP example's service, the axum app, the reference
//! service, the tonic greeter, the timeline renderer, and the counter with
//! a retry bug that a simulated partition shows.

pub mod axum_app;
pub mod greeter;
pub mod http;
pub mod reference;
pub mod retry_counter;
pub mod task_runner;
pub mod trace_svg;
