//! MCP servers as a [`ToolSource`]: each server tool is `mcp_<server>_<tool>` in toolset
//! `mcp-<server>`, plus resource and prompt helpers for servers that advertise them (and whose
//! config allows them). The tool list is fixed when the source is built — from the cache or a
//! fresh `tools/list` — so the prompt stays byte-stable for the session.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use talaria_kernel::{CancellationToken, ToolContext, ToolResult, ToolSpec, ValidatedCall};
use talaria_tools::{ToolEntry, ToolFlags, ToolSource};

use crate::cache::ServerTools;
use crate::content;
use crate::error::McpError;
use crate::names::{Helper, Target, ToolNames};
use crate::server::McpServer;
use crate::spec::ServerSpec;

/// Longest tool description offered to the model, in characters.
const MAX_DESCRIPTION_CHARS: usize = 4096;
/// Largest argument schema offered as it is, in bytes of JSON.
const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// One or more MCP servers as a tool source.
#[derive(Debug)]
pub struct McpToolSource {
    servers: BTreeMap<String, Arc<McpServer>>,
    names: ToolNames,
    entries: Vec<ToolEntry>,
}

/// What one offered tool calls, for the approval layer.
#[derive(Debug, Clone)]
pub struct CallInfo<'a> {
    /// The server's name.
    pub server: &'a str,
    /// The server's own name for the tool (or the helper's request).
    pub tool: &'a str,
    /// The server marked the tool read-only (helpers only read).
    pub read_only: bool,
    /// The server's configuration.
    pub spec: &'a ServerSpec,
}

/// How a server's offer was obtained by [`McpToolSource::start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// From the cache; not contacted.
    Cache,
    /// Listed now (and the cache written).
    Listed,
}

impl McpToolSource {
    /// A source over servers whose offers are known.
    pub fn new(servers: Vec<(Arc<McpServer>, ServerTools)>) -> Self {
        let mut targets = Vec::new();
        let mut described: BTreeMap<Target, (String, Value, bool)> = BTreeMap::new();
        for (server, offer) in &servers {
            let name = server.name().to_owned();
            let filter = &server.spec().config.tools;
            for tool in offer.tools.iter().filter(|t| filter.allows(&t.name)) {
                let target = Target::Tool {
                    server: name.clone(),
                    tool: tool.name.clone(),
                };
                let description = tool
                    .description
                    .clone()
                    .or_else(|| tool.title.clone())
                    .unwrap_or_else(|| format!("{} (MCP server {name})", tool.name));
                described.insert(
                    target.clone(),
                    (
                        cap_description(&description),
                        schema(&tool.input_schema),
                        tool.read_only_hint == Some(true),
                    ),
                );
                targets.push(target);
            }
            for helper in helpers(&offer.info, &server.spec().config.tools) {
                let target = Target::Helper {
                    server: name.clone(),
                    helper,
                };
                let (description, parameters) = helper_spec(helper, &name);
                described.insert(target.clone(), (description, parameters, true));
                targets.push(target);
            }
        }
        let names = ToolNames::assign(targets);
        let entries = names
            .iter()
            .filter_map(|(name, target)| {
                let (description, parameters, read_only) = described.get(target)?.clone();
                Some(ToolEntry {
                    spec: ToolSpec {
                        name: name.to_owned(),
                        description,
                        parameters,
                        refunds_iteration: false,
                    },
                    flags: if read_only {
                        ToolFlags::read_only()
                    } else {
                        ToolFlags::default()
                    },
                    toolset: format!("mcp-{}", target.server()),
                })
            })
            .collect();
        let servers = servers
            .into_iter()
            .map(|(server, _)| (server.name().to_owned(), server))
            .collect();
        Self {
            servers,
            names,
            entries,
        }
    }

    /// Builds the source for `specs` (disabled servers left out): a server with a cache for
    /// its configuration under `cache_dir` is offered from it without being contacted; the
    /// others are connected and listed now, all at once (and cached). A server that cannot be
    /// listed is left out and its error returned.
    pub async fn start(
        specs: Vec<ServerSpec>,
        cache_dir: &Path,
    ) -> (Self, Vec<(String, Origin)>, Vec<McpError>) {
        Self::start_sharing(specs, cache_dir, false).await
    }

