//! Feature `tokio-io`: tokio's `AsyncRead` and `AsyncWrite` on every stream
//! of pool's own (sockets, process pipes, `Async`), through their futures-io
//! impls, so that tokio-typed code (tokio-rustls, tokio-util's codecs,
//! hyper-util's `TokioIo`, tonic, axum) takes pool's streams directly.
//! tokio is a dependency with no runtime feature: only its two traits.

/// `impl tokio::io::{AsyncRead, AsyncWrite}` for each `[generics] Type`
/// whose futures-io impl of the same direction exists, by delegating to it.
/// `read:` types get `AsyncRead`, `write:` types `AsyncWrite`.
macro_rules! impl_tokio_io {
    (read: $([$($g:tt)*] $ty:ty),* $(,)?) => {$(
        impl<$($g)*> tokio::io::AsyncRead for $ty
        where
            $ty: futures::io::AsyncRead + Unpin,
        {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                // `initialize_unfilled` zeroes the uninitialized tail once:
                // the `ReadBuf` remembers what is initialized across reads.
                let n = std::task::ready!(futures::io::AsyncRead::poll_read(
                    self,
                    cx,
                    buf.initialize_unfilled()
                ))?;
                buf.advance(n);
                std::task::Poll::Ready(Ok(()))
            }
        }
    )*};
    (write: $([$($g:tt)*] $ty:ty),* $(,)?) => {$(
        impl<$($g)*> tokio::io::AsyncWrite for $ty
        where
            $ty: futures::io::AsyncWrite + Unpin,
        {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                futures::io::AsyncWrite::poll_write(self, cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                futures::io::AsyncWrite::poll_write_vectored(self, cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                futures::io::AsyncWrite::poll_flush(self, cx)
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                futures::io::AsyncWrite::poll_close(self, cx)
            }
        }
    )*};
}

pub(crate) use impl_tokio_io;
