#![deny(warnings)]

/// Doc comments stay.
#[pool::test(worker_threads = 2)]
#[should_panic(expected = "boom")]
async fn panics() {
    panic!("boom");
}

#[pool::test]
async fn returns_result() -> Result<(), pool::JoinError> {
    pool::spawn(async {}).await
}

fn main() {}
