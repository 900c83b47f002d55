//! Talaria's memory (DESIGN.md §5).
//!
//! * [`MemoryStore`] — MEMORY.md (the agent's notes) and USER.md (the user profile) in the profile
//!   home: entries separated by `§`, character limits, atomic writes that land on disk at once,
//!   and a frozen [`MemorySnapshot`] read at session start for the system prompt.
//! * [`scan`] — the threat scanner (prompt injection, role hijack, deception, exfiltration,
//!   persistence, hidden HTML, invisible Unicode; English and Chinese) with rules kept as data in
//!   `threats.toml`. Every memory write and every context file goes through it.
//! * [`load_context_files`] — AGENTS.md, .talaria.md, CLAUDE.md and .hermes.md from the working
//!   directory, scanned and capped.
//! * [`handle_memory_call`] — the Hermes-compatible `memory` tool.
//! * [`wrap_provider_context`] — frames memory retrieved by a provider plugin.
#![warn(missing_docs)]

mod atomic;
mod context_files;
mod entries;
mod error;
mod normalize;
mod provider;
pub mod scan;
mod snapshot;
mod store;
mod tool;

pub use context_files::{
    CONTEXT_FILE_CHAR_LIMIT, CONTEXT_FILE_NAMES, ContextFile, load_context_files,
    render_context_files,
};
pub use error::{MemoryError, ScanError};
pub use normalize::normalize;
pub use provider::wrap_provider_context;
pub use scan::{Category, Scanner, Scope, Threat};
pub use snapshot::{BlockedEntry, MemorySnapshot};
pub use store::{MEMORY_CHAR_LIMIT, MemoryStore, Target, USER_CHAR_LIMIT, Usage, WriteOutcome};
pub use tool::{MEMORY_TOOL_DESCRIPTION, MEMORY_TOOL_NAME, handle_memory_call, memory_tool_schema};
