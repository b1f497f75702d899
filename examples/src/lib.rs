//! Code shared by the examples, their tests and the benchmarks: the task
//! runner's workload, the HTTP example's service, the axum app, the reference
//! service, the tonic greeter, and the timeline renderer.

pub mod axum_app;
pub mod greeter;
pub mod http;
pub mod reference;
pub mod task_runner;
pub mod trace_svg;
