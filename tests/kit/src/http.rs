//! Minimal HTTP/1.1 on a raw TCP stream. A connection serves requests one after another
//! (keep-alive, as real providers do) until the client asks to close or a response ends early.
//!
//! Responses are written by hand so the server can split bodies into tiny chunks, stall,
//! or hang up mid-body.

use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Longest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Largest request body accepted.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A test server's lifetime: dropping it signals the server to stop and
/// waits for its thread, when it has one of its own.
#[derive(Debug)]
pub(crate) struct Running {
    shutdown: tokio::sync::watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    pub(crate) fn new(
        shutdown: tokio::sync::watch::Sender<bool>,
        thread: Option<std::thread::JoinHandle<()>>,
    ) -> Self {
        Self { shutdown, thread }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs `serve` on a listener bound to 127.0.0.1:`port` (0: any), on a
/// thread named `name-<port>` with a runtime of its own: the bound address
/// and the thread.
pub(crate) fn serve_on_thread<F, Fut>(
    name: &str,
    port: u16,
    serve: F,
) -> io::Result<(std::net::SocketAddr, std::thread::JoinHandle<()>)>
where
    F: FnOnce(TcpListener) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let std_listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let label = name.to_owned();
    let thread = std::thread::Builder::new()
        .name(format!("{name}-{}", addr.port()))
        .spawn(move || {
            runtime.block_on(async move {
                match TcpListener::from_std(std_listener) {
                    Ok(listener) => serve(listener).await,
                    Err(e) => eprintln!("{label}: cannot listen: {e}"),
                }
            });
        })?;
    Ok((addr, thread))
}

/// A fake REST API served one [`Connection`] per client (the fake
/// Telegram Bot API, the fake mem0): what it answers and when it stops.
pub(crate) trait FakeApi: Send + Sync + 'static {
    /// Resolves once the server is told to stop.
    fn stopped(&self) -> impl Future<Output = ()> + Send;
    /// The answer to one request.
    fn respond(&self, request: Request) -> impl Future<Output = Response> + Send;
    /// The answer to a request that does not parse.
    fn bad_request(&self, error: &str) -> Response;
}

/// Serves `api` on a loopback port of its own, on a thread named
/// `name-<port>`: the address, and the handle that stops it (through
/// `shutdown`, the sender of the channel `api` watches) when dropped.
pub(crate) fn spawn_api<A: FakeApi>(
    name: &str,
    api: std::sync::Arc<A>,
    shutdown: tokio::sync::watch::Sender<bool>,
) -> io::Result<(std::net::SocketAddr, Running)> {
    let (addr, thread) = serve_on_thread(name, 0, move |listener| serve_api(listener, api))?;
    Ok((addr, Running::new(shutdown, Some(thread))))
}

/// Accepts connections until `api` stops, serving each on a task of its own.
pub(crate) async fn serve_api<A: FakeApi>(listener: TcpListener, api: std::sync::Arc<A>) {
    loop {
        tokio::select! {
            () = api.stopped() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(serve_api_connection(stream, std::sync::Arc::clone(&api)));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
}

/// Answers one client's requests in order, keeping the connection open while
/// it asks to.
async fn serve_api_connection<A: FakeApi>(stream: TcpStream, api: std::sync::Arc<A>) {
    let mut conn = Connection::new(stream);
    let framing = Framing {
        chunk_size: 0,
        chunk_delay: Duration::ZERO,
    };
    loop {
        let read = tokio::select! {
            read = conn.read_request() => read,
            () = api.stopped() => return,
        };
        let (response, keep_alive) = match read {
            Ok(Some(request)) => {
                let keep_alive = request.keep_alive();
                let response = tokio::select! {
                    response = api.respond(request) => response,
                    () = api.stopped() => return,
                };
                (response, keep_alive)
            }
            Ok(None) => return,
            Err(e) => (api.bad_request(&e.to_string()), false),
        };
        if conn
            .send(&response, framing, keep_alive, api.stopped())
            .await
            .is_err()
            || !keep_alive
        {
            return;
        }
    }
}

/// A parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    /// Request target as sent (path and query).
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// `HTTP/1.1` or `HTTP/1.0`, as sent.
    pub version: String,
}

impl Request {
    /// Whether the client lets the connection carry another request.
    pub(crate) fn keep_alive(&self) -> bool {
        let connection = self.header("connection").map(str::to_ascii_lowercase);
        match connection.as_deref() {
            Some(value) if value.contains("close") => false,
            Some(value) if value.contains("keep-alive") => true,
            _ => self.version.eq_ignore_ascii_case("HTTP/1.1"),
        }
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The target without its query string.
    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
}

/// A response to write.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    /// Extra headers (Content-Type etc.); framing headers are added when writing.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Stream with `Transfer-Encoding: chunked` instead of `Content-Length`.
    pub chunked: bool,
    pub ending: Ending,
}

/// How a response ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Ending {
    /// Whole body, terminating chunk, orderly close.
    Complete,
    /// Send the head and the first `n` body bytes, then close without finishing.
    DropAfter(usize),
    /// Send nothing (`head: false`) or the head and the first `bytes` body bytes, then stay
    /// silent for `duration` (or until shutdown) and close.
    Stall {
        head: bool,
        bytes: usize,
        duration: Duration,
    },
}

