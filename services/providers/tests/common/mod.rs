//! A tiny scripted HTTP/1.1 server on 127.0.0.1 for provider tests, plus a
//! recording sink and request helpers.
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use talaria_kernel::{
    CacheBreakpoints, Message, ModelRequest, StreamEvent, StreamSink, ToolChoice, ToolSpec,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Captured {
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

enum Step {
    Write(Vec<u8>),
    Sleep(Duration),
}

/// What the server does on one connection.
pub struct Reply {
    steps: Vec<Step>,
    /// After the steps, keep the connection open until the client closes it.
    hang: bool,
}

impl Reply {
    /// A complete response with `Content-Length`.
    pub fn fixed(status: u16, headers: &[(&str, &str)], body: &str) -> Self {
        let mut head = format!(
            "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        head.push_str(body);
        Self {
            steps: vec![Step::Write(head.into_bytes())],
            hang: false,
        }
    }

    /// A JSON response.
    pub fn json(status: u16, body: &str) -> Self {
        Self::fixed(status, &[("Content-Type", "application/json")], body)
    }

    /// The head of a chunked 200 response with the given content type.
    pub fn chunked(content_type: &str) -> Self {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        Self {
            steps: vec![Step::Write(head.into_bytes())],
            hang: false,
        }
    }

    /// An SSE stream of `body` in chunks of `size` bytes, properly terminated.
    pub fn sse(body: &str, size: usize) -> Self {
        Self::chunked("text/event-stream").chunks(body, size).end()
    }

    /// Adds `body` as HTTP chunks of `size` bytes (boundaries fall anywhere,
    /// including inside UTF-8 characters and CRLF pairs).
    pub fn chunks(mut self, body: &str, size: usize) -> Self {
        for piece in body.as_bytes().chunks(size.max(1)) {
            let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
            chunk.extend_from_slice(piece);
            chunk.extend_from_slice(b"\r\n");
            self.steps.push(Step::Write(chunk));
        }
        self
    }

    /// The terminating zero-length chunk.
    pub fn end(mut self) -> Self {
        self.steps.push(Step::Write(b"0\r\n\r\n".to_vec()));
        self
    }

    pub fn sleep(mut self, duration: Duration) -> Self {
        self.steps.push(Step::Sleep(duration));
        self
    }

    /// Stall after the steps until the client hangs up.
    pub fn hang(mut self) -> Self {
        self.hang = true;
        self
    }

    /// Accept the request but never answer.
    pub fn silent() -> Self {
        Self {
            steps: Vec::new(),
            hang: true,
        }
    }
}

/// The server: serves one scripted reply per connection, in order.
pub struct MockServer {
    pub base_url: String,
    requests: Arc<Mutex<Vec<Captured>>>,
    client_closed: Arc<AtomicBool>,
}

impl MockServer {
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::start_with_prefix(replies, "").await
    }

    /// `prefix` is appended to the base URL (e.g. "/v1").
    pub async fn start_with_prefix(replies: Vec<Reply>, prefix: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}{prefix}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let client_closed = Arc::new(AtomicBool::new(false));
        let (reqs, closed) = (requests.clone(), client_closed.clone());
        tokio::spawn(async move {
            for reply in replies {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let (reqs, closed) = (reqs.clone(), closed.clone());
                tokio::spawn(async move { serve(socket, reply, reqs, closed).await });
            }
        });
        Self {
            base_url,
            requests,
            client_closed,
        }
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }

    /// The single request received.
    pub fn request(&self) -> Captured {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "expected exactly one request");
        requests[0].clone()
    }

    /// Waits until a hanging connection was closed by the client.
    pub async fn wait_client_closed(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if self.client_closed.load(Ordering::SeqCst) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

async fn serve(
    mut socket: TcpStream,
    reply: Reply,
    requests: Arc<Mutex<Vec<Captured>>>,
    closed: Arc<AtomicBool>,
) {
    let Some(captured) = read_request(&mut socket).await else {
        return;
    };
    requests.lock().unwrap().push(captured);
    for step in reply.steps {
        match step {
            Step::Write(bytes) => {
                if socket.write_all(&bytes).await.is_err() {
                    closed.store(true, Ordering::SeqCst);
                    return;
                }
                let _ = socket.flush().await;
            }
            Step::Sleep(duration) => tokio::time::sleep(duration).await,
        }
    }
    if reply.hang {
        let mut buf = [0u8; 1024];
        // Bounded: a test never needs more than this.
        let wait = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        });
        if wait.await.is_ok() {
            closed.store(true, Ordering::SeqCst);
        }
    } else {
        let _ = socket.shutdown().await;
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Captured> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Captured {
        method,
        path,
        headers,
        body,
    })
}

/// A sink that records every event.
#[derive(Default)]
pub struct Recorder(Mutex<Vec<StreamEvent>>);

impl Recorder {
    pub fn events(&self) -> Vec<StreamEvent> {
        self.0.lock().unwrap().clone()
    }

    /// All text of one kind of delta, concatenated.
    pub fn text(&self) -> String {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta { text } => Some(text),
                _ => None,
            })
            .collect()
    }

    pub fn reasoning(&self) -> String {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                StreamEvent::ReasoningDelta { text } => Some(text),
                _ => None,
            })
            .collect()
    }

    /// Tool-call events only.
    pub fn tool_events(&self) -> Vec<StreamEvent> {
        self.events()
            .into_iter()
            .filter(|e| {
                matches!(
                    e,
                    StreamEvent::ToolCallStart { .. } | StreamEvent::ToolCallDelta { .. }
                )
            })
            .collect()
    }

    /// Arguments streamed for the call at `index`, concatenated.
    pub fn arguments(&self, index: usize) -> String {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta {
                    index: i,
                    arguments,
                } if i == index => Some(arguments),
                _ => None,
            })
            .collect()
    }
}

impl StreamSink for Recorder {
    fn on_event(&self, event: &StreamEvent) {
        self.0.lock().unwrap().push(event.clone());
    }
}

/// Owned parts of a request, so tests can build a `ModelRequest` cheaply.
pub struct Conversation {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub cache: CacheBreakpoints,
    pub tool_choice: ToolChoice,
    pub max_tokens: Option<u32>,
}

impl Conversation {
    pub fn simple(user: &str) -> Self {
        Self {
            system: "You are a test.".into(),
            messages: vec![Message::user(user)],
            tools: vec![ToolSpec {
                name: "get_weather".into(),
                description: "Weather for a city".into(),
                parameters: serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}}),
                refunds_iteration: false,
            }],
            cache: CacheBreakpoints::default(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        }
    }

    pub fn request(&self) -> ModelRequest<'_> {
        ModelRequest {
            model: "test-model",
            system: &self.system,
            messages: &self.messages,
            tools: &self.tools,
            tool_choice: self.tool_choice,
            cache: &self.cache,
            max_tokens: self.max_tokens,
        }
    }
}

/// Converts an SSE body written with `\n` to CRLF line endings.
pub fn crlf(body: &str) -> String {
    body.replace('\n', "\r\n")
}
