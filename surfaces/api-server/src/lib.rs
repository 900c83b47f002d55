//! `talaria serve`: an OpenAI-compatible API server. Each request runs as a
//! Talaria agent turn in a stored session: `POST /v1/chat/completions`
//! (streaming or not; the resent history is mapped to its session by a hash
//! chain, see [`chain`]), `POST /v1/responses` (with `previous_response_id`
//! chaining and stored responses), `GET /v1/models`, `GET /health`. Behind a
//! bearer key (compared in constant time), a body limit, a cap on concurrent
//! runs and header/body read timeouts.

mod auth;
pub mod chain;
mod chat;
mod error;
mod request;
mod responses;
mod runner;
mod server;
mod sse;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use talaria_profile::{Overrides, ProfileHome};
use tokio::sync::Semaphore;

pub use auth::MIN_KEY_CHARS;
pub use error::ApiError;
pub use server::serve;

/// The environment variable holding the key (it wins over `api_server.key`).
pub const KEY_ENV: &str = "TALARIA_API_SERVER_KEY";

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The options cannot work (no key, a short one, …).
    #[error("{0}")]
    Config(String),
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// What the server serves and how.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The profile whose model, tools and sessions are used.
    pub home: ProfileHome,
    /// Model flags given on the command line.
    pub overrides: Overrides,
    /// Where runs work.
    pub cwd: PathBuf,
    /// Where to listen.
    pub addr: SocketAddr,
    /// The bearer keys clients send, each with whom its sessions belong to (the owner's and
    /// the named clients').
    pub keys: Vec<(String, talaria_kernel::Principal)>,
    /// Largest request body, in bytes (larger: 413).
    pub max_body_bytes: usize,
    /// Most runs at once (more: 429).
    pub max_concurrent_runs: usize,
    /// Origins browsers may call from (none: no CORS headers).
    pub cors_origins: Vec<String>,
    /// Time a client has to send a request's body, and its headers (at most
    /// 10 s: see `talaria_http_listener::Limits::new`).
    pub read_timeout: Duration,
    /// Most requests served at once (more wait for a slot; connections not
    /// being served are capped apart, per source and in total).
    pub max_connections: usize,
}

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct State {
    gate: auth::KeyGate,
    runner: Arc<runner::Runner>,
    runs: Arc<Semaphore>,
    max_runs: usize,
    max_body_bytes: usize,
    read_timeout: Duration,
}

type Shared = Arc<State>;

/// The routes, ready to serve.
pub fn router(options: &ServeOptions) -> Result<Router, ServeError> {
    routes(state(options)?, &options.cors_origins)
}

fn state(options: &ServeOptions) -> Result<Shared, ServeError> {
    let gate = auth::KeyGate::with_keys(&options.keys).map_err(ServeError::Config)?;
    if options.max_concurrent_runs == 0 {
        return Err(ServeError::Config(
            "api_server.max_concurrent_runs must be at least 1".into(),
        ));
    }
    let state = Arc::new(State {
        gate,
        runner: Arc::new(runner::Runner::new(
            options.home.clone(),
            options.overrides.clone(),
            options.cwd.clone(),
        )),
        runs: Arc::new(Semaphore::new(options.max_concurrent_runs)),
        max_runs: options.max_concurrent_runs,
        max_body_bytes: options.max_body_bytes,
        read_timeout: options.read_timeout,
    });
    Ok(state)
}

fn routes(state: Shared, cors_origins: &[String]) -> Result<Router, ServeError> {
    let router = Router::new()
        .route("/health", get(health))
        .route("/v1/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat::completions))
        .route("/v1/responses", post(responses::create))
        .route(
            "/v1/responses/{id}",
            get(responses::fetch).delete(responses::delete),
        )
        .fallback(not_found)
        .with_state(state);
    Ok(match cors(cors_origins)? {
        Some(layer) => router.layer(layer),
        None => router,
    })
}

/// CORS for the listed origins only; none listed: no CORS headers at all.
fn cors(origins: &[String]) -> Result<Option<tower_http::cors::CorsLayer>, ServeError> {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return Ok(None);
    }
    let origins = origins
        .iter()
        .map(|origin| {
            http::HeaderValue::from_str(origin.trim().trim_end_matches('/')).map_err(|_| {
                ServeError::Config(format!(
                    "api_server.cors_origins: '{origin}' is not an origin"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([http::Method::GET, http::Method::POST, http::Method::DELETE])
            .allow_headers([
                http::header::AUTHORIZATION,
                http::header::CONTENT_TYPE,
                http::HeaderName::from_static(request::SESSION_HEADER),
            ])
            .expose_headers([http::HeaderName::from_static(request::SESSION_HEADER)]),
    ))
}

#[cfg(test)]
mod tests;

/// A line on stderr for whoever runs the server. A write error (nobody reads
/// stderr any more) is ignored: `eprintln!` would panic, and a log line must
/// not take a run or the server down.
pub fn log(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "talaria serve: {line}");
}

async fn health() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({"status": "ok"}))
}

async fn not_found(uri: http::Uri) -> ApiError {
    ApiError::not_found(format!("no route for {}", uri.path()))
}

/// `GET /v1/models`: the agent, plus the profile's model when one is set.
async fn models(
    axum::extract::State(state): axum::extract::State<Shared>,
    headers: http::HeaderMap,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    state.gate.check(&headers)?;
    let created = request::now_secs();
    let mut ids = vec!["talaria".to_owned()];
    if let Ok(settings) = state.runner.settings()
        && settings.primary.model != "talaria"
    {
        ids.push(settings.primary.model);
    }
    let data: Vec<serde_json::Value> = ids
        .into_iter()
        .map(|id| {
            serde_json::json!({"id": id, "object": "model", "created": created, "owned_by": "talaria"})
        })
        .collect();
    Ok(axum::Json(
        serde_json::json!({"object": "list", "data": data}),
    ))
}
