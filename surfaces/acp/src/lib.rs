//! `talaria acp`: Talaria as an editor's agent over the Agent Client Protocol
//! (v1, newline-delimited JSON-RPC on stdio). Each ACP session is one Talaria
//! agent built from the profile, with the editor's MCP servers added; its
//! events stream as `session/update`s, approvals are asked with
//! `session/request_permission`, and slash commands from the command registry
//! run inside prompts.
//!
//! Layout: `adapter` is the only module that knows the `agent-client-protocol`
//! crate; `worker` runs a session's agent on a thread of its own; `sink` maps
//! the loop's events to the surface's [`types`].

mod adapter;
mod editor;
mod lines;
mod sink;
mod types;
mod worker;

use std::os::fd::OwnedFd;

use talaria_profile::{Overrides, ProfileHome};
use tokio::io::{AsyncRead, AsyncWrite};

/// Longest incoming line by default (prompts carry at most 1 MiB of text,
/// embedded resources make lines longer).
pub const DEFAULT_MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// Why the server stopped.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The standard streams could not be set up.
    #[error("stdio: {0}")]
    Stdio(String),
    /// The connection failed.
    #[error("ACP: {0}")]
    Protocol(String),
}

/// What every session of the server starts from.
#[derive(Debug, Clone)]
pub struct AcpOptions {
    /// The profile whose model, tools and sessions are used.
    pub home: ProfileHome,
    /// Model flags given on the command line.
    pub overrides: Overrides,
    /// Longest incoming line, in bytes.
    pub max_line_bytes: usize,
}

impl AcpOptions {
    pub fn new(home: ProfileHome, overrides: Overrides) -> Self {
        Self {
            home,
            overrides,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// Serves one editor over `reader`/`writer` until it closes `reader`.
pub async fn serve<R, W>(options: AcpOptions, reader: R, writer: W) -> Result<(), AcpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    adapter::serve(options, reader, writer)
        .await
        .map_err(|e| AcpError::Protocol(e.to_string()))
}

/// The protocol's own copies of stdin and stdout. Afterwards fd 0 reads
/// /dev/null and fd 1 writes to stderr, so nothing else in the process (a
/// plugin, a child that inherits them, a stray print) can corrupt the frames.
fn take_standard_streams() -> Result<(OwnedFd, OwnedFd), AcpError> {
    let fail = |what: &str, error: nix::Error| AcpError::Stdio(format!("{what}: {error}"));
    let input = nix::unistd::dup(std::io::stdin()).map_err(|e| fail("cannot copy stdin", e))?;
    let output = nix::unistd::dup(std::io::stdout()).map_err(|e| fail("cannot copy stdout", e))?;
    let null = std::fs::File::open("/dev/null")
        .map_err(|e| AcpError::Stdio(format!("cannot open /dev/null: {e}")))?;
    nix::unistd::dup2_stdin(&null).map_err(|e| fail("cannot detach stdin", e))?;
    nix::unistd::dup2_stdout(std::io::stderr())
        .map_err(|e| fail("cannot point stdout at stderr", e))?;
    Ok((input, output))
}

/// Serves the editor on the standard streams until it closes stdin. Nothing
/// but protocol frames reaches stdout; logs go to stderr.
pub async fn serve_stdio(options: AcpOptions) -> Result<(), AcpError> {
    let (input, output) = take_standard_streams()?;
    let input = tokio::fs::File::from_std(std::fs::File::from(input));
    let output = tokio::fs::File::from_std(std::fs::File::from(output));
    serve(options, input, output).await
}

#[cfg(test)]
mod tests;
