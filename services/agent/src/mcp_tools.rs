//! The profile's MCP servers as one more tool source of the session, behind the same approval
//! layer as commands and scripts (the servers run with the user's rights, outside the WASM
//! sandbox): a call the server's `approval` setting asks about is decided by the policy, with
//! "always" answers remembered per tool. The hooks and result budgets apply as to every tool,
//! since the dispatcher and the loop run them.
//!
//! A session starts from each server's cached `tools/list` without contacting it; the servers
//! offered from the cache are then reached in the background, which also refreshes their cache
//! for the next session (a changed tool list never alters this session's prompt). A server with
//! no cache yet is listed before the session starts.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use talaria_approval::Finding;
use talaria_exec::{ExecError, ExecOrigin, GatedExecutor};
use talaria_kernel::{CancellationToken, ToolContext, ToolResult, ValidatedCall};
use talaria_mcp::{CallInfo, McpToolSource, Origin, ServerSpec};
use talaria_profile::{McpApproval, McpServerConfig, ProfileHome};
use talaria_tools::{ToolEntry, ToolSource};

/// Longest argument text shown in an approval question, in characters.
const MAX_SHOWN_ARGUMENTS: usize = 2000;

/// The session's MCP servers.
pub(crate) struct McpTools {
    /// The servers and their offer (for `/mcp` and `/reload-mcp`).
    pub(crate) source: Arc<McpToolSource>,
    /// How each server's offer was obtained.
    pub(crate) origins: Vec<(String, Origin)>,
    /// What the model is offered: the source behind the approval layer.
    pub(crate) gated: Arc<dyn ToolSource>,
    /// Where the servers' tool lists are cached.
    pub(crate) cache_dir: PathBuf,
}

impl McpTools {
    /// At the end of a session: servers whose tools changed are listed again into the cache
    /// (the next session offers the new list), then every session with a server ends.
    pub(crate) async fn end(&self) {
        let _ = self.source.refresh_changed(&self.cache_dir).await;
        self.source.shutdown().await;
    }
}

/// Starts the enabled servers of `servers` (`None` when there are none). Servers that cannot
/// be started, and tools left out because nobody could approve them, are told in `notices`.
pub(crate) async fn start(
    servers: &std::collections::BTreeMap<String, McpServerConfig>,
    home: &ProfileHome,
    gate: Arc<GatedExecutor>,
    someone_can_approve: bool,
    share: bool,
    notices: &mut Vec<String>,
) -> Option<McpTools> {
    let mut specs = Vec::new();
    for (name, config) in servers.iter().filter(|(_, c)| c.enabled) {
        match ServerSpec::new(name, config.clone()) {
            // A server in bubblewrap must not read what commands in it may not.
            Ok(spec) => specs.push(spec.with_confinement(gate.confinement().clone())),
            Err(error) => notices.push(format!("MCP server left out: {error}")),
        }
    }
    if specs.is_empty() {
        return None;
    }
    let cache_dir = home.mcp_cache_dir();
    let (source, origins, errors) = McpToolSource::start_sharing(specs, &cache_dir, share).await;
    notices.extend(
        errors
            .iter()
            .map(|error| format!("MCP server left out: {error}")),
    );
    let source = Arc::new(source);
    for (name, origin) in &origins {
        if *origin == Origin::Cache
            && let Some(server) = source.server(name).cloned()
        {
            let dir = cache_dir.clone();
            // Reached now rather than at the first call; its answer is the next session's
            // cache. A failure here shows again, with its reason, when a tool is called.
            tokio::spawn(async move {
                let _ = server.refresh_cache(&dir).await;
            });
        }
    }
    let gated = gate_source(source.clone(), gate, someone_can_approve, notices);
    Some(McpTools {
        source,
        origins,
        gated,
        cache_dir,
    })
}