    /// [`Self::start`], with the servers of the process's pool when `share` (a long-lived
    /// surface): a server another session of the process started, with the identical entry,
    /// is used as it is (see [`crate::pool`]).
    pub async fn start_sharing(
        specs: Vec<ServerSpec>,
        cache_dir: &Path,
        share: bool,
    ) -> (Self, Vec<(String, Origin)>, Vec<McpError>) {
        let mut tasks = tokio::task::JoinSet::new();
        for spec in specs.into_iter().filter(|s| s.config.enabled) {
            let dir = cache_dir.to_owned();
            tasks.spawn(async move {
                let server = crate::pool::server_for(spec, share);
                if let Ok(Some(offer)) = server.load_cache(&dir) {
                    return Ok((server, offer, Origin::Cache));
                }
                match server.refresh_cache(&dir).await {
                    Ok((offer, _path)) => Ok((server, offer, Origin::Listed)),
                    // Listed but not cached: still usable this session.
                    Err(McpError::Cache { .. }) => {
                        let offer = server.list_tools().await?;
                        Ok((server, offer, Origin::Listed))
                    }
                    Err(error) => Err(error),
                }
            });
        }
        let mut ready = Vec::new();
        let mut origins = Vec::new();
        let mut errors = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(Ok((server, offer, origin))) => {
                    origins.push((server.name().to_owned(), origin));
                    ready.push((server, offer));
                }
                Ok(Err(error)) => errors.push(error),
                Err(join) => errors.push(McpError::Unavailable {
                    server: "?".into(),
                    message: format!("its start-up task failed: {join}"),
                }),
            }
        }
        ready.sort_by(|a, b| a.0.name().cmp(b.0.name()));
        origins.sort();
        (Self::new(ready), origins, errors)
    }

    /// The name → (server, tool) map.
    pub fn names(&self) -> &ToolNames {
        &self.names
    }

    /// A server by name.
    pub fn server(&self, name: &str) -> Option<&Arc<McpServer>> {
        self.servers.get(name)
    }

    /// The servers, by name.
    pub fn servers(&self) -> impl Iterator<Item = &Arc<McpServer>> {
        self.servers.values()
    }

    /// What the offered tool `name` calls (`None`: not one of this source's tools).
    pub fn call_info(&self, name: &str) -> Option<CallInfo<'_>> {
        let target = self.names.get(name)?;
        let server = self.servers.get(target.server())?;
        let read_only = self
            .entries
            .iter()
            .any(|entry| entry.spec.name == name && entry.flags.read_only);
        let tool = match target {
            Target::Tool { tool, .. } => tool.as_str(),
            Target::Helper { helper, .. } => helper.label(),
        };
        Some(CallInfo {
            server: server.name(),
            tool,
            read_only,
            spec: server.spec(),
        })
    }

    /// Servers whose tools changed since they were listed (apply in the next session).
    pub fn changed_servers(&self) -> Vec<String> {
        self.servers
            .values()
            .filter(|s| s.tools_list_changed())
            .map(|s| s.name().to_owned())
            .collect()
    }

    /// Lists every server's tools again and writes its cache (servers listed from the cache
    /// were never contacted; a server may also have said its tools changed): the next session
    /// starts from what the servers offer now, this one keeps its tool list. Returns the
    /// servers that could not be refreshed.
    pub async fn refresh_caches(&self, cache_dir: &Path) -> Vec<McpError> {
        self.refresh_where(cache_dir, |_| true).await
    }

    /// Lists again, into the cache, the tools of the servers that said their tools changed, so
    /// the next session offers the new list. Returns the servers that could not be refreshed.
    pub async fn refresh_changed(&self, cache_dir: &Path) -> Vec<McpError> {
        self.refresh_where(cache_dir, McpServer::tools_list_changed)
            .await
    }

    async fn refresh_where(
        &self,
        cache_dir: &Path,
        wanted: impl Fn(&McpServer) -> bool,
    ) -> Vec<McpError> {
        let mut errors = Vec::new();
        for server in self.servers.values().filter(|s| wanted(s)) {
            if let Err(error) = server.refresh_cache(cache_dir).await {
                errors.push(error);
            }
        }
        errors
    }

    /// Ends every session with a server this session alone uses (the process's shared
    /// servers stay up for the next session).
    pub async fn shutdown(&self) {
        for server in self.servers.values() {
            if !crate::pool::is_pooled(server) {
                server.shutdown().await;
            }
        }
    }

    async fn run(&self, target: &Target, arguments: &Value) -> Result<(String, bool), String> {
        let server = self
            .servers
            .get(target.server())
            .ok_or_else(|| format!("MCP server {} is not configured", target.server()))?;
        let spec = server.spec();
        let object = match arguments {
            Value::Object(map) => Some(map.clone()),
            Value::Null => None,
            _ => return Err("the arguments must be a JSON object".into()),
        };
        let text_arg = |key: &str| {
            object
                .as_ref()
                .and_then(|o| o.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("missing string argument {key:?}"))
        };
        let failed = |error: McpError| error.to_string();
        match target {
            Target::Tool { tool, .. } => {
                let result = server.call_tool(tool, object).await.map_err(failed)?;
                let text = spec.clean(&content::flatten_result(&result));
                Ok((text, result.is_error == Some(true)))
            }
            Target::Helper { helper, .. } => {
                let text = match helper {
                    Helper::ListResources => {
                        let list = server.list_resources().await.map_err(failed)?;
                        json_text(&list)
                    }
                    Helper::ReadResource => {
                        let uri = text_arg("uri")?;
                        let read = server.read_resource(&uri).await.map_err(failed)?;
                        read.contents
                            .iter()
                            .map(content::resource)
                            .collect::<Vec<_>>()
                            .join("\n")
                    }
                    Helper::ListPrompts => {
                        let list = server.list_prompts().await.map_err(failed)?;
                        json_text(&list)
                    }
                    Helper::GetPrompt => {
                        let name = text_arg("name")?;
                        let arguments = object
                            .as_ref()
                            .and_then(|o| o.get("arguments"))
                            .and_then(Value::as_object)
                            .cloned();
                        let prompt = server.get_prompt(&name, arguments).await.map_err(failed)?;
                        prompt
                            .messages
                            .iter()
                            .map(|m| {
                                let role = serde_json::to_value(&m.role)
                                    .ok()
                                    .and_then(|r| r.as_str().map(str::to_owned))
                                    .unwrap_or_default();
                                format!(
                                    "{role}: {}",
                                    content::flatten(std::slice::from_ref(&m.content))
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("\n\n")
                    }
                };
                Ok((spec.clean(&text), false))
            }
        }
    }
}

#[async_trait]
impl ToolSource for McpToolSource {
    fn tools(&self) -> Vec<ToolEntry> {
        self.entries.clone()
    }

    async fn call(
        &self,
        call: &ValidatedCall,
        _context: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolResult {
        let Some(target) = self.names.get(&call.call.name) else {
            return ToolResult::error(&call.call, format!("unknown MCP tool {}", call.call.name));
        };
        let outcome = tokio::select! {
            outcome = self.run(target, &call.arguments) => outcome,
            () = cancel.cancelled() => Err(format!(
                "cancelled: the call to MCP server {} was interrupted",
                target.server()
            )),
        };
        match outcome {
            Ok((text, false)) => ToolResult::ok(&call.call, text),
            Ok((text, true)) => ToolResult::error(&call.call, text),
            Err(message) => ToolResult::error(&call.call, message),
        }
    }
}

/// The helpers a server gets: only for capabilities it advertised and its config allows.
fn helpers(
    info: &crate::connection::ServerInfo,
    tools: &talaria_profile::McpToolsConfig,
) -> Vec<Helper> {
    let mut helpers = Vec::new();
    if info.resources && tools.resources {
        helpers.extend([Helper::ListResources, Helper::ReadResource]);
    }
    if info.prompts && tools.prompts {
        helpers.extend([Helper::ListPrompts, Helper::GetPrompt]);
    }
    helpers
}

fn helper_spec(helper: Helper, server: &str) -> (String, Value) {
    match helper {
        Helper::ListResources => (
            format!("List the resources MCP server {server} offers (URIs, names, types)."),
            json!({"type": "object", "properties": {}}),
        ),
        Helper::ReadResource => (
            format!("Read one resource of MCP server {server} by its URI."),
            json!({
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "The resource URI"}},
                "required": ["uri"],
            }),
        ),
        Helper::ListPrompts => (
            format!("List the prompt templates MCP server {server} offers, with their arguments."),
            json!({"type": "object", "properties": {}}),
        ),
        Helper::GetPrompt => (
            format!("Render one prompt template of MCP server {server}."),
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The prompt's name"},
                    "arguments": {
                        "type": "object",
                        "description": "Its arguments, by name",
                        "additionalProperties": {"type": "string"},
                    },
                },
                "required": ["name"],
            }),
        ),
    }
}

fn cap_description(text: &str) -> String {
    if text.chars().count() <= MAX_DESCRIPTION_CHARS {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX_DESCRIPTION_CHARS).collect();
    format!("{cut}…")
}

/// The server's schema as an object schema; an oversized or non-object one is replaced.
fn schema(schema: &Value) -> Value {
    let size = serde_json::to_string(schema).map_or(usize::MAX, |s| s.len());
    match schema {
        Value::Object(map) if size <= MAX_SCHEMA_BYTES => {
            let mut map = map.clone();
            map.entry("type").or_insert_with(|| json!("object"));
            Value::Object(map)
        }
        _ => json!({
            "type": "object",
            "description": "The server's argument schema was too large or not an object schema; pass the arguments its description names.",
        }),
    }
}

fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("(unprintable: {e})"))
}
