//! The scripted server: accepts connections, records requests and plays script steps.

use std::collections::HashSet;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::http::{Connection, Ending, Framing, Request, Response, Running, serve_on_thread};
use crate::recorder::{self, RecordedRequest, Wire};
use crate::render::{Call, Completion, Finish, SseEvent, Usage, tokens};
use crate::script::{Script, Step, StepKind};

/// Text streamed before a [`StepKind::Stall`] goes silent.
const STALL_TEXT: &str = "This reply stalls before it is finished.";
/// Text of the reply a [`StepKind::DropMidStream`] cuts off.
const DROP_TEXT: &str = "This reply is cut off mid-stream: the server hangs up before it ends.";

/// Line ending used inside SSE bodies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LineEnding {
    /// `\n` (the default).
    #[default]
    Lf,
    /// `\r\n`.
    CrLf,
}

impl LineEnding {
    fn as_str(self) -> &'static str {
        match self {
            Self::Lf => "\n",
            Self::CrLf => "\r\n",
        }
    }
}

/// Server configuration; `ServerOptions::default()` suits most tests.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Port on 127.0.0.1; 0 (default) picks a free one.
    pub port: u16,
    /// Bytes per HTTP chunk of a streamed body, each flushed separately (default 11), so
    /// SSE events straddle chunk boundaries; 0 sends one chunk per SSE event instead,
    /// the way hosted APIs flush a stream.
    pub chunk_size: usize,
    /// Pause after each streamed chunk (default none).
    pub chunk_delay: Duration,
    /// Line ending of SSE bodies (default LF).
    pub line_ending: LineEnding,
    /// Start the script over when it is exhausted instead of answering 500.
    pub loop_script: bool,
    /// Append every request to this file as a JSON line (see [`crate::read_jsonl`]).
    pub record_path: Option<PathBuf>,
    /// Print one line per request to stderr.
    pub log_requests: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            port: 0,
            chunk_size: 11,
            chunk_delay: Duration::ZERO,
            line_ending: LineEnding::Lf,
            loop_script: false,
            record_path: None,
            log_requests: false,
        }
    }
}

/// A running scripted model server on 127.0.0.1. Dropping the handle shuts it down.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _running: Running,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("addr", &self.addr)
            .field("remaining_steps", &self.remaining_steps())
            .finish_non_exhaustive()
    }
}

