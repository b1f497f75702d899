#[pool::main(seed = 5, network)]
async fn main() {
    let listener = pool::net::TcpListener::bind("0.0.0.0:80").await.unwrap();
    assert_eq!(listener.local_addr().unwrap().port(), 80);
}
