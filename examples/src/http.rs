//! The HTTP example's service, shared with the benchmarks' `http_server` so
//! that every runtime there serves exactly the same requests.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::time::{Duration, Instant};

/// `/`: a greeting. `/work?us=N`: the greeting after N microseconds of CPU
/// (10 by default). Anything else: 404.
pub async fn hello(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    match req.uri().path() {
        "/" => {}
        "/work" => {
            let us: u64 = req
                .uri()
                .query()
                .and_then(|q| q.strip_prefix("us="))
                .and_then(|n| n.parse().ok())
                .unwrap_or(10);
            let until = Instant::now() + Duration::from_micros(us);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        _ => {
            let mut not_found = Response::new(Full::new(Bytes::from_static(b"not found\n")));
            *not_found.status_mut() = StatusCode::NOT_FOUND;
            return Ok(not_found);
        }
    }
    Ok(Response::new(Full::new(Bytes::from_static(
        b"Hello, World!",
    ))))
}
