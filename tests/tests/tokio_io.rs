//! Feature `tokio-io`: tokio's `AsyncRead`/`AsyncWrite` on pool's own
//! streams, used by tokio-typed code (tokio's extension traits, tokio-rustls)
//! with no tokio runtime anywhere in the process.

use pool::net::{TcpListener, TcpStream, UnixStream};
use pool::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use tests::watchdog;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

fn pool() -> pool::Pool {
    pool::Builder::new().worker_threads(2).build().unwrap()
}

#[test]
fn tls_with_tokio_rustls_over_pool_tcp_streams() {
    watchdog("tokio-io: TLS", 30, || {
        // A self-signed certificate for "localhost", made here.
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        let cert_der = CertificateDer::from(cert.der().to_vec());
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));

        let server_config = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert_der.clone()], key_der)
            .unwrap();
        let mut roots = RootCertStore::empty();
        roots.add(cert_der).unwrap();
        let client_config = ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let acceptor = TlsAcceptor::from(Arc::new(server_config));
        let connector = TlsConnector::from(Arc::new(client_config));

        let p = pool();
        p.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = pool::spawn(async move {
                // Two clients, one after the other: each line comes back
                // upper-cased over TLS.
                for _ in 0..2 {
                    let (tcp, _) = listener.accept().await.unwrap();
                    let tls = acceptor.accept(tcp).await.unwrap();
                    let (read, mut write) = tokio::io::split(tls);
                    let mut line = String::new();
                    BufReader::new(read).read_line(&mut line).await.unwrap();
                    write
                        .write_all(line.to_uppercase().as_bytes())
                        .await
                        .unwrap();
                    write.shutdown().await.unwrap();
                }
            });
            for word in ["hello", "pool"] {
                let tcp = TcpStream::connect(addr).await.unwrap();
                let name = "localhost".try_into().unwrap();
                let mut tls = connector.connect(name, tcp).await.unwrap();
                tls.write_all(format!("{word} over tls\n").as_bytes())
                    .await
                    .unwrap();
                let mut reply = String::new();
                tls.read_to_string(&mut reply).await.unwrap();
                assert_eq!(reply, format!("{} OVER TLS\n", word.to_uppercase()));
            }
            server.await.unwrap();
        });
    });
}

#[test]
fn unix_streams_read_and_write_through_tokio_traits() {
    watchdog("tokio-io: unix", 20, || {
        pool().block_on(async {
            let (mut a, mut b) = UnixStream::pair().unwrap();
            // More than a socket buffer, so the writer waits for the reader.
            let data: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
            let expected = data.clone();
            let writer = pool::spawn(async move {
                a.write_all(&data).await.unwrap();
                AsyncWriteExt::shutdown(&mut a).await.unwrap();
            });
            let mut got = Vec::new();
            b.read_to_end(&mut got).await.unwrap();
            writer.await.unwrap();
            assert!(got == expected, "the bytes arrive whole and in order");
        });
    });
}

#[test]
fn process_pipes_and_async_fds_through_tokio_traits() {
    watchdog("tokio-io: pipes and Async", 20, || {
        pool().block_on(async {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let mut stdout = child.stdout.take().unwrap();
            stdin.write_all(b"through cat\n").await.unwrap();
            drop(stdin);
            let mut out = String::new();
            stdout.read_to_string(&mut out).await.unwrap();
            assert_eq!(out, "through cat\n");
            assert!(child.wait().await.unwrap().success());

            let (x, y) = std::os::unix::net::UnixStream::pair().unwrap();
            let mut x = pool::io::Async::new(x).unwrap();
            let mut y = pool::io::Async::new(y).unwrap();
            x.write_all(b"any fd").await.unwrap();
            let mut buf = [0; 6];
            y.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"any fd");
        });
    });
}
