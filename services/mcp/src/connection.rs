//! One live session with a server: spawn or reach it, run the `initialize` lifecycle (protocol
//! 2025-11-25 offered; 2025-11-25, 2025-06-18 and 2025-03-26 accepted; no sampling, elicitation
//! or roots declared), then requests, each under the server's `timeout`.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    GetPromptRequestParams, GetPromptResult, Implementation, JsonObject, Prompt, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResult, Resource, ServerPeerInfo, Tool,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientHandler, ClientLifecycleMode, RoleClient, ServiceError};
use serde::{Deserialize, Serialize};
use talaria_profile::McpTransport;

use crate::error::McpError;
use crate::spec::ServerSpec;
use crate::stdio::{StderrTail, StdioProcess};

/// The protocol revision offered in `initialize`.
pub const OFFERED_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;
/// The revisions accepted in the server's answer.
pub const ACCEPTED_PROTOCOLS: [ProtocolVersion; 3] = [
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
];
/// Longest JSON-RPC line read from a stdio server; longer lines are dropped unread.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// How long closing a session may take before the process is killed.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What the server told about itself in `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// The negotiated protocol revision.
    pub protocol_version: String,
    /// Its implementation's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its implementation's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its instructions for clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// It offers tools.
    pub tools: bool,
    /// It offers resources.
    pub resources: bool,
    /// It offers prompts.
    pub prompts: bool,
}

impl ServerInfo {
    fn from_peer(info: &ServerPeerInfo) -> Self {
        let implementation = info.server_info.as_ref();
        Self {
            protocol_version: info.protocol_version.to_string(),
            name: implementation.map(|i| i.name.clone()),
            version: implementation.map(|i| i.version.clone()),
            instructions: info.instructions.clone(),
            tools: info.capabilities.tools.is_some(),
            resources: info.capabilities.resources.is_some(),
            prompts: info.capabilities.prompts.is_some(),
        }
    }
}

/// What the client says about itself, and where `tools/list_changed` is noted.
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    list_changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Talaria answers no server-to-client requests: no sampling, elicitation or roots.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("Talaria", env!("CARGO_PKG_VERSION")).with_title("Talaria"),
        )
        .with_protocol_version(OFFERED_PROTOCOL)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.store(true, Ordering::Release);
    }
}

