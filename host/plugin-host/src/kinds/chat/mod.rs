//! Chat adapters: the `chat-adapter-plugin` world. At load the host asks a
//! component for its `platform()` name (in a fresh instance);
//! [`PluginChatAdapters`] holds one adapter per platform, and a
//! [`ChatConnection`] holds one account open in a long-lived instance.

use std::collections::BTreeMap;

use talaria_plugin_manifest::PluginKind;
use wasmtime::component::InstancePre;

use super::platform::checked_platform_name;
use super::{Kind, Slot, Slots};
use crate::bindings::chat_identity_world::ChatAdapterIdentityPluginIndices;
use crate::bindings::chat_world::ChatAdapterPluginIndices;
use crate::error::LoadError;
use crate::invoke::{Invocation, once_at_load};
use crate::loaded::LoadedPlugin;
use crate::log::{LogLevel, LogSource};
use crate::state::PluginState;

pub(crate) mod connection;
pub(crate) mod types;

pub use connection::{ChatConnection, ChatError, NEXT_EVENTS_MARGIN};

/// What runs a chat adapter: the `chat-adapter` exports, and the
/// `chat-identity` ones when the component has them (0.1.3).
pub(crate) struct ChatPre {
    pub(crate) instance: InstancePre<PluginState>,
    pub(crate) adapter: ChatAdapterPluginIndices,
    pub(crate) identity: Option<ChatAdapterIdentityPluginIndices>,
}

/// The `chat` kind: the platform's name, read at load.
pub(crate) struct ChatAdapterKind;

impl Kind for ChatAdapterKind {
    const KIND: PluginKind = PluginKind::Chat;
    type Pre = ChatPre;
    type Listed = String;

    fn pre(instance: &InstancePre<PluginState>) -> wasmtime::Result<Self::Pre> {
        Ok(ChatPre {
            instance: instance.clone(),
            adapter: ChatAdapterPluginIndices::new(instance)?,
            // A 0.1.2 component does not say how it identifies senders.
            identity: ChatAdapterIdentityPluginIndices::new(instance).ok(),
        })
    }

    async fn list(inv: &Invocation<'_>, pre: &Self::Pre) -> Result<String, LoadError> {
        let asked = once_at_load(inv, "platform", async |store| {
            let instance = pre.instance.instantiate_async(&mut *store).await?;
            pre.adapter
                .load(&mut *store, &instance)?
                .talaria_plugin_chat_adapter()
                .call_platform(store)
                .await
        })
        .await;
        checked_platform_name(inv, asked)
    }

    fn slot(slots: &Slots) -> Option<&Slot<Self>> {
        slots.chat.as_ref()
    }

    fn slot_mut(slots: &mut Slots) -> &mut Option<Slot<Self>> {
        &mut slots.chat
    }
}

/// One chat adapter: the plugin and the platform it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatAdapterInfo {
    /// The plugin providing it.
    pub plugin: String,
    /// The platform, as its `platform()` reported at load.
    pub platform: String,
}

/// The chat adapters among the plugins loaded, one per platform: where a
/// gateway finds the plugin for `gateway.platforms.<name>`.
pub struct PluginChatAdapters {
    entries: Vec<LoadedPlugin>,
    clashes: Vec<String>,
}

impl std::fmt::Debug for PluginChatAdapters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginChatAdapters")
            .field("adapters", &self.adapters())
            .field("clashes", &self.clashes)
            .finish()
    }
}

impl PluginChatAdapters {
    /// The chat adapters among `plugins` (others are ignored). A platform is
    /// kept by the first plugin serving it; later ones are dropped, logged
    /// to their plugin and listed in [`clashes`](Self::clashes).
    pub fn new(plugins: &[LoadedPlugin]) -> Self {
        let mut entries: Vec<LoadedPlugin> = Vec::new();
        let mut clashes = Vec::new();
        for candidate in plugins {
            let Some(platform) = candidate.chat_platform() else {
                continue;
            };
            match entries.iter().find(|e| e.chat_platform() == Some(platform)) {
                Some(owner) => {
                    let clash = format!(
                        "chat adapter {platform} of plugin {} dropped: plugin {} already serves {platform}",
                        candidate.name(),
                        owner.name(),
                    );
                    candidate
                        .log()
                        .push(LogLevel::Warn, LogSource::Host, &clash);
                    clashes.push(clash);
                }
                None => entries.push(candidate.clone()),
            }
        }
        Self { entries, clashes }
    }

