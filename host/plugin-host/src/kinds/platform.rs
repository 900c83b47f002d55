//! Chat platform adapters: the `platform-plugin` world. At load the host
//! asks a component for its `platform()` name (in a fresh instance);
//! [`PluginPlatformAdapters`] holds one adapter per platform. Nothing calls
//! `parse-event` or `render-reply` yet: the set says so in its notices.

use std::path::{Path, PathBuf};

use talaria_plugin_manifest::PluginKind;
use wasmtime::component::InstancePre;

use super::placed::Placed;
use super::{Kind, Slot, Slots};
use crate::bindings::platform_world::PlatformPluginPre;
use crate::error::{CallError, HostError, LoadError};
use crate::invoke::{Invocation, once_at_load};
use crate::loaded::LoadedPlugin;
use crate::state::PluginState;

/// Longest platform name an adapter may report.
pub const MAX_PLATFORM_NAME_LEN: usize = 64;

/// The `platform` kind: the platform's name, read at load.
pub(crate) struct PlatformKind;

impl Kind for PlatformKind {
    const KIND: PluginKind = PluginKind::Platform;
    type Pre = PlatformPluginPre<PluginState>;
    type Listed = String;

    fn pre(instance: &InstancePre<PluginState>) -> wasmtime::Result<Self::Pre> {
        PlatformPluginPre::new(instance.clone())
    }

    async fn list(inv: &Invocation<'_>, pre: &Self::Pre) -> Result<String, LoadError> {
        let asked = once_at_load(inv, "platform", async |store| {
            let instance = pre.instantiate_async(&mut *store).await?;
            instance
                .talaria_plugin_platform_adapter()
                .call_platform(store)
                .await
        })
        .await;
        checked_platform_name(inv, asked)
    }

    fn slot(slots: &Slots) -> Option<&Slot<Self>> {
        slots.platform.as_ref()
    }

    fn slot_mut(slots: &mut Slots) -> &mut Option<Slot<Self>> {
        &mut slots.platform
    }
}

/// The platform name a plugin's `platform()` answered at load, checked: a
/// failed call or an unusable name fails the load.
pub(crate) fn checked_platform_name(
    inv: &Invocation<'_>,
    asked: Result<String, CallError>,
) -> Result<String, LoadError> {
    let failed = |message: String| LoadError::Exports {
        plugin: inv.shared.name.clone(),
        message,
    };
    let name = asked.map_err(|e| failed(format!("asking its platform name failed: {e}")))?;
    if !valid_platform_name(&name) {
        return Err(failed(format!(
            "platform() returned {name:?}: a platform name is 1 to {MAX_PLATFORM_NAME_LEN} \
             visible characters without spaces"
        )));
    }
    Ok(name)
}

/// Whether `name` can name a platform in notices and settings.
fn valid_platform_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PLATFORM_NAME_LEN
        && name.chars().all(|c| c.is_ascii_graphic())
}

/// One platform adapter: the plugin and the platform it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformAdapterInfo {
    /// The plugin providing it.
    pub plugin: String,
    /// The platform, as its `platform()` reported at load.
    pub platform: String,
}

/// The platform adapters among the plugins loaded, one per platform, placed
/// in one working directory.
pub struct PluginPlatformAdapters {
    entries: Vec<Placed>,
    clashes: Vec<String>,
    cwd: PathBuf,
}

impl std::fmt::Debug for PluginPlatformAdapters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginPlatformAdapters")
            .field("adapters", &self.adapters())
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl PluginPlatformAdapters {
    /// The platform adapters among `plugins` (others are ignored), for
    /// sessions in `cwd`. A platform is kept by the first plugin serving it;
    /// later ones are dropped, logged to their plugin and listed in
    /// [`clashes`](Self::clashes).
    pub fn new(plugins: Vec<LoadedPlugin>, cwd: &Path) -> Result<Self, HostError> {
        let (cwd, placed) = super::place::<PlatformKind>(plugins, cwd)?;
        let mut entries: Vec<Placed> = Vec::with_capacity(placed.len());
        let mut clashes = Vec::new();
        for candidate in placed {
            let platform = candidate.plugin.platform().unwrap_or_default();
            match entries
                .iter()
                .find(|e| e.plugin.platform() == Some(platform))
            {
                Some(owner) => {
                    let clash = format!(
                        "platform adapter {} of plugin {} dropped: plugin {} already serves {}",
                        platform,
                        candidate.plugin.name(),
                        owner.plugin.name(),
                        platform
                    );
                    candidate.plugin.log().push(
                        crate::log::LogLevel::Warn,
                        crate::log::LogSource::Host,
                        &clash,
                    );
                    clashes.push(clash);
                }
                None => entries.push(candidate),
            }
        }
        Ok(Self {
            entries,
            clashes,
            cwd,
        })
    }

    /// Each adapter with its platform, in load order.
    pub fn adapters(&self) -> Vec<PlatformAdapterInfo> {
        self.entries
            .iter()
            .map(|e| PlatformAdapterInfo {
                plugin: e.plugin.name().to_owned(),
                platform: e.plugin.platform().unwrap_or_default().to_owned(),
            })
            .collect()
    }

    /// The plugin serving `platform`.
    pub fn find(&self, platform: &str) -> Option<&LoadedPlugin> {
        self.entries
            .iter()
            .map(|e| &e.plugin)
            .find(|p| p.platform() == Some(platform))
    }

    /// Adapters dropped because an earlier plugin serves their platform.
    pub fn clashes(&self) -> &[String] {
        &self.clashes
    }

    /// Whether no plugin is a platform adapter.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_names_are_visible_words() {
        for good in ["telegram", "probe-chat", "x.y_z", &"a".repeat(64)] {
            assert!(valid_platform_name(good), "{good:?} is valid");
        }
        for bad in ["", "two words", "tab\t", "é", &"a".repeat(65)] {
            assert!(!valid_platform_name(bad), "{bad:?} is invalid");
        }
    }
}
