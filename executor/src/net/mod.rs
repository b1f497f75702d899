//! TCP, UDP and Unix domain sockets on the current pool's I/O driver.
//!
//! Each socket is registered, when it is made, with the driver of the
//! current pool (the same rule as [`spawn`](crate::spawn): the global pool
//! where there is no other), and its tasks are woken by that pool's workers,
//! with no thread of its own. The streams implement the futures-io traits
//! ([`futures::io::AsyncRead`], [`futures::io::AsyncWrite`]), so protocol
//! crates written against them work unchanged; `pool::hyper` (feature
//! `hyper`) adapts them to hyper 1.x.
//!
//! Errors from the OS (a taken port, a refused connection, a reset) are
//! returned as they are. A socket used after its pool was dropped returns an
//! `io::Error` instead of waiting forever.
//!
//! Addresses are [`std::net::ToSocketAddrs`]. A host name (in a `&str`,
//! `String`, `(&str, u16)` or `(String, u16)`) is looked up by the system's
//! resolver on one of the pool's blocking threads, never on a worker; an IP
//! address is parsed where it is called, with no thread hop
//! ([`lookup_host`] does the same on its own).
//!
//! # Examples
//!
//! ```
//! use futures::{AsyncReadExt, AsyncWriteExt};
//! use pool::net::{TcpListener, TcpStream};
//!
//! let pool = pool::Pool::new().unwrap();
//! pool.block_on(async {
//!     let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let server = pool::spawn(async move {
//!         let (mut conn, _) = listener.accept().await.unwrap();
//!         let mut buf = [0; 5];
//!         conn.read_exact(&mut buf).await.unwrap();
//!         conn.write_all(&buf).await.unwrap();
//!     });
//!     let mut client = TcpStream::connect(addr).await.unwrap();
//!     client.write_all(b"hello").await.unwrap();
//!     let mut echoed = [0; 5];
//!     client.read_exact(&mut echoed).await.unwrap();
//!     assert_eq!(&echoed, b"hello");
//!     server.await.unwrap();
//! });
//! ```

/// The futures-io traits of a connected stream socket (`TcpStream`,
/// `UnixStream`, and references to them) whose `io` field has the stream
/// transfers of a `PollEvented` (a `PollEvented` itself, or `TcpStream`'s
/// `StreamIo`): no buffering, and `poll_close` shutting down the writing
/// half (the type's `close_write_half`).
macro_rules! impl_stream_io {
    ($($ty:ty),*) => {$(
        impl futures::io::AsyncRead for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.io.poll_read(cx, buf)
            }

            fn poll_read_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.io.poll_read_vectored(cx, bufs)
            }
        }

        impl futures::io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.io.poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.io.poll_write_vectored(cx, bufs)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                // Writes go straight to the socket: nothing is buffered here.
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready($crate::net::closed_write(self.close_write_half()))
            }
        }
    )*};
}

/// What `poll_close` of a stream makes of its `shutdown(Write)`: a peer
/// that went first (`NotConnected`) is no error.
pub(crate) fn closed_write(result: std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotConnected => Err(e),
        _ => Ok(()),
    }
}

pub(crate) mod addr;
#[cfg(unix)]
pub(crate) mod fd;
#[cfg(unix)]
pub(crate) mod spare_fd;
pub(crate) mod tcp;
pub(crate) mod udp;
pub(crate) mod unix;

pub use addr::lookup_host;
pub use tcp::{TcpListener, TcpStream};
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixListener, UnixStream};
