//! What runs a plugin's code: a WebAssembly component ([`component`]), an
//! Extism module ([`extism`], feature `extism`) or a native library
//! ([`native`], feature `native`). Each loads a plugin into the same
//! [`Slots`]; only components provide other kinds than tools.

use std::path::Path;
use std::sync::Arc;

use talaria_plugin_manifest::{Manifest, ManifestError, PluginKind, Runtime};

use crate::cache::Origin;
use crate::error::LoadError;
use crate::host::HostInner;
use crate::kinds::Slots;
use crate::state::PluginShared;

pub(crate) mod component;
#[cfg(any(feature = "extism", feature = "native"))]
pub(crate) mod described;
#[cfg(feature = "extism")]
pub(crate) mod extism;
#[cfg(feature = "native")]
pub(crate) mod native;

/// Whether this build can run plugins of `runtime` (Extism and native plugins
/// need their cargo features).
pub fn runs(runtime: Runtime) -> bool {
    match runtime {
        Runtime::Component => true,
        Runtime::Extism => cfg!(feature = "extism"),
        Runtime::Native => cfg!(feature = "native"),
    }
}

/// Reads the manifest at `path` for this build: a runtime it cannot run is an
/// error at the manifest's `runtime` key.
pub fn read_manifest(path: &Path) -> Result<Manifest, ManifestError> {
    Manifest::load_for(path, runs)
}

/// What a runtime loaded.
pub(crate) struct Loaded {
    /// The `talaria:plugin` version its exports target.
    pub(crate) api: semver::Version,
    /// The kinds it exports.
    pub(crate) kinds: Vec<PluginKind>,
    pub(crate) slots: Slots,
    pub(crate) origin: Origin,
    /// How to prepare the code of a component loaded from its listing.
    pub(crate) deferred: Option<crate::loaded::Deferred>,
}

/// Loads the code of the plugin in `dir` with the runtime its manifest names.
pub(crate) async fn load(
    host: &Arc<HostInner>,
    dir: &Path,
    manifest: &Manifest,
    shared: &Arc<PluginShared>,
) -> Result<Loaded, LoadError> {
    match manifest.runtime {
        Runtime::Component => component::load(host, dir, manifest, shared).await,
        #[cfg(feature = "extism")]
        Runtime::Extism => extism::load(host, dir, manifest, shared).await,
        #[cfg(not(feature = "extism"))]
        Runtime::Extism => Err(unsupported(manifest)),
        #[cfg(feature = "native")]
        Runtime::Native => native::load(dir, manifest, shared).await,
        #[cfg(not(feature = "native"))]
        Runtime::Native => Err(unsupported(manifest)),
    }
}

/// A plugin of a runtime this build does not have.
#[cfg(not(all(feature = "extism", feature = "native")))]
fn unsupported(manifest: &Manifest) -> LoadError {
    LoadError::Unsupported {
        plugin: manifest.name.clone(),
        runtime: manifest.runtime.as_str(),
    }
}

/// A blocking loader task that did not finish.
#[cfg(any(feature = "extism", feature = "native"))]
fn blocking_failed(plugin: &str, error: &tokio::task::JoinError) -> LoadError {
    LoadError::Compile {
        plugin: plugin.to_owned(),
        message: format!("loading task failed: {error}"),
    }
}

/// A module's log line once loaded (components say which API version).
#[cfg(any(feature = "extism", feature = "native"))]
fn log_loaded(manifest: &Manifest, dir: &Path, shared: &PluginShared) {
    shared.log.push(
        crate::log::LogLevel::Info,
        crate::log::LogSource::Host,
        &format!(
            "loaded {} {} ({} runtime) from {}",
            manifest.name,
            manifest.version,
            manifest.runtime,
            dir.display()
        ),
    );
}

/// What a module runtime loads: tools only, for the API its manifest names.
#[cfg(any(feature = "extism", feature = "native"))]
fn tools_only(
    manifest: &Manifest,
    runner: crate::kinds::tools::ToolRunner,
    tools: Vec<crate::loaded::ToolInfo>,
    origin: Origin,
) -> Loaded {
    Loaded {
        api: manifest.api.clone(),
        kinds: vec![PluginKind::Tools],
        slots: Slots {
            tools: Some(crate::kinds::Slot::ready(runner, tools)),
            ..Slots::default()
        },
        origin,
        deferred: None,
    }
}