/// How bodies are cut into writes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Framing {
    /// Bytes per HTTP chunk (each written and flushed on its own); 0 for one chunk per
    /// SSE event (see [`pieces`]).
    pub chunk_size: usize,
    /// Pause after each chunk.
    pub chunk_delay: Duration,
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// One HTTP connection.
pub(crate) struct Connection {
    stream: BufReader<TcpStream>,
}

impl Connection {
    pub(crate) fn new(stream: TcpStream) -> Self {
        // Small writes must leave as soon as they are made.
        let _ = stream.set_nodelay(true);
        Self {
            stream: BufReader::new(stream),
        }
    }

    async fn read_line(&mut self, limit: &mut usize) -> io::Result<String> {
        let mut line = Vec::new();
        let n = (&mut self.stream)
            .take(*limit as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if n > *limit {
            return Err(invalid("request head too large"));
        }
        *limit -= n;
        if !line.ends_with(b"\n") {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let line = String::from_utf8_lossy(&line);
        Ok(line.trim_end_matches(['\r', '\n']).to_owned())
    }

    /// Reads one request; `None` if the peer closed before sending anything.
    pub(crate) async fn read_request(&mut self) -> io::Result<Option<Request>> {
        let mut budget = MAX_HEAD;
        let request_line = match self.read_line(&mut budget).await {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            other => other?,
        };
        let mut parts = request_line.split_whitespace();
        let (Some(method), Some(target), Some(version)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid(format!("bad request line {request_line:?}")));
        };
        let mut request = Request {
            method: method.to_owned(),
            target: target.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
            version: version.to_owned(),
        };
        loop {
            let line = self.read_line(&mut budget).await?;
            if line.is_empty() {
                break;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| invalid(format!("bad header line {line:?}")))?;
            request
                .headers
                .push((name.trim().to_owned(), value.trim().to_owned()));
        }

        if request
            .header("expect")
            .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
        {
            self.write(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        }
        let chunked = request
            .header("transfer-encoding")
            .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
        request.body = if chunked {
            self.read_chunked_body().await?
        } else {
            let length = match request.header("content-length") {
                Some(value) => value
                    .parse::<usize>()
                    .map_err(|_| invalid(format!("bad Content-Length {value:?}")))?,
                None => 0,
            };
            if length > MAX_BODY {
                return Err(invalid("request body too large"));
            }
            let mut body = vec![0; length];
            self.stream.read_exact(&mut body).await?;
            body
        };
        Ok(Some(request))
    }

    async fn read_chunked_body(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        let mut budget = MAX_HEAD;
        loop {
            let size_line = self.read_line(&mut budget).await?;
            let size_hex = size_line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size_hex, 16)
                .map_err(|_| invalid(format!("bad chunk size {size_line:?}")))?;
            if size == 0 {
                // Trailers, up to the blank line.
                while !self.read_line(&mut budget).await?.is_empty() {}
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                return Err(invalid("request body too large"));
            }
            let start = body.len();
            body.resize(start + size, 0);
            self.stream.read_exact(&mut body[start..]).await?;
            let mut crlf = [0; 2];
            self.stream.read_exact(&mut crlf).await?;
        }
    }

    async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        let stream = self.stream.get_mut();
        stream.write_all(bytes).await?;
        stream.flush().await
    }

