//! HTTP mode: rmcp's streamable-HTTP service at `/mcp`, behind a front door
//! that checks Host, Origin and the bearer key, caps and times request bodies,
//! answers malformed JSON with a JSON-RPC parse error, caps concurrent
//! sessions and closes idle ones.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use serde_json::{Value, json};
use talaria_http_listener::{BodyError, Limits, accept, bind, read_body};
use tokio_util::sync::CancellationToken;

use crate::ServeError;
use crate::gate::{Gate, Refusal};
use crate::handler::{Shared, TalariaServer};

type Reply = Response<BoxBody<Bytes, Infallible>>;
type Mcp = StreamableHttpService<TalariaServer, LocalSessionManager>;

const SESSION_HEADER: &str = "mcp-session-id";

/// How the HTTP server listens and what it lets through.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The owner's bearer key (checked by [`crate::key_from_env`]).
    pub key: String,
    /// The named clients' keys, each with whom its sessions belong to (`mcp_serve.keys`).
    pub client_keys: Vec<(String, talaria_kernel::Principal)>,
    /// Whether a non-loopback `addr` is allowed.
    pub allow_remote: bool,
    /// More `Host` names to answer to (`name` or `name:port`).
    pub allowed_hosts: Vec<String>,
    /// More `Origin`s to accept (`scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    /// Most MCP sessions open at once.
    pub max_sessions: usize,
    /// A session with no request for this long (and none in progress) is closed.
    pub idle_timeout: Duration,
    /// Largest request body, in bytes (larger: 413).
    pub max_body_bytes: usize,
    /// Time a client has to send a request's body, and its headers (at most
    /// 10 s: see `talaria_http_listener::Limits::new`).
    pub read_timeout: Duration,
    /// Most requests served at once (more wait for a slot; connections not
    /// being served are capped apart, per source and in total).
    pub max_connections: usize,
}

impl HttpOptions {
    /// The defaults for a loopback server on `addr` with `key`.
    pub fn new(addr: SocketAddr, key: String) -> Self {
        Self {
            addr,
            key,
            client_keys: Vec::new(),
            allow_remote: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_sessions: 16,
            idle_timeout: Duration::from_secs(900),
            max_body_bytes: 1024 * 1024,
            read_timeout: Duration::from_secs(10),
            max_connections: 64,
        }
    }
}

/// Last activity and requests in progress, per MCP session.
#[derive(Debug, Default)]
struct Activity(Mutex<HashMap<String, (Instant, usize)>>);

impl Activity {
    fn begin(self: &Arc<Self>, id: &str) -> InFlight {
        if let Ok(mut sessions) = self.0.lock() {
            let entry = sessions.entry(id.to_owned()).or_insert((Instant::now(), 0));
            *entry = (Instant::now(), entry.1 + 1);
        }
        InFlight {
            activity: self.clone(),
            id: id.to_owned(),
        }
    }
}

/// A request in progress (until its response body is done or dropped).
#[derive(Debug)]
struct InFlight {
    activity: Arc<Activity>,
    id: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut sessions) = self.activity.0.lock()
            && let Some(entry) = sessions.get_mut(&self.id)
        {
            *entry = (Instant::now(), entry.1.saturating_sub(1));
        }
    }
}

/// A response body that holds its session's [`InFlight`] until it ends.
struct Tracked {
    body: BoxBody<Bytes, Infallible>,
    _in_flight: InFlight,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Everything one request needs.
struct Front {
    gate: Gate,
    mcp: Mcp,
    sessions: Arc<LocalSessionManager>,
    activity: Arc<Activity>,
    /// Held while an `initialize` is checked against the cap and served, so
    /// two at once cannot both take the last place.
    opening: tokio::sync::Mutex<()>,
    options: HttpOptions,
}

fn text_reply(status: StatusCode, body: Value) -> Reply {
    let mut reply = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    reply
}

/// A JSON-RPC error object as an HTTP reply (MCP clients parse these bodies).
fn rpc_error(status: StatusCode, code: i64, message: &str, id: Value) -> Reply {
    text_reply(
        status,
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    )
}

impl Front {
    async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Result<Reply, Infallible> {
        Ok(self.serve(request).await)
    }

