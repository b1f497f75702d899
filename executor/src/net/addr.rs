//! Resolving addresses without blocking a worker: [`lookup_host`], and the
//! resolution inside `TcpListener::bind`, `TcpStream::connect`,
//! `UdpSocket::bind` and `UdpSocket::send_to`.
//!
//! Those take `impl std::net::ToSocketAddrs`, whose `to_socket_addrs` may
//! ask the system's resolver (a blocking DNS lookup) for a host name. The
//! standard library's implementations that can are the string forms: `str`,
//! `String`, `(&str, u16)` and `(String, u16)` (behind any number of
//! references). Those are recognised here by type (`typeid::of`, which
//! ignores lifetimes); an IP literal is parsed on the calling thread, and a
//! host name is copied out and resolved on one of the pool's blocking
//! threads. Every other type (socket addresses, IP-and-port pairs, slices
//! of addresses) resolves without a lookup, on the calling thread. A type
//! of the caller's own is resolved where it is called: its
//! `to_socket_addrs` is the caller's code.

use std::any::TypeId;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// What an address argument needs.
enum Resolution {
    /// Resolved already, without a lookup.
    Done(Vec<SocketAddr>),
    /// A host name (and port) for the resolver.
    Lookup(String, u16),
    /// `"host:port"` for the resolver.
    LookupStr(String),
}

/// Is `T` the type `U`, lifetimes aside?
fn is<T, U: 'static>() -> bool {
    typeid::of::<T>() == TypeId::of::<U>()
}

/// `addr` as a `&str`, if its type is a string form (`&str`, `String`, or a
/// reference to either).
fn as_str<T>(addr: &T) -> Option<&str> {
    let p = addr as *const T;
    // SAFETY: in each arm, the type check proves that `T` is that type with
    // other lifetimes; a reference's lifetime does not change its layout,
    // and the `&str` returned borrows from `addr` for no longer than `addr`
    // is borrowed here.
    unsafe {
        if is::<T, String>() {
            Some((*(p as *const String)).as_str())
        } else if is::<T, &str>() {
            Some(*(p as *const &str))
        } else if is::<T, &String>() {
            Some((*(p as *const &String)).as_str())
        } else if is::<T, &&str>() {
            Some(**(p as *const &&str))
        } else {
            None
        }
    }
}

/// `addr` as a `(host, port)`, if its type is one of the pair forms that
/// may hold a host name.
fn as_host_port<T>(addr: &T) -> Option<(&str, u16)> {
    let p = addr as *const T;
    // SAFETY: as in `as_str`.
    unsafe {
        if is::<T, (&str, u16)>() {
            Some(*(p as *const (&str, u16)))
        } else if is::<T, (String, u16)>() {
            let (host, port) = &*(p as *const (String, u16));
            Some((host.as_str(), *port))
        } else if is::<T, &(&str, u16)>() {
            Some(**(p as *const &(&str, u16)))
        } else if is::<T, &(String, u16)>() {
            let (host, port) = &**(p as *const &(String, u16));
            Some((host.as_str(), *port))
        } else {
            None
        }
    }
}

/// What `addr` needs: resolved now when no lookup is involved.
fn classify<A: ToSocketAddrs>(addr: &A) -> io::Result<Resolution> {
    if let Some(s) = as_str(addr) {
        return Ok(match s.parse::<SocketAddr>() {
            Ok(a) => Resolution::Done(vec![a]),
            Err(_) => Resolution::LookupStr(s.to_owned()),
        });
    }
    if let Some((host, port)) = as_host_port(addr) {
        return Ok(match host.parse::<IpAddr>() {
            Ok(ip) => Resolution::Done(vec![SocketAddr::new(ip, port)]),
            Err(_) => Resolution::Lookup(host.to_owned(), port),
        });
    }
    Ok(Resolution::Done(addr.to_socket_addrs()?.collect()))
}

/// The addresses `addr` stands for; a host name is looked up on a blocking
/// thread of the current pool. `addr` is read at once: the future holds no
/// borrow of it.
pub(crate) fn resolve<A: ToSocketAddrs>(
    addr: &A,
) -> impl Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'static {
    let resolution = classify(addr);
    async move {
        let lookup = match resolution? {
            Resolution::Done(addrs) => return Ok(addrs),
            Resolution::Lookup(host, port) => {
                refuse_lookup_in_seeded_pool(|| format!("{host}:{port}"))?;
                crate::free_fns::spawn_blocking(move || {
                    Ok((host.as_str(), port).to_socket_addrs()?.collect())
                })
            }
            Resolution::LookupStr(s) => {
                refuse_lookup_in_seeded_pool(|| s.clone())?;
                crate::free_fns::spawn_blocking(move || Ok(s.as_str().to_socket_addrs()?.collect()))
            }
        };
        lookup
            .await
            .map_err(|e| io::Error::other(format!("the host name lookup did not finish: {e}")))?
    }
}

