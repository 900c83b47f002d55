//! Guest-side helpers for chat adapters (the `chat-adapter-plugin` world):
//! a line-oriented connection over a plain `wasi:sockets` TCP socket or a
//! host TLS stream ([`chat_host::tls_connect`](crate::chat_host::tls_connect)),
//! with buffered line reading, a [`LineConnection::wait`] that wakes on input,
//! on the host's work or on a timeout, and blocking writes.
//!
//! The socket parts only run inside a component; natively they compile but
//! must not be called. The buffering ([`LineBuffer`]) and chunking
//! ([`write_chunks`]) are plain Rust and tested natively.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::time::Duration;

use wasip2::clocks::monotonic_clock;
use wasip2::io::poll::{Pollable, poll};
use wasip2::io::streams::{InputStream, OutputStream, StreamError};
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::ip_name_lookup::resolve_addresses;
use wasip2::sockets::network::{
    ErrorCode, IpAddress, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress, Ipv6SocketAddress,
    Network,
};
use wasip2::sockets::tcp::TcpSocket;
use wasip2::sockets::tcp_create_socket::create_tcp_socket;

/// The most `blocking_write_and_flush` takes in one call (WASI's limit).
pub const WRITE_CHUNK: usize = 4096;

/// How many bytes one read asks the input stream for.
const READ_SIZE: u64 = 16 * 1024;

/// Splits `bytes` into the pieces one `blocking_write_and_flush` may take.
pub fn write_chunks(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.chunks(WRITE_CHUNK)
}

/// Bytes in, lines out. A line ends with `\n`; a `\r` before it is dropped.
/// Lines are decoded as UTF-8, invalid bytes replaced (chat protocols such as
/// IRC carry whatever encoding the other clients use). A line longer than
/// the limit is dropped whole, so a peer cannot make the buffer grow without
/// bound.
#[derive(Debug)]
pub struct LineBuffer {
    pending: Vec<u8>,
    lines: VecDeque<String>,
    max_line: usize,
    /// Inside an overlong line: bytes are dropped up to its end.
    discarding: bool,
    dropped: usize,
}

impl LineBuffer {
    /// A buffer whose lines are at most `max_line` bytes (without the ending).
    pub fn new(max_line: usize) -> Self {
        Self {
            pending: Vec::new(),
            lines: VecDeque::new(),
            max_line,
            discarding: false,
            dropped: 0,
        }
    }

    /// Appends received bytes.
    pub fn push(&mut self, mut bytes: &[u8]) {
        while let Some(end) = bytes.iter().position(|&b| b == b'\n') {
            let (head, rest) = bytes.split_at(end);
            bytes = &rest[1..];
            if self.discarding {
                self.discarding = false;
                continue;
            }
            if self.pending.len() + head.len() > self.max_line + 1 {
                self.pending.clear();
                self.dropped += 1;
                continue;
            }
            self.pending.extend_from_slice(head);
            if self.pending.last() == Some(&b'\r') {
                self.pending.pop();
            }
            if self.pending.len() > self.max_line {
                self.dropped += 1;
            } else {
                self.lines
                    .push_back(String::from_utf8_lossy(&self.pending).into_owned());
            }
            self.pending.clear();
        }
        if self.discarding {
            return;
        }
        self.pending.extend_from_slice(bytes);
        // One byte of slack: the `\r` of a line exactly at the limit.
        if self.pending.len() > self.max_line + 1 {
            self.pending.clear();
            self.discarding = true;
            self.dropped += 1;
        }
    }

    /// The next complete line, if one has arrived.
    pub fn next_line(&mut self) -> Option<String> {
        self.lines.pop_front()
    }

    /// Whether a complete line is waiting.
    pub fn has_line(&self) -> bool {
        !self.lines.is_empty()
    }

    /// How many overlong lines were dropped so far.
    pub fn dropped_lines(&self) -> usize {
        self.dropped
    }
}

/// Why [`LineConnection::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// Input arrived (or the peer closed: the next read says which).
    Readable,
    /// The host has work for this connection (`chat-host.host-work`).
    HostWork,
    /// Neither within the timeout.
    TimedOut,
}

/// A failed connection: connecting, reading or writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectionError {
    /// The peer closed the connection.
    Closed,
    /// Anything else, described.
    Failed(String),
}

impl std::fmt::Display for ConnectionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Closed => f.write_str("connection closed by the peer"),
            Self::Failed(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for ConnectionError {}

fn stream_error(error: StreamError) -> ConnectionError {
    match error {
        StreamError::Closed => ConnectionError::Closed,
        StreamError::LastOperationFailed(e) => ConnectionError::Failed(e.to_debug_string()),
    }
}

/// A connection read line by line. Dropping it closes the socket.
pub struct LineConnection {
    // Field order is drop order: the streams are children of the socket and
    // must go first (dropping a WASI resource with live children traps).
    input: InputStream,
    output: OutputStream,
    _socket: Option<TcpSocket>,
    buffer: LineBuffer,
}

impl std::fmt::Debug for LineConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineConnection")
            .field("buffer", &self.buffer)
            .finish_non_exhaustive()
    }
}

