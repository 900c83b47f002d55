//! A loaded plugin: its manifest, what its calls share, and one slot per kind
//! it provides.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use talaria_kernel::ToolSpec;
use talaria_plugin_manifest::{Capabilities, Manifest, PluginKind, Runtime};
use talaria_tools::ToolFlags;

use crate::cache::Origin;
use crate::error::LoadError;
use crate::host::HostInner;
use crate::invoke::Invocation;
use crate::kinds::commands::PluginCommandSpec;
use crate::kinds::hooks::HookSubscription;
use crate::kinds::skins::PluginSkin;
use crate::kinds::{Kind, Slot, Slots};
use crate::log::{LogLevel, LogSource, PluginLog};
use crate::state::PluginShared;
use crate::state::PluginState;
use wasmtime::component::InstancePre;

/// A tool a plugin provides.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolInfo {
    /// As the model sees it (parameters parsed from the plugin's JSON schema).
    pub spec: ToolSpec,
    /// How the scheduler may run its calls (from the plugin's `tool-flags`).
    pub flags: ToolFlags,
}

pub(crate) struct LoadedInner {
    pub(crate) manifest: Manifest,
    pub(crate) dir: PathBuf,
    pub(crate) shared: Arc<PluginShared>,
    pub(crate) api: semver::Version,
    /// The kinds the component exports (for other runtimes: tools).
    pub(crate) kinds: Vec<PluginKind>,
    pub(crate) slots: Slots,
    /// The skins its component lists, then the package's data skins.
    pub(crate) skins: Vec<PluginSkin>,
    pub(crate) origin: Origin,
    /// For a component loaded from its listing: how its code is prepared at first use.
    pub(crate) deferred: Option<Deferred>,
    pub(crate) host: Arc<HostInner>,
}

/// A component loaded from its remembered listing, its code not read yet.
pub(crate) struct Deferred {
    /// The SHA-256 of the component the listing is of.
    pub(crate) digest: String,
    pub(crate) instance: tokio::sync::OnceCell<InstancePre<PluginState>>,
}

impl LoadedInner {
    /// Everything an invocation needs from a plugin.
    pub(crate) fn invocation(&self) -> Invocation<'_> {
        Invocation {
            engine: &self.host.engine,
            shared: &self.shared,
        }
    }

    /// Its slot of kind `K`, when it provides `K`.
    pub(crate) fn slot<K: Kind>(&self) -> Option<&crate::kinds::Slot<K>> {
        K::slot(&self.slots)
    }

    /// Its slot of kind `K` and what runs its calls, when it provides `K`: a component loaded
    /// from its listing reads, verifies and prepares its code now, the first time.
    pub(crate) async fn pre<K: Kind + 'static>(
        &self,
    ) -> Result<Option<(&Slot<K>, &K::Pre)>, LoadError> {
        let Some(slot) = self.slot::<K>() else {
            return Ok(None);
        };
        if let Some(pre) = slot.pre.get() {
            return Ok(Some((slot, pre)));
        }
        let plugin = &self.manifest.name;
        let Some(deferred) = &self.deferred else {
            return Err(LoadError::Compile {
                plugin: plugin.clone(),
                message: "its code was not loaded".into(),
            });
        };
        let instance = deferred
            .instance
            .get_or_try_init(|| {
                crate::runtime::component::prepare_deferred(
                    &self.host,
                    &self.dir,
                    &self.manifest,
                    &self.shared,
                    deferred,
                )
            })
            .await?;
        let made = K::pre(instance).map_err(|e| LoadError::Exports {
            plugin: plugin.clone(),
            message: format!(
                "its talaria:plugin/{} export: {}",
                K::KIND.interface(),
                crate::cache::error_text(&e)
            ),
        })?;
        Ok(Some((slot, slot.pre.get_or_init(|| made))))
    }

    /// Whether its code has been read and prepared (always, unless it was loaded from its
    /// listing and not used yet).
    pub(crate) fn code_loaded(&self) -> bool {
        self.deferred
            .as_ref()
            .is_none_or(|deferred| deferred.instance.initialized())
    }
}

