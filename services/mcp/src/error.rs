//! What goes wrong with an MCP server, always naming it, with credentials stripped: every text
//! that came from a server, a transport or a child's stderr passes [`Scrubber::clean`] before it
//! is put into an [`McpError`].

use std::path::PathBuf;
use std::time::Duration;

use talaria_profile::McpServerConfig;

/// An MCP failure. Its text is safe to show to the model and the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The server's entry cannot be used as it is.
    #[error("MCP server {server}: {message}")]
    Config {
        /// The server.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// The stdio server's program could not be started.
    #[error("MCP server {server}: cannot start {command:?}: {reason}")]
    Spawn {
        /// The server.
        server: String,
        /// The program.
        command: String,
        /// Why.
        reason: String,
    },
    /// Starting or reaching the server plus `initialize` took longer than `connect_timeout`.
    #[error("MCP server {server}: no answer to initialize within {}{}", secs(*after), tail(stderr))]
    ConnectTimeout {
        /// The server.
        server: String,
        /// The timeout.
        after: Duration,
        /// The end of its stderr (stdio servers).
        stderr: String,
    },
    /// `initialize` failed (the server exited, answered an error, or spoke something else).
    #[error("MCP server {server}: initialize failed: {reason}{}", tail(stderr))]
    Initialize {
        /// The server.
        server: String,
        /// Why.
        reason: String,
        /// The end of its stderr (stdio servers).
        stderr: String,
    },
    /// The server chose a protocol revision this client does not speak.
    #[error(
        "MCP server {server}: answered with protocol version {version}; Talaria speaks \
         2025-11-25, 2025-06-18 and 2025-03-26"
    )]
    Protocol {
        /// The server.
        server: String,
        /// What it answered.
        version: String,
    },
    /// The connection ended (the process exited, the HTTP session is gone).
    #[error("MCP server {server}: the connection closed{}", tail(stderr))]
    Closed {
        /// The server.
        server: String,
        /// The end of its stderr (stdio servers).
        stderr: String,
    },
    /// A request took longer than the server's `timeout`.
    #[error("MCP server {server}: {method} timed out after {}", secs(*after))]
    Timeout {
        /// The server.
        server: String,
        /// The request (`tools/call echo`).
        method: String,
        /// The timeout.
        after: Duration,
    },
    /// A request failed (an error answer, a transport error).
    #[error("MCP server {server}: {method} failed: {reason}")]
    Request {
        /// The server.
        server: String,
        /// The request.
        method: String,
        /// Why.
        reason: String,
    },
    /// A reconnect failed a moment ago; the next attempt waits a little.
    #[error(
        "MCP server {server} is unavailable (last error: {last_error}); the next connection \
         attempt is in {}",
        secs(*retry_in)
    )]
    Backoff {
        /// The server.
        server: String,
        /// Until the next attempt.
        retry_in: Duration,
        /// The last failure.
        last_error: String,
    },
    /// Repeated failures: calls answer at once until the server is probed again.
    #[error(
        "MCP server {server} is parked after {failures} failed connection attempts (last \
         error: {last_error}); it is tried again in {}",
        secs(*retry_in)
    )]
    Parked {
        /// The server.
        server: String,
        /// Consecutive failed attempts.
        failures: u32,
        /// Until the next probe.
        retry_in: Duration,
        /// The last failure.
        last_error: String,
    },
    /// The server is known only from the cache and may not be contacted.
    #[error("MCP server {server}: {message}")]
    Unavailable {
        /// The server.
        server: String,
        /// Why.
        message: String,
    },
    /// The tools cache could not be read or written.
    #[error("MCP tools cache {}: {reason}", path.display())]
    Cache {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl McpError {
    /// The server the error is about, when it is about one.
    pub fn server(&self) -> Option<&str> {
        match self {
            McpError::Config { server, .. }
            | McpError::Spawn { server, .. }
            | McpError::ConnectTimeout { server, .. }
            | McpError::Initialize { server, .. }
            | McpError::Protocol { server, .. }
            | McpError::Closed { server, .. }
            | McpError::Timeout { server, .. }
            | McpError::Request { server, .. }
            | McpError::Backoff { server, .. }
            | McpError::Parked { server, .. }
            | McpError::Unavailable { server, .. } => Some(server),
            McpError::Cache { .. } => None,
        }
    }
}

fn secs(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds >= 10.0 || seconds.fract() == 0.0 {
        format!("{:.0} s", seconds.ceil())
    } else {
        format!("{seconds:.1} s")
    }
}

fn tail(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("; its stderr ends with:\n{}", stderr.trim_end())
    }
}

/// Strips one server's credentials from text: the configured header and env values verbatim
/// (and the token of an `Authorization: Bearer …` value), then every secret shape
/// [`talaria_redact::redact`] knows.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    secrets: Vec<String>,
}

/// Values shorter than this are not treated as secrets (`1`, `on`).
const MIN_SECRET_LEN: usize = 4;

impl Scrubber {
    /// The scrubber of a server's configuration.
    pub fn for_config(config: &McpServerConfig) -> Self {
        let mut secrets: Vec<String> = Vec::new();
        for value in config.headers.values().chain(config.env.values()) {
            secrets.push(value.clone());
            if let Some((_scheme, token)) = value.split_once(' ') {
                secrets.push(token.trim().to_owned());
            }
        }
        secrets.retain(|s| s.chars().count() >= MIN_SECRET_LEN);
        // Longest first, so a value containing another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// `text` without the server's credentials.
    pub fn clean(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), talaria_redact::MARKER);
            }
        }
        talaria_redact::redact(&text).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_values_and_known_shapes_are_stripped() {
        let mut config = McpServerConfig {
            url: Some("http://h/mcp".into()),
            ..McpServerConfig::default()
        };
        config
            .headers
            .insert("Authorization".into(), "Bearer plainvalue42".into());
        config.headers.insert("X-Short".into(), "ab".into());
        config.env.insert("DB".into(), "hunter2hunter2".into());
        let scrubber = Scrubber::for_config(&config);
        let text = scrubber.clean(
            "401 for token plainvalue42; db hunter2hunter2; ab stays; key sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        );
        assert!(
            !text.contains("plainvalue42") && !text.contains("hunter2"),
            "{text}"
        );
        assert!(!text.contains("abcdefghijklmnopqrstuvwxyz"), "{text}");
        assert!(text.contains("ab stays"), "{text}");
    }

    #[test]
    fn messages_name_the_server_and_show_stderr() {
        let error = McpError::ConnectTimeout {
            server: "slow".into(),
            after: Duration::from_millis(1500),
            stderr: "booting\n".into(),
        };
        assert_eq!(
            error.to_string(),
            "MCP server slow: no answer to initialize within 1.5 s; its stderr ends with:\nbooting"
        );
        assert_eq!(error.server(), Some("slow"));
    }
}
