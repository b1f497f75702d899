//! Which pool, worker and task are current on this thread: every
//! thread-local of the crate, and the functions that read them.
//!
//! Part of the scheduler's floor (it names the scheduler's types; the
//! scheduler reads it), so the floors above ask here and the floors below
//! never do: what a lower floor needs of a thread (the deadlock handler's
//! mark, the timeline's tag) is handed to it by the scheduler. This file
//! only declares the four below: each is imported from itself.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | this map |
//! | `pool_cells.rs` | the cells that name the scheduler's types: the current worker, the entered pool, the pool a blocking or tokio blocking thread serves, `block_on`'s cached wake signal; `as_outsider`; `task_id` |
//! | `plain_cells.rs` | the cells of plain data: a blocking thread's task, outside spawns' shard and ids, the deadlock handler's mark, the pool whose clock a `block_on` thread holds, the timeline tag, the cooperative budget |
//! | `thread_kind.rs` | `ThreadKind`: which of a pool's threads this is (`ThreadKind::current`) |
//! | `current.rs` | `with_current`, `with_current_worker`, `try_current`, `enabled_driver`, `with_current_driver`, `in_a_pool`: the current pool, with the global pool's fallback |

pub(crate) mod current;
pub(crate) mod plain_cells;
pub(crate) mod pool_cells;
pub(crate) mod thread_kind;