impl LineConnection {
    /// A plain TCP connection to `host`:`port` (a name is resolved first;
    /// each address is tried in turn), lines at most `max_line` bytes.
    /// Gives up after `timeout` per address.
    pub fn connect_tcp(
        host: &str,
        port: u16,
        timeout: Duration,
        max_line: usize,
    ) -> Result<Self, ConnectionError> {
        let network = instance_network();
        let addresses = resolve(&network, host)?;
        let mut last_error = ConnectionError::Failed(format!("{host} has no address"));
        for address in addresses {
            match connect_address(&network, address, port, timeout) {
                Ok((socket, input, output)) => {
                    return Ok(Self {
                        input,
                        output,
                        _socket: Some(socket),
                        buffer: LineBuffer::new(max_line),
                    });
                }
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    /// A TLS connection through the host (`chat-host.tls-connect`), verified
    /// by the host against its trust roots.
    pub fn connect_tls(host: &str, port: u16, max_line: usize) -> Result<Self, ConnectionError> {
        let (input, output) = crate::chat_host::tls_connect(host, port)
            .map_err(|e| ConnectionError::Failed(format!("TLS to {host}:{port}: {e}")))?;
        Ok(Self::from_streams(input, output, max_line))
    }

    /// A connection over streams obtained elsewhere.
    pub fn from_streams(input: InputStream, output: OutputStream, max_line: usize) -> Self {
        Self {
            input,
            output,
            _socket: None,
            buffer: LineBuffer::new(max_line),
        }
    }

    /// The next line without blocking: a buffered one, or one from what the
    /// stream has now. `Ok(None)` when no complete line is there yet.
    pub fn read_line(&mut self) -> Result<Option<String>, ConnectionError> {
        loop {
            if let Some(line) = self.buffer.next_line() {
                return Ok(Some(line));
            }
            let bytes = self.input.read(READ_SIZE).map_err(stream_error)?;
            if bytes.is_empty() {
                return Ok(None);
            }
            self.buffer.push(&bytes);
        }
    }

    /// Waits until input is readable, the host has work, or `timeout` passes,
    /// whichever comes first. A buffered line counts as readable at once.
    pub fn wait(&self, timeout: Duration) -> Woken {
        if self.buffer.has_line() {
            return Woken::Readable;
        }
        let readable = self.input.subscribe();
        let host_work = crate::chat_host::host_work();
        let timer = monotonic_clock::subscribe_duration(nanos(timeout));
        let ready = poll(&[&readable, &host_work, &timer]);
        if ready.contains(&0) {
            Woken::Readable
        } else if ready.contains(&1) {
            Woken::HostWork
        } else {
            Woken::TimedOut
        }
    }

    /// Waits until input is readable or `timeout` passes, ignoring the
    /// host's work (for a handshake, before the connection is handed over);
    /// false on timeout.
    pub fn wait_readable(&self, timeout: Duration) -> bool {
        self.buffer.has_line() || wait_for(&self.input.subscribe(), timeout)
    }

    /// Writes `line` and CRLF, flushed.
    pub fn write_line(&mut self, line: &str) -> Result<(), ConnectionError> {
        let mut bytes = Vec::with_capacity(line.len() + 2);
        bytes.extend_from_slice(line.as_bytes());
        bytes.extend_from_slice(b"\r\n");
        self.write_all(&bytes)
    }

    /// Writes all of `bytes`, flushed, in chunks WASI accepts.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), ConnectionError> {
        blocking_write_all(&self.output, bytes)
    }

    /// How many overlong lines the peer sent that were dropped.
    pub fn dropped_lines(&self) -> usize {
        self.buffer.dropped_lines()
    }
}

/// Writes all of `bytes` to `output` with `blocking_write_and_flush`, in
/// chunks of at most [`WRITE_CHUNK`] bytes.
pub fn blocking_write_all(output: &OutputStream, bytes: &[u8]) -> Result<(), ConnectionError> {
    for chunk in write_chunks(bytes) {
        output
            .blocking_write_and_flush(chunk)
            .map_err(stream_error)?;
    }
    Ok(())
}

/// Waits for `pollable` or `timeout`; false on timeout.
fn wait_for(pollable: &Pollable, timeout: Duration) -> bool {
    let timer = monotonic_clock::subscribe_duration(nanos(timeout));
    poll(&[pollable, &timer]).contains(&0)
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

fn socket_error(what: &str, code: ErrorCode) -> ConnectionError {
    ConnectionError::Failed(format!("{what}: {code:?}"))
}

/// The addresses of `host`: an IP literal as is, a name through
/// `ip-name-lookup`.
fn resolve(network: &Network, host: &str) -> Result<Vec<IpAddress>, ConnectionError> {
    if let Ok(ip) = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Ok(vec![wasi_ip(ip)]);
    }
    let lookup = resolve_addresses(network, host)
        .map_err(|code| socket_error(&format!("resolving {host}"), code))?;
    let mut addresses = Vec::new();
    loop {
        match lookup.resolve_next_address() {
            Ok(Some(address)) => addresses.push(address),
            Ok(None) => return Ok(addresses),
            Err(ErrorCode::WouldBlock) => lookup.subscribe().block(),
            Err(code) => return Err(socket_error(&format!("resolving {host}"), code)),
        }
    }
}

/// Converts a std address into the WASI form.
pub fn wasi_ip(ip: IpAddr) -> IpAddress {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            IpAddress::Ipv4((a, b, c, d))
        }
        IpAddr::V6(v6) => {
            let [a, b, c, d, e, f, g, h] = v6.segments();
            IpAddress::Ipv6((a, b, c, d, e, f, g, h))
        }
    }
}

