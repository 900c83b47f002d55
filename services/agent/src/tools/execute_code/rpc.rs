//! The host side of `talaria_tools`: a Unix-socket server speaking one JSON
//! object per line. A request is `{"id":1,"tool":"read_file","args":{…}}`;
//! the answer is `{"id":1,"ok":true,"content":"…"}` or
//! `{"id":1,"ok":false,"error":"…"}`. Calls go through the session's tool
//! dispatcher, limited to the whitelist and to a number of calls per script.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;
use serde_json::Value;
use talaria_kernel::validate::validate_call;
use talaria_kernel::{CancellationToken, ToolCall, ToolContext, ToolDispatcher, ToolSpec};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinSet;

use super::python::whitelisted;

/// Longest request line accepted (a `write_file` of a large file fits).
pub(crate) const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// What the server needs to run one script's calls.
pub(crate) struct Bridge {
    tools: Arc<dyn ToolDispatcher>,
    /// The whitelisted tools this session offers.
    offered: Vec<ToolSpec>,
    context: ToolContext,
    max_calls: usize,
    calls: AtomicUsize,
    /// Makes call ids unique in the session (results may be spilled to
    /// files named after them).
    id_prefix: String,
    cancel: CancellationToken,
}

impl Bridge {
    /// A bridge to `tools` for calls made on behalf of `context`'s session,
    /// at most `max_calls` of them. `cancel` is handed to every call.
    pub(crate) fn new(
        tools: Arc<dyn ToolDispatcher>,
        context: ToolContext,
        max_calls: usize,
        cancel: CancellationToken,
    ) -> Self {
        let offered = tools
            .specs()
            .into_iter()
            .filter(|spec| whitelisted(&spec.name))
            .collect();
        Self {
            tools,
            offered,
            context,
            max_calls,
            calls: AtomicUsize::new(0),
            id_prefix: format!("code_{:08x}", fastrand::u32(..)),
            cancel,
        }
    }

    /// Calls dispatched so far.
    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::Acquire)
    }

    /// The answer to one request line.
    pub(crate) async fn answer(&self, line: &[u8]) -> Reply {
        let request: Value = match serde_json::from_slice(line) {
            Ok(request) => request,
            Err(error) => return Reply::error(Value::Null, format!("bad request: {error}")),
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let Some(tool) = request.get("tool").and_then(Value::as_str) else {
            return Reply::error(id, "bad request: \"tool\" must be a tool name");
        };
        let args = match request.get("args") {
            None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
            Some(args @ Value::Object(_)) => args.clone(),
            Some(_) => {
                return Reply::error(id, "bad request: \"args\" must be a JSON object");
            }
        };
        match self.call(tool, args).await {
            Ok(content) => Reply::ok(id, content),
            Err(message) => Reply::error(id, message),
        }
    }

    async fn call(&self, tool: &str, args: Value) -> Result<String, String> {
        if !whitelisted(tool) {
            return Err(format!(
                "tool '{tool}' cannot be called from execute_code (available: {})",
                self.available()
            ));
        }
        if !self.offered.iter().any(|spec| spec.name == tool) {
            return Err(format!(
                "tool '{tool}' is not available in this session (available: {})",
                self.available()
            ));
        }
        let call = ToolCall {
            id: String::new(),
            name: tool.to_owned(),
            arguments: args.to_string(),
        };
        let validated = validate_call(&call, &self.offered)?;
        // Count only calls that really run; refuse once the limit is reached.
        let number = self
            .calls
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_calls).then_some(n + 1)
            })
            .map_err(|_| {
                format!(
                    "tool call limit reached: a script may make at most {} calls",
                    self.max_calls
                )
            })?
            + 1;
        let mut validated = validated;
        validated.call.id = format!("{}_{number}", self.id_prefix);
        let results = self
            .tools
            .execute(
                std::slice::from_ref(&validated),
                &self.context,
                &self.cancel,
            )
            .await;
        match results.into_iter().next() {
            Some(result) if result.is_error => Err(result.content),
            Some(result) => Ok(result.content),
            None => Err(format!("tool '{tool}' returned no result")),
        }
    }

    fn available(&self) -> String {
        if self.offered.is_empty() {
            return "none".to_owned();
        }
        self.offered
            .iter()
            .map(|spec| spec.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One answer line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Reply {
    id: Value,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Reply {
    fn ok(id: Value, content: String) -> Self {
        Self {
            id,
            ok: true,
            content: Some(content),
            error: None,
        }
    }

    fn error(id: Value, message: impl Into<String>) -> Self {
        Self {
            id,
            ok: false,
            content: None,
            error: Some(message.into()),
        }
    }
}

/// Serves connections on `listener` until the future is dropped (which
/// aborts the connections and the calls in flight). Returns only when
/// accepting fails; the connections already open are served to their end.
pub(crate) async fn serve(listener: UnixListener, bridge: Arc<Bridge>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, bridge.clone()));
                }
                Err(_) => break,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    while connections.join_next().await.is_some() {}
}

