//! Memory providers: the `memory-plugin` world. A component is checked and
//! instantiated once at load; [`PluginMemoryProviders`] holds the memory
//! plugins placed in a session's working directory. Sessions do not call
//! `prefetch` or `sync-turn` yet: the set says so in its notices.

use std::path::{Path, PathBuf};

use talaria_plugin_manifest::PluginKind;
use wasmtime::component::InstancePre;

use super::placed::{Placed, names};
use super::{Kind, Slot, Slots};
use crate::bindings::memory_world::MemoryPluginPre;
use crate::error::{HostError, LoadError};
use crate::invoke::{Invocation, once_at_load};
use crate::loaded::LoadedPlugin;
use crate::state::PluginState;

/// The `memory` kind. It lists nothing; loading it instantiates the
/// component once, so one that cannot start fails at load like the others.
pub(crate) struct MemoryKind;

impl Kind for MemoryKind {
    const KIND: PluginKind = PluginKind::Memory;
    type Pre = MemoryPluginPre<PluginState>;
    type Listed = ();

    fn pre(instance: &InstancePre<PluginState>) -> wasmtime::Result<Self::Pre> {
        MemoryPluginPre::new(instance.clone())
    }

    async fn list(inv: &Invocation<'_>, pre: &Self::Pre) -> Result<(), LoadError> {
        once_at_load(inv, "instantiate", async |store| {
            pre.instantiate_async(store).await.map(drop)
        })
        .await
        .map_err(|e| LoadError::Exports {
            plugin: inv.shared.name.clone(),
            message: format!("instantiating its memory provider failed: {e}"),
        })
    }

    fn slot(slots: &Slots) -> Option<&Slot<Self>> {
        slots.memory.as_ref()
    }

    fn slot_mut(slots: &mut Slots) -> &mut Option<Slot<Self>> {
        &mut slots.memory
    }
}

/// The memory providers among the plugins loaded, placed in one working
/// directory.
pub struct PluginMemoryProviders {
    entries: Vec<Placed>,
    cwd: PathBuf,
}

impl std::fmt::Debug for PluginMemoryProviders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginMemoryProviders")
            .field("plugins", &names(&self.entries))
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl PluginMemoryProviders {
    /// The memory plugins among `plugins` (others are ignored), in order,
    /// for sessions in `cwd`.
    pub fn new(plugins: Vec<LoadedPlugin>, cwd: &Path) -> Result<Self, HostError> {
        let (cwd, entries) = super::place::<MemoryKind>(plugins, cwd)?;
        Ok(Self { entries, cwd })
    }

    /// The plugins' names, in load order.
    pub fn names(&self) -> Vec<&str> {
        names(&self.entries)
    }

    /// The plugins themselves.
    pub fn plugins(&self) -> impl Iterator<Item = &LoadedPlugin> {
        self.entries.iter().map(|e| &e.plugin)
    }

    /// Whether no plugin provides memory.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