/// `source` behind the approval layer: tools whose description the threat scanner refuses, and
/// (when nobody can answer) tools that would ask, are not offered; `notices` say which.
fn gate_source(
    source: Arc<McpToolSource>,
    gate: Arc<GatedExecutor>,
    someone_can_approve: bool,
    notices: &mut Vec<String>,
) -> Arc<Gated> {
    let approvals_answered = someone_can_approve || gate.policy().yolo();
    let mut hidden = BTreeSet::new();
    for entry in source.tools() {
        let Some(info) = source.call_info(&entry.spec.name) else {
            continue;
        };
        if let Some(why) = poisoned(&entry) {
            notices.push(format!(
                "MCP tool {} of server {} is left out: {why}",
                info.tool, info.server
            ));
            hidden.insert(entry.spec.name);
        } else if !approvals_answered
            && asks(&info)
            && !gate.policy().always_allows(&finding(&info).id)
        {
            hidden.insert(entry.spec.name);
        }
    }
    for server in source.servers() {
        let unanswerable = hidden
            .iter()
            .filter_map(|name| source.call_info(name))
            .filter(|info| info.server == server.name() && asks(info))
            .count();
        if unanswerable > 0 && !approvals_answered {
            notices.push(format!(
                "MCP server {}: {unanswerable} tool(s) that need approval are left out, since \
                 nobody can answer here (set mcp_servers.{}.approval: trusted to offer them)",
                server.name(),
                server.name()
            ));
        }
    }
    Arc::new(Gated {
        source,
        gate,
        hidden,
    })
}

/// Why the tool's description or schema must not reach the prompt (the threat scanner's
/// verdict on it as a document), if it must not: a server's text is untrusted.
fn poisoned(entry: &ToolEntry) -> Option<String> {
    let text = format!("{}\n{}", entry.spec.description, entry.spec.parameters);
    match talaria_memory::Scanner::builtin() {
        Ok(scanner) => scanner
            .scan_in(&text, talaria_memory::Scope::Document)
            .map(|threat| {
                format!(
                    "its description trips rule '{}' ({}): {}",
                    threat.rule_id,
                    threat.category.as_str(),
                    threat.description
                )
            }),
        Err(error) => Some(format!("the threat scanner is unavailable: {error}")),
    }
}

/// Whether a call to the tool asks the user first (before yolo mode and stored answers).
fn asks(info: &CallInfo<'_>) -> bool {
    match info.spec.config.approval {
        McpApproval::Trusted => false,
        McpApproval::EveryCall => true,
        McpApproval::Writes => !info.read_only,
    }
}

/// What the user judges: one finding per server and tool, so "always" allows that tool only.
fn finding(info: &CallInfo<'_>) -> Finding {
    let place = if info.spec.config.sandboxed() {
        "in bubblewrap"
    } else {
        "with your rights, outside the sandbox"
    };
    Finding {
        id: format!("mcp:{}:{}", info.server, info.tool),
        description: format!(
            "calls tool {} of MCP server {}, which runs {place}",
            info.tool, info.server
        ),
    }
}

/// The source behind the approval layer.
struct Gated {
    source: Arc<McpToolSource>,
    gate: Arc<GatedExecutor>,
    /// Tools that would need an answer nobody can give: not offered.
    hidden: BTreeSet<String>,
}

impl Gated {
    async fn admit(&self, call: &ValidatedCall, context: &ToolContext) -> Result<(), String> {
        let Some(info) = self.source.call_info(&call.call.name) else {
            return Ok(()); // The source answers an unknown name itself.
        };
        if !asks(&info) {
            return Ok(());
        }
        let origin = ExecOrigin::new(
            format!("mcp:{}", info.server),
            &call.call.name,
            context.session_id.clone(),
        );
        // The text the user sees (and the screen reads): the tool and its arguments.
        let arguments = serde_json::to_string(&call.arguments).unwrap_or_default();
        let shown: String = arguments.chars().take(MAX_SHOWN_ARGUMENTS).collect();
        let more = if shown.len() < arguments.len() {
            "…"
        } else {
            ""
        };
        let text = format!("{} {shown}{more}", call.call.name);
        self.gate
            .approve_text(&text, &origin, finding(&info), info.spec.config.sandboxed())
            .await
            .map(drop)
            .map_err(|error| match error {
                ExecError::Denied(message) => format!(
                    "the call to MCP server {} was not made: {message}",
                    info.server
                ),
                other => format!(
                    "the call to MCP server {} was not made: {other}",
                    info.server
                ),
            })
    }
}

