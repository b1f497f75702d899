#![deny(warnings)]
// The expansion names `::pool` absolutely: a local module called `pool`, and
// the crate imported under another name, change nothing.
use ::pool as executor;

mod pool {
    pub fn local() -> u32 {
        1
    }
}

#[executor::main]
async fn main() {
    let spawned = executor::spawn(async { 2 }).await.unwrap();
    assert_eq!(pool::local() + spawned, 3);
}