    /// Each adapter with its platform, in load order.
    pub fn adapters(&self) -> Vec<ChatAdapterInfo> {
        self.entries
            .iter()
            .map(|p| ChatAdapterInfo {
                plugin: p.name().to_owned(),
                platform: p.chat_platform().unwrap_or_default().to_owned(),
            })
            .collect()
    }

    /// The plugin serving `platform`, to open connections with.
    pub fn find(&self, platform: &str) -> Option<&LoadedPlugin> {
        self.entries
            .iter()
            .find(|p| p.chat_platform() == Some(platform))
    }

    /// Adapters dropped because an earlier plugin serves their platform.
    pub fn clashes(&self) -> &[String] {
        &self.clashes
    }

    /// Whether no plugin is a chat adapter.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// What `plugin`'s adapter says of each of `entries` (the platform's
/// `allowed_users`): the entries it refuses, each with its reason. An
/// adapter without `chat-identity` (0.1.2) refuses none. Runs in a fresh
/// instance, as at load.
/// What runs `plugin`'s adapter, its code read and prepared now if it was loaded from its
/// listing.
pub(crate) async fn adapter_pre(plugin: &LoadedPlugin) -> Result<&ChatPre, ChatError> {
    let name = plugin.name();
    match plugin.inner.pre::<ChatAdapterKind>().await {
        Ok(Some((_, pre))) => Ok(pre),
        Ok(None) => Err(ChatError::NotAnAdapter {
            plugin: name.to_owned(),
        }),
        Err(error) => Err(error.into_call_error(name).into()),
    }
}

pub async fn check_allowed_users(
    plugin: &LoadedPlugin,
    entries: &[String],
) -> Result<Vec<(String, String)>, ChatError> {
    let pre = adapter_pre(plugin).await?;
    let Some(indices) = &pre.identity else {
        return Ok(Vec::new());
    };
    let inv = Invocation {
        engine: &plugin.inner.host.engine,
        shared: &plugin.inner.shared,
    };
    let answers = once_at_load(&inv, "check-allowed-user", async |store| {
        let instance = pre.instance.instantiate_async(&mut *store).await?;
        let guest = indices.load(&mut *store, &instance)?;
        let guest = guest.talaria_plugin_chat_identity();
        let mut answers = Vec::with_capacity(entries.len());
        for entry in entries {
            answers.push(guest.call_check_allowed_user(&mut *store, entry).await?);
        }
        Ok(answers)
    })
    .await?;
    Ok(entries
        .iter()
        .zip(answers)
        .filter_map(|(entry, answer)| answer.err().map(|why| (entry.clone(), why)))
        .collect())
}

/// A platform's settings (`gateway.platforms.<name>` as JSON) as the config
/// section [`ChatConnection::open`] takes: strings as they are, other values
/// (numbers, booleans, lists, maps) JSON-encoded, nulls left out.
pub fn config_section(
    settings: &serde_json::Map<String, serde_json::Value>,
) -> BTreeMap<String, String> {
    settings
        .iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(key, value)| {
            let text = match value {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (key.clone(), text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_strings() {
        let settings = serde_json::json!({
            "host": "irc.example", "port": 6697, "tls": true,
            "channels": ["#a", "#b"], "nick": null
        });
        let section = config_section(settings.as_object().unwrap());
        assert_eq!(section["host"], "irc.example");
        assert_eq!(section["port"], "6697");
        assert_eq!(section["tls"], "true");
        assert_eq!(section["channels"], r##"["#a","#b"]"##);
        assert!(!section.contains_key("nick"));
    }
}
