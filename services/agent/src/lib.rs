//! Builds a Talaria agent from the profile home (read through
//! `talaria-profile`): the model providers, the native tools, the plugins and
//! their grants, around the kernel loop. Every surface (CLI, gateway, ACP,
//! cron, API server) starts here.

pub mod agent;
pub mod auxiliary;
mod clarifier;
pub mod exec_setup;
pub mod external_memory;
pub mod grants;
pub mod key_health;
pub mod knowledge;
#[cfg(feature = "mcp")]
mod mcp_tools;
#[cfg(not(feature = "mcp"))]
#[path = "mcp_absent.rs"]
mod mcp_tools;
pub mod memory_admin;
pub mod memory_promote;
mod messenger;
pub mod plugin_compile;
mod plugin_needs;
pub mod plugins;
pub mod session_ops;
mod session_setup;
mod smart_approval;
pub mod store;
#[cfg(test)]
mod test_support;
pub mod tools;

pub use agent::{Agent, AgentOptions, BuildError, ChatUser, Surface, image_store, provider_for};
pub use clarifier::{Clarifier, ClarifyAnswer, ClarifyError, NoAnswer};
pub use knowledge::{SkillSummary, skill_roots};
#[cfg(feature = "mcp")]
pub use mcp_tools::McpServerStatus;
pub use messenger::{MessageTarget, Messenger};
pub use plugins::PluginStatus;
pub use session_ops::{OpsError, SessionUsage, ToolSummary, Undone};
#[cfg(feature = "browser")]
pub use talaria_browser::BrowserKeeper;
/// Attached images, prepared the same way by every surface.
pub use talaria_images as images;
/// The plugin types surfaces see through the agent.
pub use talaria_plugin_host::{KindState, KindStatus, PluginCommandSpec, PluginSkin};
/// Whom a session belongs to.
pub use talaria_store::Principal;
#[cfg(not(feature = "browser"))]
pub use tools::BrowserKeeper;
