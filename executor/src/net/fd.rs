//! `impl_as_fd!`: `AsRawFd` and `AsFd` for the socket types.

/// `AsRawFd` and `AsFd` for the socket types (their descriptor, for socket
/// options this module does not wrap).
#[cfg(unix)]
macro_rules! impl_as_fd {
    ($($ty:ty),*) => {$(
        impl std::os::fd::AsRawFd for $ty {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                self.io.source().as_raw_fd()
            }
        }

        impl std::os::fd::AsFd for $ty {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                self.io.source().as_fd()
            }
        }
    )*};
}
#[cfg(unix)]
pub(crate) use impl_as_fd;