/// The resolver is real I/O, which a seeded pool cannot replay; and a
/// simulated network has no names, only its hosts' addresses: the lookup of
/// `name` (made only for the message) is refused in a seeded pool.
fn refuse_lookup_in_seeded_pool(name: impl FnOnce() -> String) -> io::Result<()> {
    let simulated = crate::context::current::try_current()
        .is_some_and(|registry| registry.seeded().is_some_and(|s| s.network().is_some()));
    if simulated {
        let name = name();
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "`{name}`: a simulated network (pool::sim) has no host names; \
                 name the simulated host by its address, as in \"127.0.1.10:8080\""
            ),
        ));
    }
    crate::context::current::refuse_if_seeded("a host name lookup (pool::net)")
}

/// Looks up `host` (`"name:port"`, or an IP address and port) and returns
/// its addresses.
///
/// A host name is resolved by the system's resolver on one of the current
/// pool's blocking threads, never on a worker; an IP address is parsed
/// where it is called.
///
/// # Errors
///
/// The resolver's error (an unknown host, no port), or a cancellation if
/// the pool shut down during the lookup.
///
/// # Examples
///
/// ```
/// # pool::block_on(async {
/// let addrs: Vec<_> = pool::net::lookup_host("127.0.0.1:80").await.unwrap().collect();
/// assert_eq!(addrs, ["127.0.0.1:80".parse().unwrap()]);
/// let local = pool::net::lookup_host("localhost:80").await.unwrap();
/// assert!(local.into_iter().all(|a| a.ip().is_loopback()));
/// # });
/// ```
pub async fn lookup_host(host: impl AsRef<str>) -> io::Result<impl Iterator<Item = SocketAddr>> {
    Ok(resolve(&host.as_ref()).await?.into_iter())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn done<A: ToSocketAddrs>(addr: &A) -> Option<Vec<SocketAddr>> {
        match classify(addr).unwrap() {
            Resolution::Done(a) => Some(a),
            _ => None,
        }
    }

    #[test]
    fn ip_literals_resolve_here_and_host_names_are_looked_up() {
        let v4: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        let owned = String::from("127.0.0.1:80");
        assert_eq!(done(&"127.0.0.1:80"), Some(vec![v4]));
        assert_eq!(done(&&"127.0.0.1:80"), Some(vec![v4]));
        assert_eq!(done(&owned), Some(vec![v4]));
        assert_eq!(done(&&owned), Some(vec![v4]));
        assert_eq!(done(&("::1", 80)), Some(vec![v6]));
        assert_eq!(done(&(String::from("127.0.0.1"), 80)), Some(vec![v4]));
        assert_eq!(done(&v4), Some(vec![v4]));
        assert_eq!(done(&(IpAddr::from([127, 0, 0, 1]), 80)), Some(vec![v4]));
        assert_eq!(done(&&[v4, v6][..]), Some(vec![v4, v6]));
        let host = String::from("localhost:80");
        assert!(
            matches!(classify(&"localhost:80").unwrap(), Resolution::LookupStr(s) if s == "localhost:80")
        );
        assert!(matches!(classify(&host).unwrap(), Resolution::LookupStr(_)));
        assert!(
            matches!(classify(&("localhost", 80)).unwrap(), Resolution::Lookup(h, 80) if h == "localhost")
        );
        assert!(matches!(
            classify(&(String::from("localhost"), 8)).unwrap(),
            Resolution::Lookup(_, 8)
        ));
    }
}

/// Try `f` on each address `addr` resolves to (a host name on a blocking
/// thread); the last error if none works.
pub(super) async fn each_addr<T, F, Fut>(addr: impl ToSocketAddrs, mut f: F) -> io::Result<T>
where
    F: FnMut(SocketAddr) -> Fut,
    Fut: std::future::Future<Output = io::Result<T>>,
{
    let mut last_error = None;
    for addr in resolve(&addr).await? {
        match f(addr).await {
            Ok(t) => return Ok(t),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "could not resolve to any address",
        )
    }))
}
