//! MCP commands: `/mcp` shows the session's servers, `/reload-mcp` lists their tools again and
//! continues the conversation with them.

use crate::context::{Context, Effect, Reply};
use crate::invocation::Invocation;

pub(super) async fn mcp(ctx: &mut Context<'_>, _: Invocation) -> Reply {
    let servers = ctx.agent.mcp_servers().await;
    if servers.is_empty() {
        return Reply::text(format!(
            "no MCP servers in this session (mcp_servers in {}; talaria mcp add NAME …)",
            ctx.home.config_file().display()
        ));
    }
    let mut lines = Vec::new();
    for server in servers {
        let mut notes = vec![if server.connected {
            "connected"
        } else {
            "not connected yet"
        }];
        if server.from_cache {
            notes.push("tools from the cache");
        }
        if server.tools_changed {
            notes.push("its tools changed: /reload-mcp");
        }
        lines.push(format!(
            "  {:<16} {:>3} tool{}  {}  ({})",
            server.name,
            server.tools,
            if server.tools == 1 { " " } else { "s" },
            server.reached,
            notes.join(", ")
        ));
    }
    Reply::text(lines.join("\n"))
}

pub(super) async fn reload_mcp(ctx: &mut Context<'_>, _: Invocation) -> Reply {
    let failed = ctx.agent.refresh_mcp().await;
    let mut text = "the MCP servers' tools were listed again; the conversation continues with \
                    them (the prompt cache starts over)"
        .to_owned();
    for error in failed {
        text.push_str(&format!("\nnot refreshed: {error}"));
    }
    Reply::effect(Effect::Reload, text)
}
