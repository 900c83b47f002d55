//! What a Talaria plugin declares, as pure data: the `plugin.toml` manifest
//! ([`Manifest`]), the `talaria:plugin` API version and its compatibility rule
//! ([`HOST_API`], [`compatible`]), the grants a user gives a plugin
//! ([`Grants`]) and the network patterns both are written in ([`NetPattern`]).
//!
//! The plugin host (`talaria-plugin-host`) runs plugins from these; the
//! registry, `talaria plugin new/build/pack` and `talaria dist build` read them
//! without linking a WebAssembly runtime.

pub mod address;
mod capabilities;
pub mod files;
mod grants;
mod kind;
mod manifest;
mod net_pattern;
pub mod version;

pub use crate::grants::{Grants, network_request_covers};
pub use crate::manifest::{
    Access, Capabilities, DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_MS, FsCapability, Limits,
    MANIFEST_FILE, MAX_MEMORY_MB, MAX_TIMEOUT_MS, Manifest, ManifestError, PluginKind, Runtime,
    SecretCapability, line_column,
};
pub use crate::net_pattern::{CONFIG_REQUEST_PREFIX, NetPattern, config_address};
pub use crate::version::{HOST_API, compatible};