/// Answers one connection's requests, in order, until it closes.
async fn connection(stream: UnixStream, bridge: Arc<Bridge>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = u64::try_from(MAX_REQUEST_BYTES).unwrap_or(u64::MAX) + 1;
        match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let too_long = line.len() > MAX_REQUEST_BYTES;
        let reply = if too_long {
            Reply::error(
                Value::Null,
                format!("bad request: longer than {MAX_REQUEST_BYTES} bytes"),
            )
        } else {
            bridge.answer(&line).await
        };
        let Ok(mut text) = serde_json::to_vec(&reply) else {
            return;
        };
        text.push(b'\n');
        if write.write_all(&text).await.is_err() || too_long {
            // The rest of an overlong line cannot be told from the next request.
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use serde_json::json;
    use talaria_kernel::{ToolResult, ValidatedCall};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::*;

    /// Echoes its calls; `fail` always fails; records what it saw.
    #[derive(Default)]
    struct FakeTools {
        seen: Mutex<Vec<(String, Value, String)>>,
    }

    fn spec(name: &str, required: &[&str]) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object", "required": required}),
            refunds_iteration: false,
        }
    }

    #[async_trait]
    impl ToolDispatcher for FakeTools {
        fn specs(&self) -> Vec<ToolSpec> {
            vec![
                spec("read_file", &["path"]),
                spec("terminal", &["command"]),
                spec("memory", &[]),
            ]
        }

        async fn execute(
            &self,
            calls: &[ValidatedCall],
            context: &ToolContext,
            _cancel: &CancellationToken,
        ) -> Vec<ToolResult> {
            calls
                .iter()
                .map(|call| {
                    self.seen.lock().unwrap().push((
                        call.call.name.clone(),
                        call.arguments.clone(),
                        context.session_id.clone(),
                    ));
                    if call.arguments["command"] == "fail" {
                        ToolResult::error(&call.call, "it failed")
                    } else {
                        ToolResult::ok(&call.call, format!("{{\"got\":{}}}", call.arguments))
                    }
                })
                .collect()
        }
    }

    struct Server {
        _dir: tempfile::TempDir,
        socket: std::path::PathBuf,
        bridge: Arc<Bridge>,
        tools: Arc<FakeTools>,
        _task: tokio::task::JoinHandle<()>,
    }

    fn server(max_calls: usize) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("t.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let tools = Arc::new(FakeTools::default());
        let bridge = Arc::new(Bridge::new(
            tools.clone(),
            ToolContext {
                session_id: "s-1".into(),
            },
            max_calls,
            CancellationToken::new(),
        ));
        let task = tokio::spawn(serve(listener, bridge.clone()));
        Server {
            _dir: dir,
            socket,
            bridge,
            tools,
            _task: task,
        }
    }

    struct Client {
        reader: BufReader<tokio::net::unix::OwnedReadHalf>,
        writer: tokio::net::unix::OwnedWriteHalf,
    }

    impl Client {
        async fn connect(server: &Server) -> Self {
            let (read, writer) = UnixStream::connect(&server.socket)
                .await
                .unwrap()
                .into_split();
            Self {
                reader: BufReader::new(read),
                writer,
            }
        }

        async fn send(&mut self, line: &str) -> Value {
            self.writer.write_all(line.as_bytes()).await.unwrap();
            self.writer.write_all(b"\n").await.unwrap();
            let mut answer = String::new();
            self.reader.read_line(&mut answer).await.unwrap();
            serde_json::from_str(&answer).unwrap()
        }
    }

    #[tokio::test]
    async fn calls_go_to_the_dispatcher_with_the_session_and_come_back() {
        let server = server(50);
        let mut client = Client::connect(&server).await;
        let reply = client
            .send(r#"{"id":7,"tool":"read_file","args":{"path":"a.txt"}}"#)
            .await;
        assert_eq!(
            reply,
            json!({"id": 7, "ok": true, "content": "{\"got\":{\"path\":\"a.txt\"}}"})
        );
        let reply = client
            .send(r#"{"id":8,"tool":"terminal","args":{"command":"fail"}}"#)
            .await;
        assert_eq!(reply, json!({"id": 8, "ok": false, "error": "it failed"}));
        let seen = server.tools.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].2, "s-1");
        assert_eq!(server.bridge.calls(), 2);
    }

    #[tokio::test]
    async fn the_call_limit_is_enforced_across_connections() {
        let server = server(2);
        let mut first = Client::connect(&server).await;
        let mut second = Client::connect(&server).await;
        let call = r#"{"id":1,"tool":"read_file","args":{"path":"a"}}"#;
        assert_eq!(first.send(call).await["ok"], true);
        assert_eq!(second.send(call).await["ok"], true);
        let refused = first.send(call).await;
        assert_eq!(refused["ok"], false);
        assert!(
            refused["error"]
                .as_str()
                .unwrap()
                .contains("at most 2 calls"),
            "{refused}"
        );
        assert_eq!(server.bridge.calls(), 2);
        assert_eq!(server.tools.seen.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn tools_outside_the_whitelist_or_the_session_are_refused() {
        let server = server(50);
        let mut client = Client::connect(&server).await;
        // Offered by the session, but not to scripts.
        let reply = client.send(r#"{"id":1,"tool":"memory","args":{}}"#).await;
        assert_eq!(reply["ok"], false);
        let error = reply["error"].as_str().unwrap();
        assert!(
            error.contains("cannot be called from execute_code")
                && error.contains("available: read_file, terminal"),
            "{error}"
        );
        // Whitelisted, but this session has no web tools.
        let reply = client
            .send(r#"{"id":2,"tool":"web_search","args":{"query":"x"}}"#)
            .await;
        assert!(
            reply["error"]
                .as_str()
                .unwrap()
                .contains("not available in this session"),
            "{reply}"
        );
        let reply = client.send(r#"{"id":3,"tool":"no_such_tool"}"#).await;
        assert_eq!(reply["ok"], false);
        // Schema checks apply as to the model's own calls.
        let reply = client.send(r#"{"id":4,"tool":"read_file"}"#).await;
        assert!(
            reply["error"]
                .as_str()
                .unwrap()
                .contains("Missing required argument(s) for tool 'read_file': path"),
            "{reply}"
        );
        assert!(server.tools.seen.lock().unwrap().is_empty());
        assert_eq!(server.bridge.calls(), 0);
    }

    #[tokio::test]
    async fn bad_lines_get_an_error_and_the_connection_goes_on() {
        let server = server(50);
        let mut client = Client::connect(&server).await;
        let reply = client.send("this is not json").await;
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(reply["ok"], false);
        assert!(
            reply["error"].as_str().unwrap().starts_with("bad request"),
            "{reply}"
        );
        let reply = client
            .send(r#"{"id":2,"tool":"read_file","args":["a"]}"#)
            .await;
        assert_eq!(
            reply,
            json!({"id": 2, "ok": false, "error": "bad request: \"args\" must be a JSON object"})
        );
        let reply = client.send(r#"{"id":3,"args":{}}"#).await;
        assert_eq!(reply["id"], 3);
        assert_eq!(reply["ok"], false);
        let reply = client
            .send(r#"{"id":4,"tool":"read_file","args":{"path":"x"}}"#)
            .await;
        assert_eq!(reply["ok"], true, "{reply}");
    }
}
