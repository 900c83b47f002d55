//! A build without the `mcp` feature (a slim distribution): sessions have no MCP client, and
//! servers configured under `mcp_servers` are reported left out.

use std::sync::Arc;

use talaria_exec::GatedExecutor;
use talaria_profile::{McpServerConfig, ProfileHome};
use talaria_tools::ToolSource;

/// Never made: there are no MCP servers in such a session.
pub(crate) struct McpTools {
    pub(crate) gated: Arc<dyn ToolSource>,
}

impl McpTools {
    pub(crate) async fn end(&self) {}
}

/// Says that the enabled servers of `servers`, if any, are left out.
pub(crate) async fn start(
    servers: &std::collections::BTreeMap<String, McpServerConfig>,
    _home: &ProfileHome,
    _gate: Arc<GatedExecutor>,
    _someone_can_approve: bool,
    notices: &mut Vec<String>,
) -> Option<McpTools> {
    if servers.values().any(|server| server.enabled) {
        notices.push(
            "MCP servers left out: this distribution of Talaria was built without MCP".to_owned(),
        );
    }
    None
}
