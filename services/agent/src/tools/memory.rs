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
use crate::external_memory::ActiveMemory;

/// The `memory` tool over one store.
pub struct MemoryTool {
    store: Arc<MemoryStore>,
    /// The session's external provider, told of every write.
    mirror: Option<Arc<ActiveMemory>>,
}

impl MemoryTool {
    /// A tool writing to `store`, mirroring its writes to `mirror`.
    pub fn new(store: Arc<MemoryStore>, mirror: Option<Arc<ActiveMemory>>) -> Self {
        Self { store, mirror }
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
        let args = arguments.clone();
        // File writes with fsync and a cross-process lock: off the async threads.
        let written = tokio::task::spawn_blocking(move || handle_memory_call(&store, &args))
            .await
            .map_err(|e| format!("the memory write did not finish: {e}"))??;
        if let Some(mirror) = &self.mirror {
            let field = |name: &str| arguments.get(name).and_then(Value::as_str).unwrap_or("");
            mirror.memory_written(field("action"), field("target"), field("content"));
        }
        Ok(written)
    }
}
