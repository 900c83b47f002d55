//! `talaria mcp serve`: Talaria as an MCP server. Another program (an editor,
//! another agent) runs prompts as Talaria sessions and gets their answers
//! (`run_prompt`), and lists, searches and reads past sessions
//! (`list_sessions`, `search_sessions`, `read_session`). Over stdio, or over
//! streamable HTTP at `/mcp` behind a bearer key and loopback-only Host and
//! Origin checks. Sessions run with approvals denied: nobody is there to
//! answer them.

mod gate;
mod handler;
mod http;
mod runner;
mod sessions;
mod stdio;
mod tools;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use talaria_profile::{Overrides, ProfileHome};
use tokio_util::sync::CancellationToken;

pub use gate::MIN_KEY_CHARS;
pub use http::HttpOptions;

use crate::handler::{Shared, TalariaServer};

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The options cannot work (no key, a non-loopback address, …).
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
    /// The standard streams could not be set up.
    #[error("stdio: {0}")]
    Stdio(String),
    /// The client broke the protocol (e.g. closed before `initialize`).
    #[error("MCP: {0}")]
    Protocol(String),
}

/// What both modes serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The profile whose model, tools and sessions are used.
    pub home: ProfileHome,
    /// Model flags given on the command line.
    pub overrides: Overrides,
    /// Where runs work when the client names no `cwd`.
    pub cwd: PathBuf,
}

fn shared(options: ServeOptions) -> Arc<Shared> {
    Arc::new(Shared {
        runner: runner::Runner::new(options.home.clone(), options.overrides, options.cwd),
        sessions: sessions::Sessions::new(options.home),
    })
}

/// The bearer key from environment variable `name`: present, at least
/// [`MIN_KEY_CHARS`] characters, and fit for a header.
pub fn key_from_env(name: &str) -> Result<String, ServeError> {
    gate::key_from_env(name).map_err(ServeError::Config)
}

/// Serves one client over stdin/stdout until it closes stdin. Nothing but
/// protocol frames reaches stdout; logs and notices go to stderr.
pub async fn serve_stdio(options: ServeOptions) -> Result<(), ServeError> {
    stdio::serve(TalariaServer::for_stdio(shared(options))).await
}

/// Serves streamable HTTP at `http://ADDR/mcp` until `shutdown` is cancelled.
pub async fn serve_http(
    options: ServeOptions,
    http: HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    http::serve(shared(options), http, shutdown).await
}
