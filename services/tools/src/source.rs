//! Where tools come from.

use async_trait::async_trait;
use talaria_kernel::{CancellationToken, ToolContext, ToolResult, ToolSpec, ValidatedCall};

/// How the scheduler may run a tool's calls.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ToolFlags {
    /// Never run alongside another call (e.g. it asks the user something).
    pub never_parallel: bool,
    /// No side effects: may run alongside anything that does not write.
    pub read_only: bool,
    /// The argument holding the path the call touches; calls on overlapping
    /// paths never run together.
    pub path_argument: Option<String>,
}

impl ToolFlags {
    /// A read-only tool.
    pub fn read_only() -> Self {
        Self {
            read_only: true,
            ..Self::default()
        }
    }
}

/// One tool a source offers.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    /// What the model sees.
    pub spec: ToolSpec,
    /// Scheduling hints.
    pub flags: ToolFlags,
    /// The toolset the tool belongs to (`file`, `terminal`, `todo`…).
    pub toolset: String,
}

/// A provider of tools: the native agent tools, the plugin host.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// The tools it offers.
    fn tools(&self) -> Vec<ToolEntry>;

    /// Runs one call. A failure is an error result, never a panic.
    async fn call(
        &self,
        call: &ValidatedCall,
        context: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolResult;
}