/// Logs what validation left out, one warning each.
pub(crate) fn note_dropped(log: &PluginLog, dropped: &[String]) {
    for line in dropped {
        log.push(LogLevel::Warn, LogSource::Host, line);
    }
}

/// A plugin ready to instantiate. Cheap to clone.
#[derive(Clone)]
pub struct LoadedPlugin {
    pub(crate) inner: Arc<LoadedInner>,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.inner.manifest.name)
            .field("dir", &self.inner.dir)
            .field("api", &self.inner.api)
            .field("kinds", &self.inner.kinds)
            .field("tools", &self.tools().len())
            .field("commands", &self.commands().len())
            .field("skins", &self.inner.skins.len())
            .finish_non_exhaustive()
    }
}

impl LoadedPlugin {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.inner.manifest.name
    }

    /// Its manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    /// The directory it was loaded from.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// What it may use: the manifest's requests ∩ the grants.
    pub fn capabilities(&self) -> &Capabilities {
        &self.inner.shared.caps
    }

    /// The `talaria:plugin` version its exports target.
    pub fn api_version(&self) -> &semver::Version {
        &self.inner.api
    }

    /// The kinds the component exports.
    pub fn kinds(&self) -> &[PluginKind] {
        &self.inner.kinds
    }

    /// Whether it was loaded as a provider of `kind` (its component exports
    /// the kind's interface and what was listed at load was valid).
    pub fn serves(&self, kind: PluginKind) -> bool {
        self.inner.slots.has(kind)
    }

    /// Its tools (empty unless it provides `tools`).
    pub fn tools(&self) -> &[ToolInfo] {
        self.inner.slots.tools.as_ref().map_or(&[], |s| &s.listed)
    }

    /// The events its hooks subscribe to (empty unless it provides hooks).
    pub fn hook_subscriptions(&self) -> &[HookSubscription] {
        self.inner.slots.hooks.as_ref().map_or(&[], |s| &s.listed)
    }

    /// Its slash commands (empty unless it provides `commands`), validated:
    /// invalid or repeated names were dropped at load with a log line.
    pub fn commands(&self) -> &[PluginCommandSpec] {
        self.inner
            .slots
            .commands
            .as_ref()
            .map_or(&[], |s| &s.listed)
    }

    /// Its skins: those its component lists (when it provides `skin`), then
    /// the package's data skins (`skins/*.yaml`, named by file stem).
    pub fn skins(&self) -> &[PluginSkin] {
        &self.inner.skins
    }

    /// The platform its adapter serves, as its `platform()` reported at load
    /// (`None` unless it provides `platform`).
    pub fn platform(&self) -> Option<&str> {
        self.inner
            .slots
            .platform
            .as_ref()
            .map(|s| s.listed.as_str())
    }

    /// The platform its chat adapter serves, as its `platform()` reported at
    /// load (`None` unless it provides `chat`).
    pub fn chat_platform(&self) -> Option<&str> {
        self.inner.slots.chat.as_ref().map(|s| s.listed.as_str())
    }

    /// Its log (plugin `log` calls, captured stdout/stderr, host notes).
    pub fn log(&self) -> &PluginLog {
        &self.inner.shared.log
    }

    /// What runs its code.
    pub fn runtime(&self) -> Runtime {
        self.inner.manifest.runtime
    }

    /// Whether the component came from the compile cache, or an Extism
    /// module's tool list was remembered (nothing compiled at load).
    pub fn from_cache(&self) -> bool {
        self.inner.origin == Origin::Cached
    }

    /// Whether its code has been read, verified and prepared: false for a component loaded
    /// from its remembered listing ([`crate::HostOptions::defer_code`]) until its first use.
    pub fn code_loaded(&self) -> bool {
        self.inner.code_loaded()
    }
}
