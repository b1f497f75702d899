//! A socket's address read off its descriptor (`getpeername`,
//! `getsockname`), in words, for the live-task dump's wait points and the
//! console's resources: `127.0.0.1:80`, `[::1]:443`, `/run/app.sock`,
//! `(unnamed)`.
//!
//! The descriptor is a number recorded when its task began to wait; the
//! task is idle, so the socket it waits on is still open, unless the task
//! was polled (and dropped it) since the dump read its record. Then the
//! number names whatever the OS gave it next, or nothing: a wrong address
//! in a diagnostic at worst, never a touch of anything but the number.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// The address of the peer of the socket `fd`, if it has one.
pub(crate) fn peer(fd: i32) -> Option<String> {
    name_of(fd, |fd, addr, len| {
        // SAFETY: `addr` points to `*len` writable bytes of a
        // `sockaddr_storage`, which `getpeername` fills up to `*len`.
        unsafe { libc::getpeername(fd, addr, len) }
    })
}

/// The address the socket `fd` is bound to.
pub(crate) fn local(fd: i32) -> Option<String> {
    name_of(fd, |fd, addr, len| {
        // SAFETY: as in `peer`.
        unsafe { libc::getsockname(fd, addr, len) }
    })
}

fn name_of(
    fd: i32,
    call: impl FnOnce(i32, *mut libc::sockaddr, *mut libc::socklen_t) -> i32,
) -> Option<String> {
    // SAFETY: all-zero bytes are a valid `sockaddr_storage`.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    if call(fd, (&raw mut storage).cast(), &mut len) != 0 {
        return None;
    }
    let ptr = (&raw const storage).cast::<u8>();
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the OS wrote a `sockaddr_in` for this family, and
            // `sockaddr_storage` is large and aligned enough for it.
            let a = unsafe { &*ptr.cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(a.sin_port))).to_string())
        }
        libc::AF_INET6 => {
            // SAFETY: as above, a `sockaddr_in6`.
            let a = unsafe { &*ptr.cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            let addr = SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            );
            Some(SocketAddr::V6(addr).to_string())
        }
        libc::AF_UNIX => {
            // SAFETY: as above, a `sockaddr_un`, of which `len` bytes are
            // set.
            let a = unsafe { &*ptr.cast::<libc::sockaddr_un>() };
            let offset = std::mem::size_of::<libc::sa_family_t>();
            let path_len = (len as usize).saturating_sub(offset).min(a.sun_path.len());
            let bytes: Vec<u8> = a.sun_path[..path_len].iter().map(|&c| c as u8).collect();
            Some(match bytes.split(|&b| b == 0).next() {
                // An abstract name starts with a NUL byte.
                _ if bytes.first() == Some(&0) && bytes.len() > 1 => {
                    format!("@{}", String::from_utf8_lossy(&bytes[1..]))
                }
                Some(path) if !path.is_empty() => String::from_utf8_lossy(path).into_owned(),
                _ => "(unnamed)".to_string(),
            })
        }
        _ => None,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn reads_a_tcp_and_a_unix_sockets_addresses() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stream = std::net::TcpStream::connect(addr).unwrap();
        assert_eq!(local(listener.as_raw_fd()), Some(addr.to_string()));
        assert_eq!(peer(stream.as_raw_fd()), Some(addr.to_string()));
        assert_eq!(peer(listener.as_raw_fd()), None, "a listener has no peer");

        let dir = std::env::temp_dir().join(format!("pool-addr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let client = std::os::unix::net::UnixStream::connect(&path).unwrap();
        assert_eq!(local(unix.as_raw_fd()), Some(path.display().to_string()));
        assert_eq!(peer(client.as_raw_fd()), Some(path.display().to_string()));
        assert_eq!(local(client.as_raw_fd()), Some("(unnamed)".to_string()));
        std::fs::remove_dir_all(&dir).unwrap();

        let file = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(peer(file.as_raw_fd()), None, "not a socket");
    }
}
