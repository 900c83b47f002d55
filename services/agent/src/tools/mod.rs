//! The native tools: the one registry of tools that run in the host rather
//! than in a plugin's sandbox ([`native_tools`] lists every one).
//!
//! The rule for when a tool may be native: it needs the loop or the session
//! (their state, their stores, the dispatcher itself, the surface's chats) —
//! `todo`, `memory`, the skill tools, `session_search`, `execute_code` (calls
//! back into the dispatcher), `delegate_task` (builds child agents),
//! `send_message` (the gateway's connections), `cronjob` (the profile's jobs,
//! changed only through the approval layer), `clarify` (the surface's user),
//! the browser tools (a Chromium process per session).
//! Everything that touches the world (files, processes, the network) is a
//! plugin, granted its capabilities by the user: `fs`, `terminal`, web tools.
//!
//! Native or plugin, every tool is one entry of the same dispatcher, so every
//! call passes the same hooks and, for side effects, the same approval layer
//! (`execute_code` runs scripts through the session's approval-gated
//! executor; its tool calls go back through the hooked dispatcher).

#[cfg(feature = "browser")]
mod browser;
#[cfg(not(feature = "browser"))]
#[path = "browser_absent.rs"]
mod browser;
mod clarify;
#[cfg(feature = "cron")]
mod cronjob;
mod delegate;
mod execute_code;
mod image_fetch;
mod memory;
mod send_message;
mod session_search;
mod skills;
mod todo;
mod vision;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use talaria_kernel::{CancellationToken, ToolContext, ToolResult, ToolSpec, ValidatedCall};
use talaria_plugin_host::ExecServices;
use talaria_store::SessionDb;
use talaria_tools::{ToolEntry, ToolFlags, ToolSource};

use crate::auxiliary::Auxiliary;
use crate::knowledge::Knowledge;

#[cfg(not(feature = "browser"))]
pub use browser::BrowserKeeper;
pub use browser::{BROWSER_TOOLS, BrowserTools};
pub use clarify::{CLARIFY, ClarifyTool, MAX_CHOICES};
#[cfg(feature = "cron")]
pub use cronjob::{CronJobSetup, CronJobTool};
pub use delegate::{ChildKit, DelegateTool, MAX_CHILDREN, MAX_DEPTH};
pub use execute_code::{
    CodeLimits, DEFAULT_TIMEOUT, ExecuteCodeTool, MAX_STDERR_BYTES, MAX_STDOUT_BYTES,
    MAX_TOOL_CALLS, SOCKET_ENV, ToolsHandle,
};
pub use memory::MemoryTool;
pub use send_message::SendMessageTool;
pub use session_search::SessionSearchTool;
pub use skills::{ScanFn, skill_tools, threat_scan};
pub use todo::TodoTool;
pub use vision::VisionTool;

/// A tool implemented in the host.
#[async_trait]
pub trait NativeTool: Send + Sync {
    /// What the model sees.
    fn spec(&self) -> ToolSpec;
    /// The toolset it belongs to.
    fn toolset(&self) -> &'static str;
    /// How the scheduler may run it (default: alone).
    fn flags(&self) -> ToolFlags {
        ToolFlags::default()
    }
    /// Runs the call; `Err` is a message the model reads as an error result.
    async fn call(&self, arguments: &Value, context: &ToolContext) -> Result<Value, String>;
}

/// What `vision_analyze` is built from.
pub(crate) struct VisionSetup {
    /// The model it asks (the auxiliary one, else the main one).
    pub model: Arc<Auxiliary>,
    /// Where prepared images are stored.
    pub store: talaria_images::ImageStore,
    /// Where it may read local files (the file tools' grants).
    pub local_roots: Vec<PathBuf>,
    /// `security.allow_private_urls`.
    pub allow_private_urls: bool,
}

/// What one session's native tools are built from.
pub(crate) struct NativeToolInputs<'a> {
    /// Memory and skills (the `memory` and skill tools).
    pub knowledge: &'a Knowledge,
    /// The session database, when it opened (`session_search`).
    pub db: Option<&'a Arc<SessionDb>>,
    /// The auxiliary model, if configured (summaries in `session_search`).
    pub auxiliary: Option<Arc<Auxiliary>>,
    /// The session's approval-gated executor (`execute_code`).
    pub exec: &'a ExecServices,
    /// The session's working directory.
    pub cwd: &'a Path,
    /// Where scripts get their scratch directories.
    pub scratch_root: PathBuf,
    /// Whether a user can answer an approval prompt (else `execute_code` is
    /// offered only where no prompt is needed: in a sandbox or yolo mode).
    pub someone_can_approve: bool,
    /// Where `send_message` delivers, when the surface has chats.
    pub messenger: Option<Arc<dyn crate::Messenger>>,
    /// The profile's scheduled jobs (`cronjob`), when their time zone reads.
    #[cfg(feature = "cron")]
    pub cron: Option<CronJobSetup>,
    /// Who answers `clarify`, when someone can.
    pub clarifier: Option<Arc<dyn crate::Clarifier>>,
    /// `vision_analyze`, unless the session is driven by an outside payload (a webhook).
    pub vision: Option<VisionSetup>,
    /// The browser tools, when the surface offers them and Chromium is there.
    pub browser: Option<BrowserTools>,
    /// The session's external memory provider (told of `memory` writes).
    pub external_memory: Option<Arc<crate::external_memory::ActiveMemory>>,
    /// Whom the session belongs to: `session_search` finds only its sessions.
    pub principal: &'a talaria_store::Principal,
}