fn connect_address(
    network: &Network,
    address: IpAddress,
    port: u16,
    timeout: Duration,
) -> Result<(TcpSocket, InputStream, OutputStream), ConnectionError> {
    let (family, socket_address) = match address {
        IpAddress::Ipv4(address) => (
            IpAddressFamily::Ipv4,
            IpSocketAddress::Ipv4(Ipv4SocketAddress { port, address }),
        ),
        IpAddress::Ipv6(address) => (
            IpAddressFamily::Ipv6,
            IpSocketAddress::Ipv6(Ipv6SocketAddress {
                port,
                flow_info: 0,
                address,
                scope_id: 0,
            }),
        ),
    };
    let socket = create_tcp_socket(family).map_err(|code| socket_error("socket", code))?;
    socket
        .start_connect(network, socket_address)
        .map_err(|code| socket_error(&format!("connecting to {address:?}:{port}"), code))?;
    let ready = socket.subscribe();
    loop {
        match socket.finish_connect() {
            Ok((input, output)) => {
                drop(ready);
                return Ok((socket, input, output));
            }
            Err(ErrorCode::WouldBlock) => {
                if !wait_for(&ready, timeout) {
                    return Err(ConnectionError::Failed(format!(
                        "connecting to {address:?}:{port}: timed out"
                    )));
                }
            }
            Err(code) => {
                return Err(socket_error(
                    &format!("connecting to {address:?}:{port}"),
                    code,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(buffer: &mut LineBuffer) -> Vec<String> {
        std::iter::from_fn(|| buffer.next_line()).collect()
    }

    #[test]
    fn lines_split_across_pushes_are_joined_and_crlf_is_dropped() {
        let mut buffer = LineBuffer::new(512);
        buffer.push(b"PING :a\r\nPRIV");
        assert_eq!(drain(&mut buffer), ["PING :a"]);
        buffer.push(b"MSG #c :hi\r");
        assert!(!buffer.has_line());
        buffer.push(b"\nbare lf\n");
        assert_eq!(drain(&mut buffer), ["PRIVMSG #c :hi", "bare lf"]);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let mut buffer = LineBuffer::new(512);
        buffer.push(b"caf\xe9\r\n");
        assert_eq!(drain(&mut buffer), ["caf\u{fffd}"]);
    }

    #[test]
    fn overlong_lines_are_dropped_whole_and_the_next_line_survives() {
        let mut buffer = LineBuffer::new(8);
        buffer.push(b"12345678\r\n");
        buffer.push(b"123456789");
        buffer.push(b"0123456789");
        buffer.push(b"tail\r\nok\r\n");
        buffer.push(b"1234567890\nshort\n");
        assert_eq!(drain(&mut buffer), ["12345678", "ok", "short"]);
        assert_eq!(buffer.dropped_lines(), 2);
    }

    #[test]
    fn writes_are_chunked_at_4096_bytes() {
        let data = vec![b'x'; WRITE_CHUNK * 2 + 1];
        let sizes: Vec<usize> = write_chunks(&data).map(<[u8]>::len).collect();
        assert_eq!(sizes, [4096, 4096, 1]);
        assert_eq!(write_chunks(b"").count(), 0);
    }

    #[test]
    fn std_addresses_convert_to_wasi_ones() {
        let v4 = wasi_ip("127.0.0.1".parse().unwrap());
        assert!(matches!(v4, IpAddress::Ipv4((127, 0, 0, 1))));
        let v6 = wasi_ip("::1".parse().unwrap());
        assert!(matches!(v6, IpAddress::Ipv6((0, 0, 0, 0, 0, 0, 0, 1))));
    }
}
