//! Code shared by the examples and their tests: the task runner's workload.

pub mod task_runner;
