//! The tonic example's service, `helloworld.Greeter` (tonic's own
//! hello-world), and a gRPC client channel on pool.
//!
//! `greeter/helloworld.rs` is tonic-prost-build's output for
//! `examples/proto/helloworld.proto`, checked in so that building needs no
//! `protoc`. It was made with tonic-prost-build 0.14 and
//! protoc-bin-vendored 3:
//!
//! ```text
//! tonic_prost_build::configure()
//!     .build_transport(false)   // no tonic::transport: the channel is below
//!     .out_dir("examples/src/greeter")
//!     .compile_protos(&["examples/proto/helloworld.proto"], &["examples/proto"])
//! ```
//!
//! Serving needs nothing of tokio: `GreeterServer` is a tower service, and
//! `pool::hyper::serve` speaks HTTP/2 to gRPC clients. The client side is
//! hyper-util's client on `pool::hyper::Connector` (HTTP/2 only), which
//! tonic's generated client takes as its channel; tonic's own
//! `transport::Channel` would need tokio-compat.

#[allow(missing_docs, clippy::all, clippy::pedantic)]
mod helloworld {
    include!("greeter/helloworld.rs");
}

pub use helloworld::greeter_client::GreeterClient;
pub use helloworld::greeter_server::{Greeter, GreeterServer};
pub use helloworld::{HelloReply, HelloRequest};

use hyper_util::client::legacy::Client;
use pool::hyper::{Connector, Executor, Timer};
use tonic::{Request, Response, Status};

/// Greets by name.
#[derive(Debug, Default)]
pub struct MyGreeter;

#[tonic::async_trait]
impl Greeter for MyGreeter {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        let name = request.into_inner().name;
        if name.is_empty() {
            return Err(Status::invalid_argument(
                "say who to greet: `name` is empty",
            ));
        }
        Ok(Response::new(HelloReply {
            message: format!("Hello {name}!"),
        }))
    }
}

/// A gRPC channel on pool: HTTP/2 over `pool::net::TcpStream`.
pub type Channel = Client<Connector, tonic::body::Body>;

/// A new channel (connections are made on first use, and reused).
pub fn channel() -> Channel {
    Client::builder(Executor::new())
        .timer(Timer::new())
        .http2_only(true)
        .build(Connector::new())
}
