//! A seeded pool: runs you can replay (`Builder::seed`). Its workers are
//! logical, stepped one at a time on the thread that calls `block_on`, in
//! an order a seeded generator picks. The scheduler's own code runs every
//! step; this folder only chooses. See `README.md` here.

pub(crate) mod logical_workers;
pub(crate) mod pick;
pub(crate) mod pool_seed;
