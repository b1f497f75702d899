//! tonic's hello world on pool, server and client, with no tokio runtime
//! of its own: the server is `pool::hyper::serve` over tonic's `Routes`
//! (the one pool-specific line), the client tonic's generated
//! `GreeterClient` over a pool channel (`examples::greeter::channel`).
//!
//! ```text
//! cargo run -p examples --example tonic_hello -- [NAME...]
//! ```
//!
//! Serves on a local port, then says hello to each NAME (default `world`),
//! printing `listening on ADDR`, then one reply per name, then the error a
//! bad request gets.

use examples::greeter::{channel, GreeterClient, GreeterServer, HelloRequest, MyGreeter};
use std::error::Error;

#[pool::main]
async fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    let listener = pool::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    println!("listening on {addr}");
    let routes = tonic::service::Routes::new(GreeterServer::new(MyGreeter));
    pool::spawn(pool::hyper::serve(listener, routes));

    let mut client = GreeterClient::with_origin(channel(), format!("http://{addr}").parse()?);
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        names.push("world".to_owned());
    }
    for name in names {
        let reply = client.say_hello(HelloRequest { name }).await?;
        println!("{}", reply.into_inner().message);
    }
    let status = client
        .say_hello(HelloRequest::default())
        .await
        .expect_err("an empty name is refused");
    println!("{:?}: {}", status.code(), status.message());
    Ok(())
}
