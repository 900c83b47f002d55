//! The stateless layer between the agent loop and the tools.
//!
//! - [`ToolSource`]: where tools come from (native agent tools, plugins); each
//!   tool carries scheduling [`ToolFlags`] and the toolset it belongs to.
//! - [`Toolsets`] and [`Profile`]: which tools the model may see. A tool
//!   outside the selection is not in the model's list at all.
//! - [`plan`]: which calls of one turn may run together (read-only calls, and
//!   path-scoped calls whose paths do not overlap), at most
//!   [`MAX_WORKERS`] at a time, results in call order.
//! - [`ResultBudget`]: keeps each result, and a turn's results together,
//!   within budget; the full output is spilled to a file the result names.
//! - [`SchemaMode`]: full schemas, or a compact index with `tool_schema`
//!   handing out full schemas on demand (small first requests).
//! - [`Dispatcher`]: the kernel's `ToolDispatcher` over all of it.
//! - [`HookedTools`] and [`ToolHooks`]: the session's tool hooks for calls
//!   made outside the loop's turn (scripts) and in sub-agents.

mod budget;
mod dispatcher;
mod hooked;
mod lazy;
mod paths;
mod scheduler;
mod source;
mod toolsets;

pub use budget::ResultBudget;
pub use dispatcher::{DispatchOptions, Dispatcher};
pub use hooked::{HookedTools, ToolHooks};
pub use lazy::{AUTO_LAZY_THRESHOLD, SchemaMode, TOOL_SCHEMA};
pub use paths::{normalize_path, overlaps};
pub use scheduler::{MAX_WORKERS, PlannedCall, plan};
pub use source::{ToolEntry, ToolFlags, ToolSource};
pub use toolsets::{Profile, Selection, ToolsetDef, ToolsetError, Toolsets};
