//! Agent-level tools that run natively in the host (they need the agent's own
//! state, not a sandbox). Plugin tools arrive through the plugin platform.

mod execute_code;
mod memory;
mod session_search;
mod skills;
mod todo;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use talaria_kernel::{CancellationToken, ToolContext, ToolResult, ToolSpec, ValidatedCall};
use talaria_tools::{ToolEntry, ToolFlags, ToolSource};

pub use execute_code::{
    CodeLimits, DEFAULT_TIMEOUT, ExecuteCodeTool, MAX_STDERR_BYTES, MAX_STDOUT_BYTES,
    MAX_TOOL_CALLS, SOCKET_ENV, ToolsHandle,
};
pub use memory::MemoryTool;
pub use session_search::SessionSearchTool;
pub use skills::{ScanFn, skill_tools};
pub use todo::TodoTool;

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

/// The native tools every agent has.
pub fn builtin() -> Vec<Arc<dyn NativeTool>> {
    vec![Arc::new(TodoTool::default())]
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
