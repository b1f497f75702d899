//! Blocking clients of our own for servers under test and under load: one
//! HTTP/1.1 request per connection, and a WebSocket client (RFC 6455: the
//! handshake, masked client frames, unmasked server frames).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A reply to `get`.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// The header lines, lower-cased, one per line.
    pub headers: String,
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `GET path` on a new connection to `addr` (closed after the reply), with
/// extra header lines (`"accept-encoding: gzip"`); 10 s read timeout.
pub fn get(addr: &str, path: &str, headers: &[&str]) -> io::Result<Reply> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut request = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n");
    for h in headers {
        request.push_str(h);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    s.write_all(request.as_bytes())?;
    let mut reply = Vec::new();
    s.read_to_end(&mut reply)?;
    let split = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| io::Error::other("no end of headers in the reply"))?;
    let head = String::from_utf8_lossy(&reply[..split]).to_lowercase();
    let (status_line, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
    let status = status_line
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("bad status line {status_line:?}")))?;
    let mut body = reply[split + 4..].to_vec();
    if headers.contains("transfer-encoding: chunked") {
        body = dechunk(&body)?;
    }
    Ok(Reply {
        status,
        headers: headers.replace("\r\n", "\n"),
        body,
    })
}

fn dechunk(mut data: &[u8]) -> io::Result<Vec<u8>> {
    let bad = || io::Error::other("bad chunked body");
    let mut out = Vec::new();
    loop {
        let eol = data.windows(2).position(|w| w == b"\r\n").ok_or_else(bad)?;
        let size = std::str::from_utf8(&data[..eol]).map_err(|_| bad())?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| bad())?;
        data = &data[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(data.get(..size).ok_or_else(bad)?);
        data = data.get(size + 2..).ok_or_else(bad)?;
    }
}

/// A WebSocket connection, client side.
pub struct WsClient {
    stream: BufReader<TcpStream>,
    /// Advanced per frame: the masks differ (they need not be random here).
    mask: u32,
}

/// The handshake key of RFC 6455's example, and the accept it implies.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CLOSE: u8 = 0x8;

impl WsClient {
    /// Open `ws://addr{path}`: fails unless the server switches protocols
    /// with the right accept key.
    pub fn connect(addr: &str, path: &str) -> io::Result<WsClient> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut stream = BufReader::new(s);
        write!(
            stream.get_mut(),
            "GET {path} HTTP/1.1\r\nhost: {addr}\r\nupgrade: websocket\r\nconnection: upgrade\r\n\
             sec-websocket-key: {KEY}\r\nsec-websocket-version: 13\r\n\r\n"
        )?;
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if stream.read_line(&mut line)? == 0 {
                return Err(io::Error::other(format!("handshake cut short: {head:?}")));
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line.to_lowercase());
        }
        if !head.starts_with("http/1.1 101") || !head.contains(&ACCEPT.to_lowercase()) {
            return Err(io::Error::other(format!(
                "not a WebSocket handshake: {head:?}"
            )));
        }
        Ok(WsClient {
            stream,
            mask: 0x9e37_79b9,
        })
    }

    /// Send one frame (FIN set) of `opcode` with `payload`, masked.
    pub fn send(&mut self, opcode: u8, payload: &[u8]) -> io::Result<()> {
        let mut frame = Vec::with_capacity(payload.len() + 14);
        frame.push(0x80 | opcode);
        match payload.len() {
            n @ 0..=125 => frame.push(0x80 | n as u8),
            n @ 126..=0xffff => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        self.mask = self
            .mask
            .wrapping_mul(0x0101_0101)
            .wrapping_add(0x7f4a_7c15);
        let mask = self.mask.to_be_bytes();
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.get_mut().write_all(&frame)
    }

    /// Read one frame: (opcode, payload). Fragmented messages are not
    /// reassembled (the echo servers under test do not fragment).
    pub fn recv(&mut self) -> io::Result<(u8, Vec<u8>)> {
        let mut head = [0u8; 2];
        self.stream.read_exact(&mut head)?;
        let len = match head[1] & 0x7f {
            126 => {
                let mut b = [0u8; 2];
                self.stream.read_exact(&mut b)?;
                u16::from_be_bytes(b) as usize
            }
            127 => {
                let mut b = [0u8; 8];
                self.stream.read_exact(&mut b)?;
                u64::from_be_bytes(b) as usize
            }
            n => n as usize,
        };
        if head[1] & 0x80 != 0 {
            return Err(io::Error::other("the server masked its frame"));
        }
        let mut payload = vec![0u8; len];
        self.stream.read_exact(&mut payload)?;
        Ok((head[0] & 0x0f, payload))
    }

    /// The connection itself: to write a frame cut short, or to set
    /// `SO_LINGER` before a rude close.
    pub fn tcp(&self) -> &TcpStream {
        self.stream.get_ref()
    }

    /// Send `payload` as a binary message and read the reply frame.
    pub fn echo(&mut self, payload: &[u8]) -> io::Result<(u8, Vec<u8>)> {
        self.send(BINARY, payload)?;
        self.recv()
    }
}
