//! Code shared by the examples, their tests and the benchmarks: the task
//! runner's workload and the HTTP example's service.

pub mod http;
pub mod task_runner;
