#![deny(warnings, unused_qualifications, rust_2018_idioms)]

#[pool::main]
async fn main() {
    let v = pool::spawn(async { 1 }).await.unwrap();
    assert_eq!(v, 1);
}
