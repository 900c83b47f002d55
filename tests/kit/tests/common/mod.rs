//! A raw HTTP/1.1 client for testing the scripted server byte by byte.
#![allow(dead_code, clippy::unwrap_used)] // shared by several test crates; a test helper

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response as it came off the wire.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Decoded body (de-chunked when chunked).
    pub body: Vec<u8>,
    /// Sizes of the HTTP chunks, when chunked.
    pub chunks: Vec<usize>,
    /// Whether the body was complete: terminating chunk seen, or Content-Length reached.
    pub complete: bool,
    /// Whether the server closed the connection before the read timeout.
    pub closed: bool,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// Complete SSE events as (event name, data), split on blank lines (LF or CRLF).
    pub fn sse(&self) -> Vec<(Option<String>, String)> {
        let text = self.text().replace("\r\n", "\n");
        let mut blocks: Vec<&str> = text.split("\n\n").collect();
        blocks.pop(); // after the last blank line: empty, or an unfinished event
        blocks
            .into_iter()
            .map(|block| {
                let mut event = None;
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(e) = line.strip_prefix("event: ") {
                        event = Some(e.to_owned());
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data.push_str(d);
                    }
                }
                (event, data)
            })
            .collect()
    }

    /// The data of every SSE event parsed as JSON (skipping `[DONE]`).
    pub fn sse_json(&self) -> Vec<Value> {
        self.sse()
            .into_iter()
            .filter(|(_, d)| d != "[DONE]")
            .map(|(_, d)| serde_json::from_str(&d).unwrap())
            .collect()
    }
}

/// POSTs `body` as JSON and reads the response until the server closes (at most 10 s).
/// A server on a free port playing `steps` with default options.
pub async fn server(
    steps: impl IntoIterator<Item = talaria_testkit::Step>,
) -> talaria_testkit::ScriptedServer {
    talaria_testkit::ScriptedServer::start(
        talaria_testkit::Script::new(steps),
        talaria_testkit::ServerOptions::default(),
    )
    .await
    .unwrap()
}

pub async fn post(addr: SocketAddr, path: &str, body: &Value) -> RawResponse {
    post_with(addr, path, body, Duration::from_secs(10)).await
}

/// POSTs `body` as JSON and reads until close or `timeout`.
pub async fn post_with(
    addr: SocketAddr,
    path: &str,
    body: &Value,
    timeout: Duration,
) -> RawResponse {
    send_raw(addr, &request_bytes(addr, path, body), timeout).await
}

/// Sends raw bytes and parses whatever comes back before close or `timeout`.
pub async fn send_raw(addr: SocketAddr, request: &[u8], timeout: Duration) -> RawResponse {
    let (raw, closed) = exchange(addr, request, timeout).await;
    parse(&raw, closed)
}

/// Sends raw bytes; returns what came back before close or `timeout`, and whether the
/// server closed the connection.
pub async fn exchange(addr: SocketAddr, request: &[u8], timeout: Duration) -> (Vec<u8>, bool) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut raw = Vec::new();
    let closed = tokio::time::timeout(timeout, async {
        let mut buf = [0; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .is_ok();
    (raw, closed)
}

/// The bytes of a JSON POST request that asks the server to close the connection after
/// answering (the helpers read until it does).
pub fn request_bytes(addr: SocketAddr, path: &str, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Authorization: Bearer test-key\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn parse(raw: &[u8], closed: bool) -> RawResponse {
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let mut response = RawResponse {
        status,
        headers,
        body: Vec::new(),
        chunks: Vec::new(),
        complete: false,
        closed,
    };
    let rest = &raw[head_end + 4..];
    if response.header("transfer-encoding") == Some("chunked") {
        dechunk(rest, &mut response);
    } else {
        let length: usize = response.header("content-length").unwrap().parse().unwrap();
        response.complete = rest.len() == length;
        response.body = rest.to_vec();
    }
    response
}

fn dechunk(mut rest: &[u8], response: &mut RawResponse) {
    loop {
        let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") else {
            return;
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).unwrap(), 16).unwrap();
        rest = &rest[line_end + 2..];
        if size == 0 {
            response.complete = rest == b"\r\n";
            return;
        }
        if rest.len() < size + 2 {
            response
                .body
                .extend_from_slice(&rest[..size.min(rest.len())]);
            return;
        }
        assert_eq!(&rest[size..size + 2], b"\r\n", "chunk not followed by CRLF");
        response.body.extend_from_slice(&rest[..size]);
        response.chunks.push(size);
        rest = &rest[size + 2..];
    }
}

/// A minimal OpenAI request body.
pub fn openai_body(stream: bool) -> Value {
    serde_json::json!({
        "model": "gpt-test",
        "stream": stream,
        "stream_options": {"include_usage": true},
        "messages": [
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": "Hello"}
        ]
    })
}

/// A minimal Anthropic request body.
pub fn anthropic_body(stream: bool) -> Value {
    serde_json::json!({
        "model": "claude-test",
        "max_tokens": 1024,
        "stream": stream,
        "system": "You are a test.",
        "messages": [{"role": "user", "content": "Hello"}]
    })
}

/// A minimal OpenAI Responses request body.
pub fn responses_body(stream: bool) -> Value {
    serde_json::json!({
        "model": "gpt-test",
        "instructions": "You are a test.",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]}],
        "stream": stream,
        "store": false,
        "include": ["reasoning.encrypted_content"]
    })
}

/// Blocking POST for synchronous tests (std networking only).
pub fn post_blocking(addr: SocketAddr, path: &str, body: &Value) -> RawResponse {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(&request_bytes(addr, path, body)).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse(&raw, true)
}
