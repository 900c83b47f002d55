//! Talaria as a client of MCP servers, on the official Rust SDK (`rmcp`).
//!
//! - [`ServerSpec`]: one `mcp_servers.<name>` entry of the profile, validated, with the hash
//!   that keys its tools cache and its [`ReconnectPolicy`].
//! - [`McpServer`]: a server over the life of a process — connected on first use with the
//!   `initialize` lifecycle (protocol 2025-11-25 offered; 2025-06-18 and 2025-03-26 accepted;
//!   no sampling, elicitation or roots declared), reconnected after it dies, parked after
//!   repeated failures, and the `tools/list_changed` flag.
//! - Stdio servers run in their own process group with a minimal environment (no provider
//!   keys unless configured) and die with it; streamable-HTTP servers get the configured
//!   headers and an expired session is re-initialised once.
//! - [`cache`]: the `tools/list` cache, so a session can start without contacting servers.
//! - [`ToolNames`]: `mcp_<server>_<tool>` names within the providers' rules, collisions
//!   resolved by a stable hash suffix, and the exact name → (server, tool) map.
//! - [`McpToolSource`]: servers as a `talaria_tools::ToolSource`; in a long-lived process,
//!   sessions share servers whose entries are identical ([`shutdown_shared`] ends them).
//!
//! Every [`McpError`] names its server, and credentials (configured header and env values,
//! known key shapes) are stripped from the text of every error and result.

pub mod cache;
mod connection;
mod content;
mod error;
mod http;
mod names;
mod pool;
mod server;
mod source;
mod spec;
mod stdio;

pub use cache::{ServerTools, ToolInfo};
pub use connection::{ACCEPTED_PROTOCOLS, MAX_LINE_BYTES, OFFERED_PROTOCOL, ServerInfo};
pub use content::{flatten, flatten_result};
pub use error::{McpError, Scrubber};
pub use names::{Helper, MAX_TOOL_NAME, Target, ToolNames, sanitise};
pub use pool::shutdown_shared;
pub use server::McpServer;
pub use source::{CallInfo, McpToolSource, Origin};
pub use spec::{ReconnectPolicy, ServerSpec};
pub use stdio::{PASSED_ENV, minimal_env};

/// The enabled servers of a profile's config, ready to connect to.
pub fn specs(
    servers: &std::collections::BTreeMap<String, talaria_profile::McpServerConfig>,
) -> Result<Vec<ServerSpec>, McpError> {
    servers
        .iter()
        .filter(|(_, config)| config.enabled)
        .map(|(name, config)| ServerSpec::new(name, config.clone()))
        .collect()
}
