//! `memory`: add, replace or remove entries of MEMORY.md / USER.md. Writes
//! land on disk at once; the system prompt keeps the session's snapshot.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use talaria_kernel::{ToolContext, ToolSpec};
use talaria_memory::{
    MEMORY_TOOL_DESCRIPTION, MEMORY_TOOL_NAME, MemoryStore, handle_memory_call, memory_tool_schema,
};

use super::NativeTool;

/// The `memory` tool over one store.
pub struct MemoryTool {
    store: Arc<MemoryStore>,
}

impl MemoryTool {
    /// A tool writing to `store`.
    pub fn new(store: Arc<MemoryStore>) -> Self {
        Self { store }
    }
}

#[async_trait]
impl NativeTool for MemoryTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: MEMORY_TOOL_NAME.into(),
            description: MEMORY_TOOL_DESCRIPTION.into(),
            parameters: memory_tool_schema(),
            refunds_iteration: false,
        }
    }

    fn toolset(&self) -> &'static str {
        "memory"
    }

    async fn call(&self, arguments: &Value, _context: &ToolContext) -> Result<Value, String> {
        let store = self.store.clone();
        let arguments = arguments.clone();
        // File writes with fsync and a cross-process lock: off the async threads.
        tokio::task::spawn_blocking(move || handle_memory_call(&store, &arguments))
            .await
            .map_err(|e| format!("the memory write did not finish: {e}"))?
    }
}
