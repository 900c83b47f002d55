//! Talaria's plugin host: runs WebAssembly components against the
//! `talaria:plugin` WIT API with wasmtime.
//!
//! - One process-wide [`wasmtime::Engine`] (async, epoch interruption,
//!   Cranelift, pooling allocator) with a 10 ms epoch ticker.
//! - [`PluginHost::load`] reads `plugin.toml` ([`Manifest`], from the light
//!   `talaria-plugin-manifest` crate), compiles the
//!   component or loads it from the compiled-artefact cache, checks the API
//!   version the component targets, and prepares an `InstancePre`.
//! - [`PluginTools`] implements the kernel's [`talaria_kernel::ToolDispatcher`]
//!   over the loaded tool plugins, one fresh instance per call, with
//!   capability enforcement through WASI preopens and socket checks, per-call
//!   time and memory limits, and failure isolation.
//! - [`PluginHooks`] is the kernel's [`talaria_kernel::Hooks`] over the hooks
//!   plugins; [`PluginCommands`] runs the command plugins' slash commands;
//!   [`LoadedPlugin::skins`] lists a plugin's skins (from its component and
//!   its package's `skins/*.yaml`); [`PluginMemoryProviders`] holds the memory
//!   plugins and opens one for a session as a [`MemorySession`] (a long-lived
//!   instance); [`PluginPlatformAdapters`] holds the 0.1.0 platform plugins
//!   (loaded and checked, not called). [`PluginSets`] builds every
//!   set, and [`LoadedPlugin::kind_statuses`] says what became of each kind.
//! - [`PluginChatAdapters`] holds the chat adapters, one per platform, and a
//!   [`ChatConnection`] holds one chat account open in a long-lived instance
//!   (for a gateway), woken early through its [`HostWork`] signal.
//!
//! - With the `extism` feature, [`PluginHost::load`] also loads Extism
//!   modules (`runtime = "extism"`) whose tools join [`PluginTools`], under
//!   the same grants mapped onto Extism's manifest; with the `native`
//!   feature, native libraries (`runtime = "native"`, C ABI, unsandboxed,
//!   only with a `trust-native` grant).
//!
//! See `README.md` for the manifest format, the sandbox and the Extism and
//! native ABIs.

mod bindings;
mod cache;
mod engine;
mod error;
mod failures;
mod guard;
mod host;
mod imports;
mod invoke;
mod kinds;
mod listing;
mod loaded;
mod loaded_code;
mod log;
mod mac;
mod options;
mod prebuilt;
mod resident;
mod runtime;
mod sandbox;
mod state;

pub use crate::prebuilt::{PREBUILT_DIGESTS, PREBUILT_SIGNATURE, prebuilt_signed_message};

/// Whether this build compiles plugins (the `compiler` feature); without it only components
/// compiled at a distribution's build load.
pub const CAN_COMPILE: bool = cfg!(feature = "compiler");
pub use crate::engine::{EPOCH_TICK, POOLING_ENV, uses_pooling};
pub use crate::error::{CallError, HostError, LoadError};
pub use crate::failures::DISABLE_AFTER_FAILURES;
pub use crate::host::PluginHost;
pub use crate::imports::auxiliary::{AuxiliaryModel, MAX_AUXILIARY_TOKENS};
pub use crate::imports::chat::HostWork;
pub use crate::imports::editor::Editor;
pub use crate::imports::egress::{ProcessEnvSecrets, Resolver, SecretSource, SystemResolver};
pub use crate::imports::exec::{ExecServices, MAX_EXEC_OUTPUT_BYTES};
pub use crate::imports::session_search::{SessionHit, SessionSearch};
pub use crate::kinds::chat::types::{
    Attachment, Chat, ChatCapabilities, ChatDetails, ChatKind, IdStrength, InboundMessage,
    LengthUnit, Outbound, SendOutcome, Sender, SenderIdentity, WebhookRequest, WebhookResponse,
};
pub use crate::kinds::chat::{
    ChatAdapterInfo, ChatConnection, ChatError, NEXT_EVENTS_MARGIN, PluginChatAdapters,
    check_allowed_users, config_section,
};
pub use crate::kinds::commands::{
    CommandClash, CommandError, MAX_COMMAND_NAME_LEN, PluginCommandSpec, PluginCommands,
    valid_command_name,
};
pub use crate::kinds::hooks::{HookEvent, HookSubscription, PluginHooks};
pub use crate::kinds::memory::{
    MemoryError, MemoryScope, MemorySession, MemorySessionKind, PluginMemoryProviders,
    ProviderOptions,
};
pub use crate::kinds::platform::{
    MAX_PLATFORM_NAME_LEN, PlatformAdapterInfo, PluginPlatformAdapters,
};
pub use crate::kinds::sets::PluginSets;
pub use crate::kinds::skins::{MAX_SKIN_BYTES, PluginSkin, PluginSkins, SKINS_DIR};
pub use crate::kinds::status::{KindState, KindStatus, kind_support, wired};
pub use crate::kinds::tool_choice::{ToolClash, ToolProviders};
pub use crate::kinds::tools::{PluginTools, ToolInstance};
pub use crate::loaded::{LoadedPlugin, ToolInfo};
pub use crate::log::{LogLevel, LogLine, LogSource, PluginLog};
pub use crate::options::{CacheStats, CompileObserver, HostOptions};
#[cfg(feature = "native")]
pub use crate::runtime::native::NATIVE_ABI_VERSION;
pub use crate::runtime::{read_manifest, runs};
pub use talaria_tools::ToolFlags;
// The manifest, the API version rule and grants live in the light
// `talaria-plugin-manifest` crate; re-exported so that users of the host need
// only this one.
pub use talaria_plugin_manifest::{
    Access, Capabilities, DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_MS, FsCapability, Grants, HOST_API,
    Limits, MANIFEST_FILE, Manifest, ManifestError, NetPattern, PluginKind, Runtime,
    SecretCapability, compatible, network_request_covers,
};