/// One session's native tools, and the handles finished once the session's
/// dispatcher and hooks exist.
pub(crate) struct NativeToolSet {
    /// The tool sources: the plain native tools, `delegate_task`, then
    /// `clarify` when someone can answer.
    pub sources: Vec<Arc<dyn ToolSource>>,
    /// `execute_code`'s way back into the dispatcher.
    pub code_tools: ToolsHandle,
    /// `delegate_task`, given its children's kit later.
    pub delegate: DelegateTool,
}

/// Every native tool of a session, in one list. A tool whose store or
/// executor is missing is not offered at all (not offered and failing).
pub(crate) fn native_tools(inputs: NativeToolInputs<'_>) -> NativeToolSet {
    let NativeToolInputs {
        knowledge,
        db,
        auxiliary,
        exec,
        cwd,
        scratch_root,
        someone_can_approve,
        messenger,
        #[cfg(feature = "cron")]
        cron,
        clarifier,
        vision,
        browser,
        external_memory,
        principal,
    } = inputs;
    let mut tools: Vec<Arc<dyn NativeTool>> = vec![Arc::new(TodoTool::default())];
    if let Some(store) = knowledge.memory_store() {
        tools.push(Arc::new(MemoryTool::new(store, external_memory)));
    }
    tools.extend(skill_tools(knowledge.skill_manager(), threat_scan()));
    if let Some(db) = db {
        tools.push(Arc::new(SessionSearchTool::new(
            db.clone(),
            auxiliary,
            principal.clone(),
        )));
    }
    if let Some(messenger) = messenger {
        tools.push(Arc::new(SendMessageTool::new(messenger)));
    }
    #[cfg(feature = "cron")]
    if let Some(cron) = cron
        && CronJobTool::offered(&exec.executor, someone_can_approve)
    {
        tools.push(Arc::new(CronJobTool::new(cron, exec.executor.clone())));
    }
    if let Some(vision) = vision {
        tools.push(Arc::new(VisionTool::new(
            vision.model,
            vision.store,
            cwd,
            exec.executor.clone(),
            vision.local_roots,
            vision.allow_private_urls,
        )));
    }
    let code_tools = ToolsHandle::new();
    if ExecuteCodeTool::offered(exec, someone_can_approve) {
        tools.push(Arc::new(ExecuteCodeTool::new(
            exec,
            cwd,
            scratch_root,
            code_tools.clone(),
        )));
    }
    // delegate_task is a source of its own: it drops itself from the sources
    // its children get.
    let delegate = DelegateTool::new();
    let mut sources: Vec<Arc<dyn ToolSource>> = vec![
        Arc::new(NativeTools::new(tools)),
        Arc::new(delegate.clone()),
    ];
    if let Some(clarifier) = clarifier {
        sources.push(Arc::new(ClarifyTool::new(clarifier)));
    }
    if let Some(browser) = browser {
        sources.push(Arc::new(browser));
    }
    NativeToolSet {
        sources,
        code_tools,
        delegate,
    }
}

/// The native tools as a tool source.
pub struct NativeTools {
    tools: Vec<Arc<dyn NativeTool>>,
}

impl NativeTools {
    /// A source over `tools`.
    pub fn new(tools: Vec<Arc<dyn NativeTool>>) -> Self {
        Self { tools }
    }
}

#[async_trait]
impl ToolSource for NativeTools {
    fn tools(&self) -> Vec<ToolEntry> {
        self.tools
            .iter()
            .map(|tool| ToolEntry {
                spec: tool.spec(),
                flags: tool.flags(),
                toolset: tool.toolset().to_owned(),
            })
            .collect()
    }

    async fn call(
        &self,
        call: &ValidatedCall,
        context: &ToolContext,
        _cancel: &CancellationToken,
    ) -> ToolResult {
        let tool = self.tools.iter().find(|t| t.spec().name == call.call.name);
        let outcome = match tool {
            Some(tool) => tool.call(&call.arguments, context).await,
            None => Err(format!("tool '{}' is not available", call.call.name)),
        };
        match outcome {
            Ok(value) => ToolResult::ok(&call.call, value.to_string()),
            Err(message) => ToolResult::error(&call.call, message),
        }
    }
}
