//! The profile home (`TALARIA_HOME`, default `~/.talaria`) and what is read
//! from it before an agent exists: the home's layout and private file modes,
//! `config.yaml` (parsed, edited in place), the `.env` secrets layer, the
//! effective settings of a run, named profiles and the Hermes import.
//!
//! Surfaces that only manage the home (`talaria config`, `profile`, `import`)
//! need this crate alone; `talaria-agent` builds agents from it.

pub mod browser_config;
pub mod config;
pub mod config_edit;
pub mod config_view;
pub mod cron_config;
pub mod env;
pub mod gateway_config;
mod hermes_gateway;
pub mod hermes_import;
mod hermes_mcp;
pub mod home;
pub mod home_modes;
mod load;
pub mod mcp_config;
pub mod memory_config;
pub mod profiles;
pub mod servers_config;
pub mod settings;
pub mod web_config;
pub mod webhook_config;

pub use browser_config::BrowserConfig;
pub use config::{ConfigError, ConfigFile};
pub use cron_config::CronConfig;
pub use env::EnvLayer;
pub use gateway_config::{BusyMode, GatewayConfig, GroupSessions, HomeChannel, PlatformConfig};
pub use home::ProfileHome;
pub use load::{LoadError, ProfileCache, load_profile};
pub use mcp_config::{McpApproval, McpSandbox, McpServerConfig, McpToolsConfig, McpTransport};
pub use memory_config::MemoryConfig;
pub use profiles::{DEFAULT_PROFILE, ProfileError, ProfileInfo, Profiles};
pub use settings::{ModelSettings, Overrides, Settings, SettingsError};
pub use web_config::{ExtractBackend, SearchBackend, WebConfig};
pub use webhook_config::{ChatAddress, WebhookConfig, WebhookRouteConfig, WebhookSignature};
