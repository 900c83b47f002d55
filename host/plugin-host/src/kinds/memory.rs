//! Memory providers: the `memory-plugin` world, and since 0.1.2 the
//! `memory-lifecycle` interface beside it. A component is checked and
//! instantiated once at load; [`PluginMemoryProviders`] holds the memory
//! plugins placed in a session's working directory, and a [`MemorySession`]
//! is one provider held open for one session in a long-lived instance.

use std::path::{Path, PathBuf};
use std::time::Duration;

use talaria_kernel::{Message, Role};
use talaria_plugin_manifest::PluginKind;
use wasmtime::Store;
use wasmtime::component::InstancePre;

use super::placed::{Placed, names};
use super::{Kind, Slot, Slots};
use crate::bindings::memory_lifecycle_world::MemoryLifecyclePluginIndices;
use crate::bindings::memory_lifecycle_world::exports::talaria::plugin::memory_lifecycle as wit;
use crate::bindings::memory_world::{MemoryPlugin, MemoryPluginIndices, MemoryPluginPre};
use crate::bindings::talaria::plugin::types::{
    Message as WitMessage, Role as WitRole, SessionInfo,
};
use crate::error::{CallError, HostError, LoadError};
use crate::invoke::{CallFor, Invocation, classify, once_at_load, prepare, race};
use crate::loaded::LoadedPlugin;
use crate::resident::{Resident, Unusable};
use crate::state::PluginState;

/// What runs a memory provider: the `memory-provider` exports, and the
/// `memory-lifecycle` ones when the component has them.
pub(crate) struct MemoryPre {
    provider: MemoryPluginPre<PluginState>,
    lifecycle: Option<MemoryLifecyclePluginIndices>,
}

/// The `memory` kind. It lists nothing; loading it instantiates the
/// component once, so one that cannot start fails at load like the others.
pub(crate) struct MemoryKind;

impl Kind for MemoryKind {
    const KIND: PluginKind = PluginKind::Memory;
    type Pre = MemoryPre;
    type Listed = ();

    fn pre(instance: &InstancePre<PluginState>) -> wasmtime::Result<Self::Pre> {
        Ok(MemoryPre {
            provider: MemoryPluginPre::new(instance.clone())?,
            // A 0.1.0/0.1.1 component has no lifecycle: it is served without.
            lifecycle: MemoryLifecyclePluginIndices::new(instance).ok(),
        })
    }

    async fn list(inv: &Invocation<'_>, pre: &Self::Pre) -> Result<(), LoadError> {
        once_at_load(inv, "instantiate", async |store| {
            pre.provider.instantiate_async(store).await.map(drop)
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

    /// Opens provider `name` for the session `scope` describes.
    pub async fn open(
        &self,
        name: &str,
        scope: &MemoryScope,
    ) -> Result<MemorySession, MemoryError> {
        let entry = self
            .entries
            .iter()
            .find(|e| e.plugin.name() == name)
            .ok_or_else(|| MemoryError::Unknown {
                plugin: name.to_owned(),
                available: self.names().join(", "),
            })?;
        MemorySession::open(entry, scope).await
    }
}

/// What kind of run a session is (the WIT `session-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemorySessionKind {
    /// A user's own conversation.
    Primary,
    /// A delegated task.
    SubAgent,
    /// A scheduled job's run.
    Cron,
    /// A run that only saves memories.
    Flush,
}

/// Who and where a session is, for a provider's `initialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryScope {
    /// The session id.
    pub session_id: String,
    /// What kind of run it is.
    pub kind: MemorySessionKind,
    /// The surface or chat platform.
    pub platform: String,
    /// The profile's name.
    pub profile: String,
    /// The person talking, where the platform names one.
    pub user_id: Option<String>,
    /// The session that delegated this one.
    pub parent_session: Option<String>,
    /// The model answering.
    pub model: String,
}

/// What a provider asked of the host at `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProviderOptions {
    /// Learn in sub-agent and cron sessions too.
    pub write_in_secondary: bool,
}

/// Why a memory provider gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// No memory plugin of that name is loaded.
    #[error("no memory provider named {plugin} is loaded (loaded: {available})")]
    Unknown {
        /// The name asked for.
        plugin: String,
        /// The memory plugins loaded, comma-separated.
        available: String,
    },
    /// Its working-directory grants could not be set up.
    #[error("plugin {plugin}: {message}")]
    Sandbox {
        /// The plugin name.
        plugin: String,
        /// What went wrong.
        message: String,
    },
    /// The provider answered with an error.
    #[error("plugin {plugin}: {call}: {message}")]
    Provider {
        /// The plugin name.
        plugin: String,
        /// The call (`initialize`, `prefetch`…).
        call: &'static str,
        /// The provider's message.
        message: String,
    },
    /// The call did not complete (trap, time or memory limit): the instance
    /// is dead.
    #[error(transparent)]
    Call(#[from] CallError),
    /// An earlier call killed the instance, or it was shut down.
    #[error("plugin {plugin}: the memory provider is gone: {reason}")]
    Gone {
        /// The plugin name.
        plugin: String,
        /// What ended it.
        reason: String,
    },
}