impl ScriptedServer {
    /// Starts the server on the current tokio runtime.
    pub async fn start(script: impl Into<Script>, options: ServerOptions) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", options.port)).await?;
        let addr = listener.local_addr()?;
        let (shutdown, stop) = watch::channel(false);
        let shared = Arc::new(Shared::new(script.into(), options, stop));
        tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(Self {
            addr,
            shared,
            _running: Running::new(shutdown, None),
        })
    }

    /// Starts the server with default options on a background thread with its own runtime,
    /// for synchronous tests (e.g. ones that run a child process against it).
    pub fn spawn(script: impl Into<Script>) -> io::Result<Self> {
        Self::spawn_with(script, ServerOptions::default())
    }

    /// [`ScriptedServer::spawn`] with explicit options.
    pub fn spawn_with(script: impl Into<Script>, options: ServerOptions) -> io::Result<Self> {
        let port = options.port;
        let (shutdown, stop) = watch::channel(false);
        let shared = Arc::new(Shared::new(script.into(), options, stop));
        let server = Arc::clone(&shared);
        let (addr, thread) = serve_on_thread("scripted-server", port, move |listener| {
            accept_loop(listener, server)
        })?;
        Ok(Self {
            addr,
            shared,
            _running: Running::new(shutdown, Some(thread)),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`, the OpenAI-style base URL (clients append `/chat/completions`,
    /// or `/responses` on the Responses wire).
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// Same as [`ScriptedServer::base_url`]: Anthropic clients append `/v1/messages`.
    pub fn anthropic_base_url(&self) -> String {
        self.base_url()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Steps not played yet (in the current pass, when looping).
    pub fn remaining_steps(&self) -> usize {
        let state = self.shared.lock();
        state.script.len().saturating_sub(state.position)
    }

    /// Appends a step to the script.
    pub fn push(&self, step: Step) {
        self.shared.lock().script.steps.push(step);
    }
}

/// State shared by the handle and every connection.
struct Shared {
    options: ServerOptions,
    state: Mutex<State>,
    next_tool_id: AtomicU64,
    stop: watch::Receiver<bool>,
}

struct State {
    script: Script,
    /// Index of the next step to play.
    position: usize,
    requests: Vec<RecordedRequest>,
    seen_system_prompts: HashSet<String>,
}

/// What a request asked for, as far as rendering is concerned.
struct Ask {
    wire: Wire,
    index: usize,
    stream: bool,
    include_usage: bool,
    model: String,
    usage: Usage,
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = 0;
    loop {
        tokio::select! {
            () = shared.stopped() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections += 1;
                    tokio::spawn(serve_connection(stream, Arc::clone(&shared), connections));
                }
                // E.g. out of file descriptors: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
}

/// Serves one connection's requests in turn until the client or a response closes it.
async fn serve_connection(stream: TcpStream, shared: Arc<Shared>, connection: u64) {
    let mut conn = Connection::new(stream);
    let framing = Framing {
        chunk_size: shared.options.chunk_size,
        chunk_delay: shared.options.chunk_delay,
    };
    loop {
        let read = tokio::select! {
            read = conn.read_request() => read,
            () = shared.stopped() => return,
        };
        let (response, delay, keep_alive) = match read {
            Ok(Some(request)) => {
                let keep_alive = request.keep_alive();
                let (response, delay) = shared.respond(request, connection);
                (response, delay, keep_alive)
            }
            Ok(None) => return,
            Err(e) => (bad_request(&e.to_string()), None, false),
        };
        if let Some(delay) = delay {
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = shared.stopped() => return,
            }
        }
        // Only a complete response can be followed by another on the same connection.
        let keep_alive = keep_alive && response.ending == Ending::Complete;
        // The peer hanging up is its business; nothing to report.
        if conn
            .send(&response, framing, keep_alive, shared.stopped())
            .await
            .is_err()
            || !keep_alive
        {
            return;
        }
    }
}

fn route(path: &str) -> Option<Wire> {
    match path.trim_end_matches('/') {
        "/v1/chat/completions" | "/chat/completions" => Some(Wire::OpenAi),
        "/v1/responses" | "/responses" => Some(Wire::OpenAiResponses),
        "/v1/messages" | "/messages" => Some(Wire::Anthropic),
        _ => None,
    }
}

fn json_response(status: u16, body: &Value) -> Response {
    Response {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
        chunked: false,
        ending: Ending::Complete,
    }
}

fn bad_request(message: &str) -> Response {
    json_response(
        400,
        &Wire::OpenAi.error_body(400, Some(&format!("scripted server: {message}"))),
    )
}

impl Shared {
    fn new(script: Script, options: ServerOptions, stop: watch::Receiver<bool>) -> Self {
        Self {
            options,
            state: Mutex::new(State {
                script,
                position: 0,
                requests: Vec::new(),
                seen_system_prompts: HashSet::new(),
            }),
            next_tool_id: AtomicU64::new(1),
            stop,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves when the server is shut down (or its handle is gone).
    async fn stopped(&self) {
        let mut stop = self.stop.clone();
        let _ = stop.wait_for(|stopped| *stopped).await;
    }

    /// Records `request`, takes the next step and renders it; also returns the step's delay.
    fn respond(&self, request: Request, connection: u64) -> (Response, Option<Duration>) {
        let Some(wire) = route(request.path()) else {
            let message = format!(
                "scripted server: no route for {} {}",
                request.method, request.target
            );
            let body = Wire::OpenAi.error_body(404, Some(&message));
            return (json_response(404, &body), None);
        };
        if request.method != "POST" {
            let message = format!("scripted server: {} not allowed", request.method);
            return (
                json_response(405, &wire.error_body(405, Some(&message))),
                None,
            );
        }
        let (ask, step) = self.record(wire, request, connection);
        let delay = step
            .as_ref()
            .and_then(|s| s.delay_ms)
            .map(Duration::from_millis);
        let response = match step {
            Some(step) => self.play(&ask, &step.kind),
            None => {
                let message = format!(
                    "scripted server: script exhausted (request {})",
                    ask.index + 1
                );
                json_response(500, &wire.error_body(500, Some(&message)))
            }
        };
        (response, delay)
    }

    /// Records the request and takes the next step (`None` once the script is exhausted).
    fn record(&self, wire: Wire, request: Request, connection: u64) -> (Ask, Option<Step>) {
        let raw_body = String::from_utf8_lossy(&request.body).into_owned();
        let body: Value = serde_json::from_str(&raw_body).unwrap_or(Value::Null);
        let flag = |pointer: &str| body.pointer(pointer).and_then(Value::as_bool) == Some(true);
        let (stream, include_usage) = (flag("/stream"), flag("/stream_options/include_usage"));
        let model = body.get("model").and_then(Value::as_str);
        let model = model.unwrap_or("scripted-model").to_owned();
        let mut usage = Usage {
            prompt: tokens(raw_body.len()).max(1),
            ..Usage::default()
        };
        let mut recorded = RecordedRequest {
            index: 0,
            method: request.method,
            path: request.target,
            headers: request.headers,
            body,
            raw_body,
            wire,
            stream,
            connection,
        };
        let system = recorded.system_prompt_raw();

        let mut state = self.lock();
        recorded.index = state.requests.len();
        if !system.is_empty() {
            let system_tokens = tokens(system.len()).min(usage.prompt);
            // Writes are billed (and reported) where the client asked for breakpoints:
            // Anthropic always, a router in front of Claude when `cache_control` is sent.
            let marks_breakpoints =
                wire == Wire::Anthropic || recorded.raw_body.contains("\"cache_control\"");
            if state.seen_system_prompts.insert(system) {
                usage.cache_write = if marks_breakpoints { system_tokens } else { 0 };
            } else {
                usage.cache_read = system_tokens;
            }
        }
        if state.position >= state.script.len() && self.options.loop_script {
            state.position = 0;
        }
        let step = state.script.steps.get(state.position).cloned();
        if step.is_some() {
            state.position += 1;
        }
        self.log(&recorded, step.as_ref());
        let ask = Ask {
            wire,
            index: recorded.index,
            stream,
            include_usage,
            model,
            usage,
        };
        state.requests.push(recorded);
        (ask, step)
    }

    fn log(&self, recorded: &RecordedRequest, step: Option<&Step>) {
        if let Some(path) = &self.options.record_path
            && let Err(e) = recorder::append_jsonl(path, recorded)
        {
            eprintln!("scripted server: cannot record to {}: {e}", path.display());
        }
        if self.options.log_requests {
            eprintln!(
                "scripted server: request {} {} {} ({}{}) -> {}",
                recorded.index + 1,
                recorded.method,
                recorded.path,
                recorded.wire,
                if recorded.stream { ", stream" } else { "" },
                step.map_or("script exhausted", |s| s.kind.name()),
            );
        }
    }

    /// Renders one step for `ask`.
    fn play(&self, ask: &Ask, kind: &StepKind) -> Response {
        let wire = ask.wire;
        match kind {
            StepKind::Text { text, reasoning } => {
                let reply = self.completion(
                    ask,
                    reasoning.as_deref(),
                    Some(text),
                    Vec::new(),
                    Finish::Stop,
                );
                self.success(ask, &reply)
            }
            StepKind::ToolCalls {
                calls,
                text,
                reasoning,
            } => {
                let calls = calls
                    .iter()
                    .map(|call| Call {
                        id: call.id.clone().unwrap_or_else(|| self.tool_id(wire)),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    })
                    .collect();
                let reply = self.completion(
                    ask,
                    reasoning.as_deref(),
                    text.as_deref(),
                    calls,
                    Finish::ToolCalls,
                );
                self.success(ask, &reply)
            }
            StepKind::Truncated { text } => {
                let reply = self.completion(ask, None, Some(text), Vec::new(), Finish::Length);
                self.success(ask, &reply)
            }
            StepKind::Error {
                status,
                message,
                retry_after,
            } => {
                let mut response =
                    json_response(*status, &wire.error_body(*status, message.as_deref()));
                if let Some(retry_after) = retry_after {
                    response
                        .headers
                        .push(("Retry-After".into(), retry_after.clone()));
                }
                response
            }
            StepKind::ContextOverflow => {
                json_response(400, &wire.context_overflow_body(ask.usage.prompt))
            }
            StepKind::MalformedSse if ask.stream => self.sse(&wire.malformed_events()),
            StepKind::MalformedSse => Response {
                body: wire.malformed_body().into_bytes(),
                ..json_response(200, &Value::Null)
            },
            StepKind::Stall { seconds } => {
                let completion =
                    self.completion(ask, None, Some(STALL_TEXT), Vec::new(), Finish::Stop);
                let mut response = self.success(ask, &completion);
                response.ending = Ending::Stall {
                    head: ask.stream,
                    // The first chunk, then silence.
                    bytes: if ask.stream {
                        crate::http::pieces(&response.body, self.options.chunk_size)
                            .first()
                            .map_or(0, |piece| piece.len())
                    } else {
                        0
                    },
                    duration: Duration::try_from_secs_f64(seconds.max(0.0))
                        .unwrap_or(Duration::MAX),
                };
                response
            }
            StepKind::DropMidStream => {
                let completion =
                    self.completion(ask, None, Some(DROP_TEXT), Vec::new(), Finish::Stop);
                let mut response = self.success(ask, &completion);
                let cut = if ask.stream {
                    // Whole events only: the first half, which ends inside the text deltas.
                    let events = wire.completion_events(&completion, ask.include_usage);
                    let eol = self.options.line_ending.as_str();
                    events[..events.len() / 2]
                        .iter()
                        .map(|e| e.encode(eol).len())
                        .sum()
                } else {
                    response.body.len() / 2
                };
                response.ending = Ending::DropAfter(cut);
                response
            }
        }
    }

    fn tool_id(&self, wire: Wire) -> String {
        let n = self.next_tool_id.fetch_add(1, Ordering::Relaxed);
        match wire {
            Wire::OpenAi | Wire::OpenAiResponses => format!("call_{n}"),
            Wire::Anthropic => format!("toolu_{n}"),
        }
    }

    fn completion(
        &self,
        ask: &Ask,
        reasoning: Option<&str>,
        text: Option<&str>,
        tool_calls: Vec<Call>,
        finish: Finish,
    ) -> Completion {
        let reasoning_len = reasoning.map_or(0, str::len);
        let output_len = reasoning_len
            + text.map_or(0, str::len)
            + tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.len())
                .sum::<usize>();
        let usage = Usage {
            completion: tokens(output_len).max(1),
            reasoning: tokens(reasoning_len),
            ..ask.usage
        };
        let id = match ask.wire {
            Wire::OpenAi => format!("chatcmpl-testkit-{}", ask.index + 1),
            Wire::OpenAiResponses => format!("resp_testkit_{}", ask.index + 1),
            Wire::Anthropic => format!("msg_testkit_{}", ask.index + 1),
        };
        Completion {
            id,
            model: ask.model.clone(),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            reasoning: reasoning.map(str::to_owned),
            text: text.map(str::to_owned),
            tool_calls,
            finish,
            usage,
        }
    }

    /// A 200 reply: an SSE stream or a JSON body, as the request asked.
    fn success(&self, ask: &Ask, completion: &Completion) -> Response {
        if ask.stream {
            self.sse(&ask.wire.completion_events(completion, ask.include_usage))
        } else {
            json_response(200, &ask.wire.completion_body(completion))
        }
    }

    fn sse(&self, events: &[SseEvent]) -> Response {
        let eol = self.options.line_ending.as_str();
        let body: String = events.iter().map(|e| e.encode(eol)).collect();
        Response {
            status: 200,
            headers: vec![
                (
                    "Content-Type".into(),
                    "text/event-stream; charset=utf-8".into(),
                ),
                ("Cache-Control".into(), "no-cache".into()),
            ],
            body: body.into_bytes(),
            chunked: true,
            ending: Ending::Complete,
        }
    }
}