    /// Writes `response`, honouring its [`Ending`]. `stopped` resolves when the server
    /// shuts down, which cuts a stall short. With `keep_alive` (only for an
    /// [`Ending::Complete`] response) the connection stays open for the next request.
    pub(crate) async fn send(
        &mut self,
        response: &Response,
        framing: Framing,
        keep_alive: bool,
        stopped: impl Future<Output = ()>,
    ) -> io::Result<()> {
        let (head_wanted, limit) = match response.ending {
            Ending::Complete => (true, response.body.len()),
            Ending::DropAfter(n) => (true, n),
            Ending::Stall { head, bytes, .. } => (head, bytes),
        };
        if head_wanted {
            self.write(head(response, keep_alive).as_bytes()).await?;
            let body = &response.body[..limit.min(response.body.len())];
            if response.chunked {
                for piece in pieces(body, framing.chunk_size) {
                    let mut frame = format!("{:x}\r\n", piece.len()).into_bytes();
                    frame.extend_from_slice(piece);
                    frame.extend_from_slice(b"\r\n");
                    self.write(&frame).await?;
                    if !framing.chunk_delay.is_zero() {
                        tokio::time::sleep(framing.chunk_delay).await;
                    }
                }
            } else {
                self.write(body).await?;
            }
        }
        match response.ending {
            Ending::Complete => {
                if response.chunked {
                    self.write(b"0\r\n\r\n").await?;
                }
                if keep_alive {
                    Ok(())
                } else {
                    self.stream.get_mut().shutdown().await
                }
            }
            // Dropping the stream closes the connection without finishing the body.
            Ending::DropAfter(_) => Ok(()),
            Ending::Stall { duration, .. } => {
                tokio::select! {
                    () = tokio::time::sleep(duration) => {}
                    () = stopped => {}
                }
                Ok(())
            }
        }
    }
}

/// `body` cut into HTTP chunks of `chunk_size` bytes, or with 0 after each blank line
/// (one chunk per SSE event, as hosted APIs flush them; a body without one stays whole).
pub(crate) fn pieces(body: &[u8], chunk_size: usize) -> Vec<&[u8]> {
    if chunk_size > 0 {
        return body.chunks(chunk_size).collect();
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    for end in 1..body.len() {
        let blank_line_ends = body[end] == b'\n'
            && (body[end - 1] == b'\n' || (end >= 2 && body[end - 2..end] == *b"\n\r"));
        if blank_line_ends {
            pieces.push(&body[start..=end]);
            start = end + 1;
        }
    }
    if start < body.len() {
        pieces.push(&body[start..]);
    }
    pieces
}

/// The status line and headers, with framing and `Connection` headers.
fn head(response: &Response, keep_alive: bool) -> String {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if response.chunked {
        head.push_str("Transfer-Encoding: chunked\r\n");
    } else {
        head.push_str(&format!("Content-Length: {}\r\n", response.body.len()));
    }
    head.push_str(if keep_alive {
        "Connection: keep-alive\r\n\r\n"
    } else {
        "Connection: close\r\n\r\n"
    });
    head
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Site Overloaded",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    async fn parse(raw: &'static [u8]) -> (io::Result<Option<Request>>, Vec<u8>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(raw).await.unwrap();
            s.shutdown().await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            got
        });
        let (stream, _) = listener.accept().await.unwrap();
        let mut conn = Connection::new(stream);
        let request = conn.read_request().await;
        drop(conn);
        (request, client.await.unwrap())
    }

    #[test]
    fn pieces_by_size_or_by_event() {
        assert_eq!(pieces(b"abcde", 2), [&b"ab"[..], b"cd", b"e"]);
        let lf = b"data: 1\n\ndata: 2\n\n";
        assert_eq!(pieces(lf, 0), [&b"data: 1\n\n"[..], b"data: 2\n\n"]);
        let crlf = b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\ntail";
        assert_eq!(
            pieces(crlf, 0),
            [
                &b"event: a\r\ndata: 1\r\n\r\n"[..],
                b"data: 2\r\n\r\n",
                b"tail"
            ]
        );
        assert_eq!(pieces(b"{\"whole\": true}", 0), [&b"{\"whole\": true}"[..]]);
    }

    #[tokio::test]
    async fn content_length_body() {
        let (r, _) = parse(
            b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        )
        .await;
        let r = r.unwrap().unwrap();
        assert_eq!((r.method.as_str(), r.path()), ("POST", "/v1/messages"));
        assert_eq!(r.header("HOST"), Some("x"));
        assert_eq!(r.body, b"hello");
    }

    #[tokio::test]
    async fn chunked_body_and_expect_continue() {
        let (r, sent) = parse(
            b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
        )
        .await;
        assert_eq!(r.unwrap().unwrap().body, b"abcde");
        assert_eq!(sent, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[tokio::test]
    async fn empty_connection_and_garbage() {
        assert!(parse(b"").await.0.unwrap().is_none());
        assert!(parse(b"nonsense\r\n\r\n").await.0.is_err());
        assert!(
            parse(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n")
                .await
                .0
                .is_err()
        );
    }
}
