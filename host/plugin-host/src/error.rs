//! Errors of the host, of loading a plugin and of one call.

use std::path::PathBuf;

use talaria_plugin_manifest::ManifestError;

/// The host itself could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The wasmtime engine could not be created.
    #[error("creating the WebAssembly engine: {0}")]
    Engine(String),
    /// A directory the host needs could not be created or used.
    #[error("{}: {source}", path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// A plugin directory could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// `plugin.toml` is missing or invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The component file could not be read.
    #[error("plugin {plugin}: reading {}: {source}", path.display())]
    Wasm {
        /// The plugin name.
        plugin: String,
        /// The component path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a valid component, or compiling it failed.
    #[error("plugin {plugin}: {message}")]
    Compile {
        /// The plugin name.
        plugin: String,
        /// What went wrong.
        message: String,
    },
    /// The manifest or the component targets an API version this host does not support.
    #[error("plugin {plugin}: {message}")]
    ApiVersion {
        /// The plugin name.
        plugin: String,
        /// Names both versions.
        message: String,
    },
    /// The component does not export what the manifest says it provides.
    #[error("plugin {plugin}: {message}")]
    Exports {
        /// The plugin name.
        plugin: String,
        /// What is missing.
        message: String,
    },
    /// The component imports something the host does not provide.
    #[error("plugin {plugin}: cannot link: {message}")]
    Link {
        /// The plugin name.
        plugin: String,
        /// The linker's message.
        message: String,
    },
    /// A granted directory does not exist or cannot be used.
    #[error("plugin {plugin}: filesystem grant {grant}: {message}")]
    Filesystem {
        /// The plugin name.
        plugin: String,
        /// The grant as the manifest spells it.
        grant: String,
        /// What is wrong.
        message: String,
    },
    /// Listing the plugin's tools failed.
    #[error("plugin {plugin}: list-tools failed: {message}")]
    ListTools {
        /// The plugin name.
        plugin: String,
        /// What went wrong.
        message: String,
    },
    /// The host's data directories could not be prepared.
    #[error(transparent)]
    Host(#[from] HostError),
    /// An Extism module could not be compiled or does not follow the tool ABI.
    #[error("plugin {plugin}: {message}")]
    Extism {
        /// The plugin name.
        plugin: String,
        /// What went wrong.
        message: String,
    },
    /// A native library could not be loaded or lacks an entry point.
    #[error("plugin {plugin}: {message}")]
    Native {
        /// The plugin name.
        plugin: String,
        /// What went wrong.
        message: String,
    },
    /// A native plugin without the user's `trust-native` grant.
    #[error(
        "plugin {plugin} is native code that would run unsandboxed with your privileges; \
         it loads only once you trust it: `talaria plugin grant {plugin} trust-native`"
    )]
    NotTrusted {
        /// The plugin name.
        plugin: String,
    },
    /// The plugin needs a runtime this build does not have.
    #[error("plugin {plugin}: this build has no {runtime} support (feature `{runtime}`)")]
    Unsupported {
        /// The plugin name.
        plugin: String,
        /// The runtime (`extism`, `native`).
        runtime: &'static str,
    },
}

/// Why one call into a plugin did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The plugin returned a `tool-error`; not a failure of the plugin.
    #[error("{0}")]
    Tool(String),
    /// The call exceeded the plugin's time limit.
    #[error("plugin {plugin}: call to {tool} timed out after {timeout_ms} ms")]
    Timeout {
        /// The plugin name.
        plugin: String,
        /// The tool called.
        tool: String,
        /// The limit.
        timeout_ms: u64,
    },
    /// The instance tried to use more memory than its limit.
    #[error("plugin {plugin}: ran out of memory (limit {limit_mb} MiB) during {tool}")]
    OutOfMemory {
        /// The plugin name.
        plugin: String,
        /// The tool called.
        tool: String,
        /// The limit.
        limit_mb: u32,
    },
    /// The instance trapped (a panic, `unreachable`, a bad memory access...).
    #[error("plugin {plugin} trapped during {tool}: {message}")]
    Trap {
        /// The plugin name.
        plugin: String,
        /// The tool called.
        tool: String,
        /// The trap and, for a panic, its message.
        message: String,
    },
    /// The result is not valid JSON.
    #[error("plugin {plugin}: {tool} returned invalid JSON ({message})")]
    InvalidOutput {
        /// The plugin name.
        plugin: String,
        /// The tool called.
        tool: String,
        /// The parser's message.
        message: String,
    },
    /// The call was cancelled by the caller.
    #[error("plugin {plugin}: call to {tool} was cancelled")]
    Cancelled {
        /// The plugin name.
        plugin: String,
        /// The tool called.
        tool: String,
    },
    /// The host could not set up the call (an instance could not be created).
    #[error("plugin {plugin}: {message}")]
    Host {
        /// The plugin name.
        plugin: String,
        /// What went wrong.
        message: String,
    },
    /// The plugin has failed too often in this session.
    #[error("plugin {plugin} is disabled for this session after {failures} failures")]
    Disabled {
        /// The plugin name.
        plugin: String,
        /// How many failures it had.
        failures: u32,
    },
}

impl CallError {
    /// Whether this counts toward disabling the plugin (a trap, timeout,
    /// memory exhaustion or invalid output; not a tool error or a cancellation).
    pub fn is_plugin_failure(&self) -> bool {
        matches!(
            self,
            Self::Timeout { .. }
                | Self::OutOfMemory { .. }
                | Self::Trap { .. }
                | Self::InvalidOutput { .. }
        )
    }
}

impl LoadError {
    /// A call that could not run because the plugin's code (deferred to its first use) could
    /// not be loaded: the same words as a failed load.
    pub(crate) fn into_call_error(self, plugin: &str) -> CallError {
        let text = self.to_string();
        let message = text
            .strip_prefix(&format!("plugin {plugin}: "))
            .map_or_else(|| text.clone(), str::to_owned);
        CallError::Host {
            plugin: plugin.to_owned(),
            message,
        }
    }
}