#[async_trait]
impl ToolSource for Gated {
    fn tools(&self) -> Vec<ToolEntry> {
        self.source
            .tools()
            .into_iter()
            .filter(|entry| !self.hidden.contains(&entry.spec.name))
            .collect()
    }

    async fn call(
        &self,
        call: &ValidatedCall,
        context: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolResult {
        if self.hidden.contains(&call.call.name) {
            return ToolResult::error(
                &call.call,
                format!("{} is not offered in this session", call.call.name),
            );
        }
        // The user may take a while to answer; a cancel must not wait for them.
        let admitted = tokio::select! {
            biased;
            () = cancel.cancelled() => Err("cancelled before the call was made".to_owned()),
            admitted = self.admit(call, context) => admitted,
        };
        match admitted {
            Ok(()) => self.source.call(call, context, cancel).await,
            Err(message) => ToolResult::error(&call.call, message),
        }
    }
}

/// One server of the session, for `/mcp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerStatus {
    /// Its name in `mcp_servers`.
    pub name: String,
    /// How it is reached (`stdio: CMD ARGS` or `http: URL`).
    pub reached: String,
    /// How many of its tools the model is offered.
    pub tools: usize,
    /// Whether the session's tool list came from the cache (without contacting it).
    pub from_cache: bool,
    /// Whether a session with it is open now.
    pub connected: bool,
    /// Whether it said its tools changed (applies next session, or `/reload-mcp`).
    pub tools_changed: bool,
}

impl crate::Agent {
    /// The session's MCP servers (those that could not be started are in the notices).
    pub async fn mcp_servers(&self) -> Vec<McpServerStatus> {
        let Some(mcp) = &self.mcp else {
            return Vec::new();
        };
        let offered = mcp.gated.tools();
        let mut statuses = Vec::new();
        for server in mcp.source.servers() {
            let name = server.name().to_owned();
            let tools = offered
                .iter()
                .filter(|entry| {
                    mcp.source
                        .call_info(&entry.spec.name)
                        .is_some_and(|info| info.server == name)
                })
                .count();
            let from_cache = mcp
                .origins
                .iter()
                .any(|(n, origin)| *n == name && *origin == Origin::Cache);
            statuses.push(McpServerStatus {
                reached: server.spec().config.describe(),
                tools,
                from_cache,
                connected: server.is_connected().await,
                tools_changed: server.tools_list_changed(),
                name,
            });
        }
        statuses
    }

    /// Lists every server's tools again into the cache, so the next session (or a reload of
    /// this one) offers what they offer now. Returns what could not be refreshed.
    pub async fn refresh_mcp(&self) -> Vec<String> {
        match &self.mcp {
            Some(mcp) => mcp
                .source
                .refresh_caches(&mcp.cache_dir)
                .await
                .iter()
                .map(ToString::to_string)
                .collect(),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use talaria_approval::{ApprovalPolicy, Decision};
    use talaria_exec::LocalBackend;
    use talaria_kernel::ToolCall;
    use talaria_mcp::{McpServer, ServerTools, ToolInfo};

    use super::*;
    use crate::test_support::Recording;

    fn tool(name: &str, read_only: bool) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            title: None,
            description: Some(format!("The {name} tool.")),
            input_schema: serde_json::json!({"type": "object"}),
            read_only_hint: read_only.then_some(true),
        }
    }

