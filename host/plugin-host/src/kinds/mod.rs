//! The kinds of functionality a plugin provides, one module each (tools,
//! hooks, commands, skins, memory providers, platform and chat adapters).
//!
//! A [`Kind`] says how a component's exports of it are prepared and what the
//! host reads from them once at load; a loaded plugin keeps one [`Slot`] per
//! kind it provides. Every set built over loaded plugins ([`crate::PluginTools`],
//! [`crate::PluginHooks`]…) takes the plugins holding its slot through
//! [`place`], and [`sets::PluginSets`] builds them all.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use talaria_plugin_manifest::PluginKind;
use wasmtime::component::InstancePre;

use crate::error::{HostError, LoadError};
use crate::invoke::Invocation;
use crate::loaded::LoadedPlugin;
use crate::state::PluginState;

pub(crate) mod chat;
pub(crate) mod commands;
pub(crate) mod hooks;
pub(crate) mod memory;
pub(crate) mod placed;
pub(crate) mod platform;
pub(crate) mod sets;
pub(crate) mod skins;
pub(crate) mod status;
pub(crate) mod tool_choice;
pub(crate) mod tool_specs;
pub(crate) mod tools;

use placed::{Placed, canonical_cwd};

/// One kind of plugin functionality, as the host loads it from a component.
pub(crate) trait Kind: Sized {
    /// The kind, as manifests name it.
    const KIND: PluginKind;
    /// What runs its calls (for a component: its world's typed `InstancePre`).
    type Pre: Send + Sync;
    /// What the host reads once at load (tools, subscriptions, a name…).
    type Listed: Send + Sync;

    /// The component's exports seen as this kind's world; fails when the
    /// interface's functions are not what the host expects.
    fn pre(instance: &InstancePre<PluginState>) -> wasmtime::Result<Self::Pre>;

    /// Reads what the kind lists, in one fresh instance, and validates it
    /// (dropping what is invalid with a line in the plugin's log).
    fn list(
        inv: &Invocation<'_>,
        pre: &Self::Pre,
    ) -> impl Future<Output = Result<Self::Listed, LoadError>> + Send;

    /// Where a loaded plugin keeps this kind.
    fn slot(slots: &Slots) -> Option<&Slot<Self>>;

    /// The same, to fill at load.
    fn slot_mut(slots: &mut Slots) -> &mut Option<Slot<Self>>;
}

/// What a loaded plugin keeps for one kind it provides: what it listed, and
/// what runs its calls, which a plugin loaded from its remembered listing
/// prepares at its first use ([`crate::loaded::LoadedInner::pre`]).
pub(crate) struct Slot<K: Kind> {
    pub(crate) listed: K::Listed,
    pub(crate) pre: OnceLock<K::Pre>,
}

impl<K: Kind> Slot<K> {
    /// A slot ready to run.
    pub(crate) fn ready(pre: K::Pre, listed: K::Listed) -> Self {
        Self {
            listed,
            pre: OnceLock::from(pre),
        }
    }

    /// A slot whose code is prepared at its first use.
    pub(crate) fn deferred(listed: K::Listed) -> Self {
        Self {
            listed,
            pre: OnceLock::new(),
        }
    }
}

/// One slot per kind; `None` where the plugin does not provide it.
#[derive(Default)]
pub(crate) struct Slots {
    pub(crate) tools: Option<Slot<tools::ToolsKind>>,
    pub(crate) memory: Option<Slot<memory::MemoryKind>>,
    pub(crate) commands: Option<Slot<commands::CommandsKind>>,
    pub(crate) skin: Option<Slot<skins::SkinKind>>,
    pub(crate) platform: Option<Slot<platform::PlatformKind>>,
    pub(crate) hooks: Option<Slot<hooks::HooksKind>>,
    pub(crate) chat: Option<Slot<chat::ChatAdapterKind>>,
}

impl Slots {
    /// Whether the slot of `kind` is filled.
    pub(crate) fn has(&self, kind: PluginKind) -> bool {
        match kind {
            PluginKind::Tools => self.tools.is_some(),
            PluginKind::Memory => self.memory.is_some(),
            PluginKind::Commands => self.commands.is_some(),
            PluginKind::Skin => self.skin.is_some(),
            PluginKind::Platform => self.platform.is_some(),
            PluginKind::Hooks => self.hooks.is_some(),
            PluginKind::Chat => self.chat.is_some(),
        }
    }
}

/// The plugins among `plugins` that provide `K`, in order, placed in `cwd`
/// (returned canonicalised): the one way every set picks its plugins.
pub(crate) fn place<K: Kind>(
    plugins: Vec<LoadedPlugin>,
    cwd: &Path,
) -> Result<(PathBuf, Vec<Placed>), HostError> {
    let cwd = canonical_cwd(cwd)?;
    let placed = plugins
        .into_iter()
        .filter(|plugin| plugin.inner.slot::<K>().is_some())
        .map(|plugin| Placed::new(plugin, &cwd))
        .collect();
    Ok((cwd, placed))
}