    async fn serve(&self, mut request: Request<Incoming>) -> Reply {
        if request.uri().path() != "/mcp" {
            return rpc_error(
                StatusCode::NOT_FOUND,
                -32000,
                "not found: the MCP endpoint is /mcp",
                Value::Null,
            );
        }
        let principal = self.gate.check(request.headers());
        if let Ok(principal) = &principal {
            // The handler reads whom the request belongs to from here (rmcp passes the
            // request's parts on).
            request.extensions_mut().insert(principal.clone());
        }
        if let Err(refusal) = principal {
            eprintln!("talaria mcp serve: refused a request: {refusal}");
            let mut reply = match &refusal {
                Refusal::Unauthorized(_) => rpc_error(
                    StatusCode::UNAUTHORIZED,
                    -32001,
                    &refusal.to_string(),
                    Value::Null,
                ),
                Refusal::Forbidden(_) => rpc_error(
                    StatusCode::FORBIDDEN,
                    -32001,
                    &refusal.to_string(),
                    Value::Null,
                ),
            };
            if matches!(refusal, Refusal::Unauthorized(_)) {
                reply.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
            }
            return reply;
        }
        let session = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let (parts, body) = request.into_parts();
        let (bytes, message) = if parts.method == http::Method::POST {
            match self.read_body(&parts.headers, body).await {
                Ok(read) => read,
                Err(reply) => return reply,
            }
        } else {
            (Bytes::new(), Value::Null)
        };
        let initialize = session.is_none() && message.get("method") == Some(&json!("initialize"));
        let request = Request::from_parts(parts, Full::new(bytes));
        if initialize {
            return self.open_session(request).await;
        }
        match session {
            Some(id) => {
                let in_flight = self.activity.begin(&id);
                let (parts, body) = self.mcp.handle(request).await.into_parts();
                let body = Tracked {
                    body,
                    _in_flight: in_flight,
                };
                Response::from_parts(parts, body.boxed())
            }
            None => self.mcp.handle(request).await,
        }
    }