    /// A server (never reachable: a call that gets through fails to start it) offering a
    /// write tool and a read-only one, gated with `answer` and `approval`.
    fn gated(
        answer: Decision,
        approval: McpApproval,
        someone_can_approve: bool,
        dir: &std::path::Path,
    ) -> (Arc<Gated>, Arc<Recording>, Vec<String>) {
        let config = McpServerConfig {
            command: Some("/nonexistent/mcp-server".into()),
            approval,
            ..McpServerConfig::default()
        };
        let server = Arc::new(McpServer::new(ServerSpec::new("srv", config).unwrap()));
        let offer = ServerTools {
            tools: vec![tool("write", false), tool("read", true)],
            ..ServerTools::default()
        };
        let source = Arc::new(McpToolSource::new(vec![(server, offer)]));
        let approver = Recording::new(answer);
        let policy = ApprovalPolicy::load(dir.join("approvals.json")).unwrap();
        let gate = Arc::new(GatedExecutor::new(
            Arc::new(LocalBackend::new()),
            Arc::new(policy),
            approver.clone(),
        ));
        let mut notices = Vec::new();
        let gated = gate_source(source, gate, someone_can_approve, &mut notices);
        (gated, approver, notices)
    }

    async fn call(gated: &Gated, name: &str) -> ToolResult {
        let call = ValidatedCall {
            call: ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: "{}".into(),
            },
            arguments: serde_json::json!({}),
        };
        let context = ToolContext {
            session_id: "s1".into(),
        };
        gated.call(&call, &context, &CancellationToken::new()).await
    }

    fn names(gated: &Gated) -> Vec<String> {
        gated.tools().into_iter().map(|e| e.spec.name).collect()
    }

    #[tokio::test]
    async fn a_write_tool_asks_and_a_refusal_means_no_call() {
        let dir = tempfile::tempdir().unwrap();
        let (gated, approver, _) = gated(Decision::Deny, McpApproval::Writes, true, dir.path());
        let denied = call(&gated, "mcp_srv_write").await;
        assert!(denied.is_error);
        assert!(
            denied
                .content
                .starts_with("the call to MCP server srv was not made"),
            "{}",
            denied.content
        );
        let asked = approver.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].finding.id, "mcp:srv:write");
        assert_eq!(asked[0].command, "mcp_srv_write {}");

        // The read-only tool is not asked about: the call goes to the server (which cannot
        // start here, so the error is the server's).
        let read = call(&gated, "mcp_srv_read").await;
        assert!(read.content.contains("MCP server srv"), "{}", read.content);
        assert!(!read.content.contains("was not made"), "{}", read.content);
        assert_eq!(approver.asked.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn every_call_asks_even_for_read_only_tools_and_trusted_never_asks() {
        let dir = tempfile::tempdir().unwrap();
        let (every, approver, _) = gated(Decision::Deny, McpApproval::EveryCall, true, dir.path());
        assert!(
            call(&every, "mcp_srv_read")
                .await
                .content
                .contains("was not made")
        );
        assert_eq!(approver.asked.lock().unwrap().len(), 1);

        let (trusted, approver, _) = gated(Decision::Deny, McpApproval::Trusted, true, dir.path());
        let result = call(&trusted, "mcp_srv_write").await;
        assert!(
            !result.content.contains("was not made"),
            "{}",
            result.content
        );
        assert!(approver.asked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn an_always_answer_is_kept_per_tool_and_offers_it_where_nobody_can_answer() {
        let dir = tempfile::tempdir().unwrap();
        let (gated_once, _, _) = gated(Decision::Always, McpApproval::Writes, true, dir.path());
        let allowed = call(&gated_once, "mcp_srv_write").await;
        assert!(
            !allowed.content.contains("was not made"),
            "{}",
            allowed.content
        );

        // Nobody can answer now: the tool allowed always is still offered, and no other.
        let (later, _, notices) = gated(
            Decision::Unavailable,
            McpApproval::EveryCall,
            false,
            dir.path(),
        );
        assert_eq!(names(&later), ["mcp_srv_write"]);
        assert_eq!(
            notices,
            [
                "MCP server srv: 1 tool(s) that need approval are left out, since nobody can \
              answer here (set mcp_servers.srv.approval: trusted to offer them)"
            ]
        );
        let hidden = call(&later, "mcp_srv_read").await;
        assert_eq!(
            hidden.content,
            "mcp_srv_read is not offered in this session"
        );
    }
}