impl MemoryError {
    /// Whether the instance can take no more calls.
    pub fn is_fatal(&self) -> bool {
        !matches!(self, Self::Provider { .. })
    }
}

/// One memory provider held open for one session: a long-lived instance,
/// called one call at a time, each within the plugin's time limit.
pub struct MemorySession {
    name: String,
    resident: Resident,
    provider: MemoryPlugin,
    lifecycle: Option<wit::Guest>,
    info: SessionInfo,
    options: ProviderOptions,
}

impl std::fmt::Debug for MemorySession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemorySession")
            .field("plugin", &self.name)
            .field("lifecycle", &self.lifecycle.is_some())
            .field("usable", &self.resident.is_usable())
            .finish_non_exhaustive()
    }
}

impl MemorySession {
    async fn open(entry: &Placed, scope: &MemoryScope) -> Result<Self, MemoryError> {
        let plugin = &entry.plugin;
        let name = plugin.name().to_owned();
        let (_, pre) = plugin
            .inner
            .pre::<MemoryKind>()
            .await
            .map_err(|error| error.into_call_error(&name))?
            .ok_or_else(|| MemoryError::Unknown {
                plugin: name.clone(),
                available: String::new(),
            })?;
        let sandbox = entry
            .sandbox
            .as_ref()
            .map_err(|message| MemoryError::Sandbox {
                plugin: name.clone(),
                message: message.clone(),
            })?;
        let inv = plugin.inner.invocation();
        let shared = inv.shared.clone();
        let call_for = CallFor {
            session_id: &scope.session_id,
            tool: "initialize",
        };
        let mut prepared = prepare(&inv, sandbox, call_for)?;
        let store = &mut prepared.store;
        let wit_scope = scope.to_wit();
        let opening = async {
            let instance = pre
                .provider
                .instance_pre()
                .instantiate_async(&mut *store)
                .await?;
            let provider = MemoryPluginIndices::new(pre.provider.instance_pre())?
                .load(&mut *store, &instance)?;
            let (lifecycle, options) = match &pre.lifecycle {
                Some(indices) => {
                    let world = indices.load(&mut *store, &instance)?;
                    let guest = world.talaria_plugin_memory_lifecycle().clone();
                    let options = guest.call_initialize(&mut *store, &wit_scope).await?;
                    (Some(guest), options)
                }
                None => (
                    None,
                    Ok(wit::ProviderOptions {
                        write_in_secondary: false,
                    }),
                ),
            };
            Ok((provider, lifecycle, options))
        };
        let raced = race(opening, shared.timeout(), None).await;
        let (provider, lifecycle, options) = classify(raced, &prepared, &shared, "initialize")?;
        let options = options.map_err(|message| MemoryError::Provider {
            plugin: name.clone(),
            call: "initialize",
            message,
        })?;
        Ok(Self {
            info: SessionInfo {
                session_id: scope.session_id.clone(),
                surface: scope.platform.clone(),
                model: scope.model.clone(),
            },
            name,
            resident: Resident::new(shared, prepared),
            provider,
            lifecycle,
            options: ProviderOptions {
                write_in_secondary: options.write_in_secondary,
            },
        })
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the provider asked for at `initialize`.
    pub fn options(&self) -> ProviderOptions {
        self.options
    }

    /// Whether the component has the 0.1.2 lifecycle (else only `prefetch`,
    /// `sync-turn` and `shutdown` are called; the rest answer nothing).
    pub fn has_lifecycle(&self) -> bool {
        self.lifecycle.is_some()
    }

    /// Whether it can take calls.
    pub fn is_usable(&self) -> bool {
        self.resident.is_usable()
    }

    /// The provider's block for the system prompt.
    pub async fn system_prompt_block(&mut self) -> Result<Option<String>, MemoryError> {
        let Some(guest) = self.lifecycle.clone() else {
            return Ok(None);
        };
        self.call("system-prompt-block", async |store| {
            guest.call_system_prompt_block(store).await
        })
        .await
    }

    /// What to recall for the turn whose user message is `query`.
    pub async fn prefetch(&mut self, query: &str) -> Result<String, MemoryError> {
        let info = self.info.clone();
        let provider = self.provider.talaria_plugin_memory_provider().clone();
        let answer = self
            .call("prefetch", async |store| {
                provider.call_prefetch(store, &info, query).await
            })
            .await?;
        answer.map_err(|message| self.provider_error("prefetch", message))
    }

    /// Learns from a finished turn.
    pub async fn sync_turn(&mut self, turn: &[Message]) -> Result<(), MemoryError> {
        let info = self.info.clone();
        let turn = to_wit(turn);
        let provider = self.provider.talaria_plugin_memory_provider().clone();
        let answer = self
            .call("sync-turn", async |store| {
                provider.call_sync_turn(store, &info, &turn).await
            })
            .await?;
        answer.map_err(|message| self.provider_error("sync-turn", message))
    }

    /// Prepares the next prefetch after the turn whose user message was `query`.
    pub async fn queue_prefetch(&mut self, query: &str) -> Result<(), MemoryError> {
        let Some(guest) = self.lifecycle.clone() else {
            return Ok(());
        };
        self.call("queue-prefetch", async |store| {
            guest.call_queue_prefetch(store, query).await
        })
        .await
    }

    /// What the summary of `messages` must keep.
    pub async fn on_pre_compress(
        &mut self,
        messages: &[Message],
    ) -> Result<Option<String>, MemoryError> {
        let Some(guest) = self.lifecycle.clone() else {
            return Ok(None);
        };
        let messages = to_wit(messages);
        self.call("on-pre-compress", async |store| {
            guest.call_on_pre_compress(store, &messages).await
        })
        .await
    }

    /// The built-in memory tool wrote `content` to `target`.
    pub async fn on_memory_write(
        &mut self,
        action: &str,
        target: &str,
        content: &str,
    ) -> Result<(), MemoryError> {
        let Some(guest) = self.lifecycle.clone() else {
            return Ok(());
        };
        self.call("on-memory-write", async |store| {
            guest
                .call_on_memory_write(store, action, target, content)
                .await
        })
        .await
    }

    /// A sub-agent finished `task` with `summary`.
    pub async fn on_delegation(
        &mut self,
        task: &str,
        summary: &str,
        child_session: &str,
    ) -> Result<(), MemoryError> {
        let Some(guest) = self.lifecycle.clone() else {
            return Ok(());
        };
        self.call("on-delegation", async |store| {
            guest
                .call_on_delegation(store, task, summary, child_session)
                .await
        })
        .await
    }

    /// The session ends with `messages`.
    pub async fn on_session_end(&mut self, messages: &[Message]) -> Result<(), MemoryError> {
        let Some(guest) = self.lifecycle.clone() else {
            return Ok(());
        };
        let messages = to_wit(messages);
        self.call("on-session-end", async |store| {
            guest.call_on_session_end(store, &messages).await
        })
        .await
    }

    /// The last call; the session takes no more.
    pub async fn shutdown(&mut self) -> Result<(), MemoryError> {
        let provider = self.provider.talaria_plugin_memory_provider().clone();
        let result = self
            .call("shutdown", async |store| {
                provider.call_shutdown(store).await
            })
            .await;
        self.resident.close();
        result
    }

    fn provider_error(&self, call: &'static str, message: String) -> MemoryError {
        MemoryError::Provider {
            plugin: self.name.clone(),
            call,
            message,
        }
    }

    async fn call<R>(
        &mut self,
        name: &'static str,
        call: impl AsyncFnOnce(&mut Store<PluginState>) -> wasmtime::Result<R>,
    ) -> Result<R, MemoryError> {
        let limit: Duration = self.resident.shared.timeout();
        match self.resident.call(name, limit, call).await {
            Ok(result) => Ok(result?),
            Err(Unusable::Dead(reason)) => Err(MemoryError::Gone {
                plugin: self.name.clone(),
                reason,
            }),
            Err(Unusable::Closed) => Err(MemoryError::Gone {
                plugin: self.name.clone(),
                reason: "it was shut down".into(),
            }),
        }
    }
}

impl MemoryScope {
    fn to_wit(&self) -> wit::MemoryScope {
        wit::MemoryScope {
            session_id: self.session_id.clone(),
            kind: match self.kind {
                MemorySessionKind::Primary => wit::SessionKind::Primary,
                MemorySessionKind::SubAgent => wit::SessionKind::SubAgent,
                MemorySessionKind::Cron => wit::SessionKind::Cron,
                MemorySessionKind::Flush => wit::SessionKind::Flush,
            },
            platform: self.platform.clone(),
            profile: self.profile.clone(),
            user_id: self.user_id.clone(),
            parent_session: self.parent_session.clone(),
            model: self.model.clone(),
        }
    }
}

/// Kernel messages as the WIT sees them (text only: images and reasoning
/// stay with the host).
fn to_wit(messages: &[Message]) -> Vec<WitMessage> {
    messages
        .iter()
        .map(|m| WitMessage {
            role: match m.role {
                Role::System => WitRole::System,
                Role::User => WitRole::User,
                Role::Assistant => WitRole::Assistant,
                Role::Tool => WitRole::Tool,
            },
            content: m.content.clone(),
            tool_call_id: m.tool_call_id.clone(),
            name: m.name.clone(),
        })
        .collect()
}
