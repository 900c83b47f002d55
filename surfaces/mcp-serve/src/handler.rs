//! The MCP request handler: `initialize`, `tools/list` and `tools/call`,
//! written by hand because the tools dispatch to the agent and the store.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use talaria_kernel::Principal;
use tokio::sync::mpsc;

use crate::runner::{RunError, Runner, Step};
use crate::sessions::{Sessions, SessionsError};
use crate::tools::{
    self, Arguments, BadArguments, LIST_SESSIONS, READ_SESSION, RUN_PROMPT, SEARCH_SESSIONS,
};

/// The revisions this server speaks, oldest first: it answers with 2025-11-25
/// and accepts the two before it. (rmcp's newest, 2026-07-28, drops
/// `initialize`; clients here negotiate with it.)
const SUPPORTED: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
];

const INSTRUCTIONS: &str = "Talaria is an LLM agent with tools. run_prompt gives it a task and \
     returns its final answer and a session id; pass that id back as session_id to continue the \
     conversation. list_sessions, search_sessions and read_session read past sessions. Commands \
     that need approval are refused: nobody can approve them here.";

/// What every connection of one server shares.
#[derive(Debug)]
pub struct Shared {
    pub runner: Runner,
    pub sessions: Sessions,
}

/// One MCP connection's handler (HTTP makes one per session, over the same [`Shared`]).
#[derive(Debug, Clone)]
pub struct TalariaServer {
    shared: Arc<Shared>,
    /// Whom requests belong to when the transport names nobody: the owner over stdio (the
    /// local user started it); `None` over HTTP, where the gate names each request's.
    fallback: Option<Principal>,
}

impl TalariaServer {
    /// Over stdio: every request is the owner's.
    pub fn for_stdio(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            fallback: Some(Principal::owner()),
        }
    }

    /// Over HTTP: each request is the principal of the key it came with.
    pub fn for_http(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            fallback: None,
        }
    }

    /// Whom this request belongs to: the principal the HTTP gate put on it, else the
    /// transport's.
    fn principal(&self, context: &RequestContext<RoleServer>) -> Option<Principal> {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>().cloned())
            .or_else(|| self.fallback.clone())
    }

    async fn run_prompt(
        &self,
        arguments: Option<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let args = match Arguments::new(RUN_PROMPT, arguments, &["prompt", "session_id", "cwd"]) {
            Ok(args) => args,
            Err(error) => return failure(&error.to_string()),
        };
        let (steps, mut received) = mpsc::unbounded_channel::<Step>();
        let token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        // Progress is reported only to a client that asked for it (a progress token).
        let forward = async move {
            let mut count = 0u32;
            while let Some(Step(message)) = received.recv().await {
                if let Some(token) = &token {
                    count += 1;
                    let note = ProgressNotificationParam::new(token.clone(), f64::from(count))
                        .with_message(message);
                    // A client gone away will see the cancellation; nothing to do here.
                    let _ = peer.notify_progress(note).await;
                }
            }
        };
        let Some(principal) = self.principal(&context) else {
            return failure("this request names no client; it cannot run");
        };
        let run = self
            .shared
            .runner
            .run(&args, context.ct.clone(), steps, principal);
        let (outcome, ()) = tokio::join!(run, forward);
        match outcome {
            Ok(done) => {
                let footer = format!(
                    "session_id: {} (pass it as session_id to continue this conversation)",
                    done.session_id
                );
                let mut result = CallToolResult::success(vec![
                    ContentBlock::text(done.answer),
                    ContentBlock::text(footer),
                ]);
                result.structured_content = Some(done.structured);
                result
            }
            Err(error) => {
                if !matches!(error, RunError::Arguments(_) | RunError::Cwd { .. }) {
                    eprintln!("talaria mcp serve: run_prompt: {error}");
                }
                failure(&error.to_string())
            }
        }
    }

    /// A sessions tool: SQLite reads, off the async threads.
    async fn sessions_tool(
        &self,
        tool: &'static str,
        arguments: Option<JsonObject>,
        known: &'static [&'static str],
        read: SessionsRead,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let args = match Arguments::new(tool, arguments, known) {
            Ok(args) => args,
            Err(error) => return failure(&error.to_string()),
        };
        let Some(viewer) = self.principal(context) else {
            return failure("this request names no client; it cannot read sessions");
        };
        let shared = self.shared.clone();
        let outcome =
            tokio::task::spawn_blocking(move || read(&shared.sessions, &args, &viewer)).await;
        match outcome {
            Ok(Ok(value)) => structured(value),
            Ok(Err(error)) => failure(&format!("{tool}: {error}")),
            Err(error) => failure(&format!("{tool}: stopped unexpectedly: {error}")),
        }
    }
}

/// A sessions tool's read, as the request's principal.
type SessionsRead = fn(&Sessions, &Arguments<'static>, &Principal) -> Result<Value, SessionsError>;

/// A result the client's model can read: the JSON as text, and as `structuredContent`.
fn structured(value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result
}

/// A tool error: reported in the result (`isError`), where the caller reads it.
fn failure(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_owned())])
}

impl ServerHandler for TalariaServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_server_info(
                Implementation::new("talaria", env!("CARGO_PKG_VERSION")).with_title("Talaria"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::all()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments;
        let result = match request.name.as_ref() {
            RUN_PROMPT => self.run_prompt(arguments, context.clone()).await,
            LIST_SESSIONS => {
                self.sessions_tool(
                    LIST_SESSIONS,
                    arguments,
                    &["limit", "offset"],
                    Sessions::list,
                    &context,
                )
                .await
            }
            SEARCH_SESSIONS => {
                self.sessions_tool(
                    SEARCH_SESSIONS,
                    arguments,
                    &["query", "limit"],
                    Sessions::search,
                    &context,
                )
                .await
            }
            READ_SESSION => {
                self.sessions_tool(
                    READ_SESSION,
                    arguments,
                    &["session_id", "offset", "limit"],
                    Sessions::read,
                    &context,
                )
                .await
            }
            // An unknown tool is a protocol error (the request cannot be routed).
            other => {
                return Err(McpError::invalid_params(
                    BadArguments(format!(
                        "unknown tool '{other}' (this server offers {RUN_PROMPT}, \
                         {LIST_SESSIONS}, {SEARCH_SESSIONS} and {READ_SESSION})"
                    ))
                    .0,
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}