/// A live session.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Handler>,
    process: Option<StdioProcess>,
    pub(crate) info: ServerInfo,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("info", &self.info)
            .field("process", &self.process)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Starts or reaches the server and runs `initialize`, all within `connect_timeout`.
    pub(crate) async fn open(
        spec: &ServerSpec,
        list_changed: Arc<AtomicBool>,
    ) -> Result<Self, McpError> {
        let handler = Handler { list_changed };
        let timeout = spec.config.connect_timeout();
        let (started, process) = match spec.transport() {
            McpTransport::Http => {
                let transport = crate::http::transport(spec)?;
                let start = rmcp::serve_client_with_lifecycle(
                    handler,
                    transport,
                    ClientLifecycleMode::Initialize,
                );
                (tokio::time::timeout(timeout, start).await, None)
            }
            McpTransport::Sse => {
                return Err(McpError::Config {
                    server: spec.name.clone(),
                    message: "transport sse (legacy HTTP+SSE) is not supported".into(),
                });
            }
            McpTransport::Stdio => {
                let (process, stdout, stdin) = StdioProcess::spawn(spec)?;
                let transport = AsyncRwTransport::new_client(stdout, stdin)
                    .with_max_line_length(MAX_LINE_BYTES);
                let start = rmcp::serve_client_with_lifecycle(
                    handler,
                    transport,
                    ClientLifecycleMode::Initialize,
                );
                (tokio::time::timeout(timeout, start).await, Some(process))
            }
        };
        let stderr = process.as_ref().map(|p| p.stderr.clone());
        let service = match started {
            Err(_elapsed) => {
                return Err(McpError::ConnectTimeout {
                    server: spec.name.clone(),
                    after: timeout,
                    stderr: stderr_text(spec, stderr.as_deref(), false).await,
                });
            }
            Ok(Err(error)) => {
                return Err(McpError::Initialize {
                    server: spec.name.clone(),
                    reason: spec.clean(&error.to_string()),
                    stderr: stderr_text(spec, stderr.as_deref(), true).await,
                });
            }
            Ok(Ok(service)) => service,
        };
        let Some(peer) = service.peer().peer_info() else {
            return Err(McpError::Initialize {
                server: spec.name.clone(),
                reason: "no initialize result".into(),
                stderr: String::new(),
            });
        };
        if !ACCEPTED_PROTOCOLS.contains(&peer.protocol_version) {
            return Err(McpError::Protocol {
                server: spec.name.clone(),
                version: spec.clean(peer.protocol_version.as_str()),
            });
        }
        Ok(Self {
            info: ServerInfo::from_peer(&peer),
            service,
            process,
        })
    }

    /// Whether the session ended (the process exited, the transport closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// The stdio server's process id.
    pub(crate) fn process_id(&self) -> Option<u32> {
        self.process.as_ref().and_then(StdioProcess::id)
    }

    /// Every tool, all pages.
    pub(crate) async fn list_tools(&self, spec: &ServerSpec) -> Result<Vec<Tool>, McpError> {
        let peer = self.service.peer();
        self.request(spec, "tools/list".into(), peer.list_all_tools())
            .await
    }

    /// One `tools/call`.
    pub(crate) async fn call_tool(
        &self,
        spec: &ServerSpec,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let peer = self.service.peer();
        self.request(spec, format!("tools/call {tool}"), peer.call_tool(params))
            .await
    }

    /// Every resource, all pages.
    pub(crate) async fn list_resources(
        &self,
        spec: &ServerSpec,
    ) -> Result<Vec<Resource>, McpError> {
        let peer = self.service.peer();
        self.request(spec, "resources/list".into(), peer.list_all_resources())
            .await
    }

    /// One resource's contents.
    pub(crate) async fn read_resource(
        &self,
        spec: &ServerSpec,
        uri: &str,
    ) -> Result<ReadResourceResult, McpError> {
        let peer = self.service.peer();
        let params = ReadResourceRequestParams::new(uri);
        self.request(spec, "resources/read".into(), peer.read_resource(params))
            .await
    }

    /// Every prompt, all pages.
    pub(crate) async fn list_prompts(&self, spec: &ServerSpec) -> Result<Vec<Prompt>, McpError> {
        let peer = self.service.peer();
        self.request(spec, "prompts/list".into(), peer.list_all_prompts())
            .await
    }

    /// One prompt, rendered with `arguments`.
    pub(crate) async fn get_prompt(
        &self,
        spec: &ServerSpec,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, McpError> {
        let mut params = GetPromptRequestParams::new(name);
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let peer = self.service.peer();
        self.request(spec, format!("prompts/get {name}"), peer.get_prompt(params))
            .await
    }

    async fn request<T>(
        &self,
        spec: &ServerSpec,
        method: String,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        let after = spec.config.call_timeout();
        match tokio::time::timeout(after, request).await {
            Err(_elapsed) => Err(McpError::Timeout {
                server: spec.name.clone(),
                method: spec.clean(&method),
                after,
            }),
            Ok(Ok(value)) => Ok(value),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)))
                if self.is_closed() =>
            {
                let stderr = self.process.as_ref().map(|p| p.stderr.clone());
                Err(McpError::Closed {
                    server: spec.name.clone(),
                    stderr: stderr_text(spec, stderr.as_deref(), true).await,
                })
            }
            Ok(Err(ServiceError::McpError(error))) => Err(McpError::Request {
                server: spec.name.clone(),
                method: spec.clean(&method),
                reason: spec.clean(&format!("{} (code {})", error.message, error.code.0)),
            }),
            Ok(Err(error)) => Err(McpError::Request {
                server: spec.name.clone(),
                method: spec.clean(&method),
                reason: spec.clean(&error.to_string()),
            }),
        }
    }

    /// Ends the session and kills a stdio server's process group.
    pub(crate) async fn close(mut self) {
        let _ = self.service.close_with_timeout(CLOSE_GRACE).await;
        if let Some(process) = self.process.take() {
            process.shutdown().await;
        }
    }
}

async fn stderr_text(spec: &ServerSpec, stderr: Option<&StderrTail>, exiting: bool) -> String {
    let Some(stderr) = stderr else {
        return String::new();
    };
    if exiting {
        stderr.settle().await;
    }
    spec.clean(&stderr.text())
}
