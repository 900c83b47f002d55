//! Builds a Talaria agent from the profile home: the config file, the `.env`
//! secrets, the model providers and the native tools, around the kernel loop.
//! Every surface (CLI, gateway, ACP, cron, API server) starts here.

pub mod agent;
pub mod auxiliary;
pub mod config;
pub mod config_edit;
pub mod delegate;
pub mod env;
pub mod exec_setup;
pub mod grants;
pub mod hermes_import;
pub mod home;
pub mod home_modes;
pub mod knowledge;
pub mod plugins;
pub mod profiles;
pub mod session_ops;
pub mod settings;
pub mod store;
pub mod tools;

pub use agent::{Agent, AgentOptions, BuildError, Surface, provider_for};
pub use config::{ConfigError, ConfigFile};
pub use env::EnvLayer;
pub use home::ProfileHome;
pub use knowledge::SkillSummary;
pub use plugins::PluginStatus;
pub use profiles::{DEFAULT_PROFILE, ProfileError, ProfileInfo, Profiles};
pub use session_ops::{OpsError, SessionUsage, ToolSummary, Undone};
pub use settings::{ModelSettings, Overrides, Settings, SettingsError};
/// The plugin types surfaces see through the agent.
pub use talaria_plugin_host::{KindState, KindStatus, PluginCommandSpec, PluginSkin};