    /// Reads a POST body within the size cap and the read timeout, and checks
    /// that it is JSON-RPC: the bytes, and the message as JSON.
    async fn read_body(
        &self,
        headers: &http::HeaderMap,
        body: Incoming,
    ) -> Result<(Bytes, Value), Reply> {
        let bytes = read_body(
            headers,
            body,
            self.options.max_body_bytes,
            self.options.read_timeout,
        )
        .await
        .map_err(|error| match error {
            BodyError::TooLarge { .. } => rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                &error.to_string(),
                Value::Null,
            ),
            BodyError::Broken(_) => rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                &error.to_string(),
                Value::Null,
            ),
            BodyError::TooSlow { .. } => {
                eprintln!("talaria mcp serve: cut off a client that sent its body too slowly");
                let mut reply = rpc_error(
                    StatusCode::REQUEST_TIMEOUT,
                    -32600,
                    &error.to_string(),
                    Value::Null,
                );
                reply.headers_mut().insert(
                    header::CONNECTION,
                    header::HeaderValue::from_static("close"),
                );
                reply
            }
        })?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|error| {
            rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                &format!("parse error: the body is not valid JSON ({error})"),
                Value::Null,
            )
        })?;
        if let Err(error) = ClientJsonRpcMessage::deserialize(&value) {
            let id = value.get("id").cloned().unwrap_or(Value::Null);
            return Err(rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                &format!(
                    "invalid request: not a JSON-RPC message this server understands ({error})"
                ),
                id,
            ));
        }
        Ok((bytes, value))
    }

    /// Serves an `initialize` that opens a session, if there is room for one.
    async fn open_session(&self, request: Request<Full<Bytes>>) -> Reply {
        let _opening = self.opening.lock().await;
        let open = self.sessions.sessions.read().await.len();
        if open >= self.options.max_sessions {
            eprintln!("talaria mcp serve: refused a session: {open} are open");
            return rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                -32000,
                &format!(
                    "too many MCP sessions are open ({open}); close one (HTTP DELETE) or wait \
                     for an idle one to expire"
                ),
                Value::Null,
            );
        }
        let reply = self.mcp.handle(request).await;
        if let Some(id) = reply
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
        {
            drop(self.activity.begin(id));
        }
        reply
    }

    /// Closes sessions idle for longer than the timeout; forgets closed ones.
    async fn expire_idle(&self) {
        let live: Vec<String> = self
            .sessions
            .sessions
            .read()
            .await
            .keys()
            .map(ToString::to_string)
            .collect();
        let idle: Vec<String> = {
            let Ok(mut activity) = self.activity.0.lock() else {
                return;
            };
            activity.retain(|id, _| live.contains(id));
            for id in &live {
                activity.entry(id.clone()).or_insert((Instant::now(), 0));
            }
            activity
                .iter()
                .filter(|(_, (last, in_flight))| {
                    *in_flight == 0 && last.elapsed() >= self.options.idle_timeout
                })
                .map(|(id, _)| id.clone())
                .collect()
        };
        for id in idle {
            eprintln!("talaria mcp serve: closing idle session {id}");
            let _ = self.sessions.close_session(&id.as_str().into()).await;
            if let Ok(mut activity) = self.activity.0.lock() {
                activity.remove(&id);
            }
        }
    }
}

fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Serves until `shutdown` is cancelled.
pub async fn serve(
    shared: Arc<Shared>,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    if !is_loopback(&options.addr) && !options.allow_remote {
        return Err(ServeError::Config(format!(
            "refusing to listen on {}: it is not a loopback address, and this server runs \
             prompts with the agent's tools behind nothing but a bearer key over plain HTTP. \
             Listen on 127.0.0.1, or pass --allow-remote (and put TLS in front of it, and \
             --allow-host the name clients use)",
            options.addr
        )));
    }
    let (listener, addr) = bind(options.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.addr,
            source,
        })?;
    let mut sessions = LocalSessionManager::default();
    // Idle sessions are closed by `expire_idle`, which knows about runs in
    // progress; rmcp's own timer would end a session in the middle of a long run.
    sessions.session_config.keep_alive = None;
    let sessions = Arc::new(sessions);
    // Host and Origin are checked by the gate (with the port, and the names
    // added by flags), so rmcp's own checks stand aside.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(shutdown.child_token());
    let factory = {
        let shared = shared.clone();
        move || Ok(TalariaServer::for_http(shared.clone()))
    };
    let front = Arc::new(Front {
        gate: Gate::new(
            &options.key,
            &options.client_keys,
            addr,
            &options.allowed_hosts,
            &options.allowed_origins,
        ),
        mcp: StreamableHttpService::new(factory, sessions.clone(), config),
        sessions,
        activity: Arc::default(),
        opening: tokio::sync::Mutex::new(()),
        options: options.clone(),
    });
    // Reported on stderr for whoever started us (port 0 picks a free port).
    eprintln!("talaria mcp serve: listening on http://{addr}/mcp");

    let reaper = {
        let front = front.clone();
        let every =
            (options.idle_timeout / 4).clamp(Duration::from_millis(200), Duration::from_secs(30));
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(every) => front.expire_idle().await,
                }
            }
        })
    };
    let limits = Limits::new(options.max_connections, options.read_timeout);
    accept(listener, limits, shutdown, "mcp serve", || {
        let front = front.clone();
        hyper::service::service_fn(move |request| front.clone().handle(request))
    })
    .await;
    reaper.abort();
    Ok(())
}
