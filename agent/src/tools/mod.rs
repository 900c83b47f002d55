//! Agent-level tools that run natively in the host (they need the agent's own
//! state, not a sandbox). Plugin tools arrive through the plugin platform.

mod composite;
mod todo;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use talaria_kernel::{
    CancellationToken, ToolContext, ToolDispatcher, ToolResult, ToolSpec, ValidatedCall,
};

pub use composite::CompositeTools;
pub use todo::TodoTool;

/// A tool implemented in the host.
#[async_trait]
pub trait NativeTool: Send + Sync {
    /// What the model sees.
    fn spec(&self) -> ToolSpec;
    /// Runs the call; `Err` is a message the model reads as an error result.
    async fn call(&self, arguments: &Value, context: &ToolContext) -> Result<Value, String>;
}

/// The native tools every agent has.
pub fn builtin() -> Vec<Arc<dyn NativeTool>> {
    vec![Arc::new(TodoTool::default())]
}

/// Dispatches calls to native tools, one after another (the parallel scheduler
/// belongs to the tool execution layer).
pub struct NativeTools {
    tools: Vec<Arc<dyn NativeTool>>,
}

impl NativeTools {
    /// A dispatcher over `tools`.
    pub fn new(tools: Vec<Arc<dyn NativeTool>>) -> Self {
        Self { tools }
    }
}

#[async_trait]
impl ToolDispatcher for NativeTools {
    fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    async fn execute(
        &self,
        calls: &[ValidatedCall],
        context: &ToolContext,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(calls.len());
        for valid in calls {
            if cancel.is_cancelled() {
                break;
            }
            let tool = self.tools.iter().find(|t| t.spec().name == valid.call.name);
            let outcome = match tool {
                Some(tool) => tool.call(&valid.arguments, context).await,
                None => Err(format!("tool '{}' is not available", valid.call.name)),
            };
            results.push(match outcome {
                Ok(value) => ToolResult::ok(&valid.call, value.to_string()),
                Err(message) => ToolResult::error(&valid.call, message),
            });
        }
        results
    }
}
