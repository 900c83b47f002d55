//! What a component listed when it was loaded (its API version, kinds, tools, hook
//! subscriptions, commands, skins and platform names), remembered in the compile cache so that
//! a later session can offer a plugin's tools without reading any of its code: the component
//! is read, verified and prepared at its first use instead.
//!
//! A listing is named by everything that could change what the component lists: the host's
//! listing format, the engine, the component's digest, the plugin's name, its settings and its
//! effective capabilities. It is sealed with the profile's cache key like compiled code: a
//! planted listing could claim a tool is read-only, or say anything to the model.

use serde::{Deserialize, Serialize};
use talaria_plugin_manifest::{Capabilities, Manifest, PluginKind};

use crate::kinds::commands::PluginCommandSpec;
use crate::kinds::hooks::HookSubscription;
use crate::kinds::skins::PluginSkin;
use crate::kinds::{Slot, Slots};
use crate::loaded::ToolInfo;

/// Bumped whenever what a kind lists, or how it is validated, changes.
const FORMAT: u32 = 1;

/// One component's listing.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Listing {
    api: String,
    kinds: Vec<PluginKind>,
    tools: Option<Vec<ToolInfo>>,
    hooks: Option<Vec<HookSubscription>>,
    commands: Option<Vec<PluginCommandSpec>>,
    skins: Option<Vec<PluginSkin>>,
    platform: Option<String>,
    chat: Option<String>,
    memory: bool,
}

/// The record name of the listing of the component whose SHA-256 is `digest`, loaded as
/// `manifest` (with the user's settings) under `caps`; none when the host cannot name its
/// compiled code (a runtime-only host: the prebuilt code is looked up each time).
pub(crate) fn record_name(
    engine_hash: Option<&str>,
    digest: &str,
    manifest: &Manifest,
    caps: &Capabilities,
) -> Option<String> {
    let engine_hash = engine_hash?;
    let named = serde_json::to_vec(&(
        FORMAT,
        env!("CARGO_PKG_VERSION"),
        engine_hash,
        digest,
        &manifest.name,
        manifest.api.to_string(),
        &manifest.provides,
        &manifest.config,
        caps,
    ))
    .ok()?;
    Some(blake3::hash(&named).to_hex().to_string())
}

impl Listing {
    /// What `slots` hold, as loaded.
    pub(crate) fn of(api: &semver::Version, kinds: &[PluginKind], slots: &Slots) -> Self {
        Self {
            api: api.to_string(),
            kinds: kinds.to_vec(),
            tools: slots.tools.as_ref().map(|slot| slot.listed.clone()),
            hooks: slots.hooks.as_ref().map(|slot| slot.listed.clone()),
            commands: slots.commands.as_ref().map(|slot| slot.listed.clone()),
            skins: slots.skin.as_ref().map(|slot| slot.listed.clone()),
            platform: slots.platform.as_ref().map(|slot| slot.listed.clone()),
            chat: slots.chat.as_ref().map(|slot| slot.listed.clone()),
            memory: slots.memory.is_some(),
        }
    }

    /// The API version, kinds and slots it describes, with nothing prepared; `None` when it
    /// does not fit (a kind without its listing, or an unparsable version).
    pub(crate) fn into_deferred(self) -> Option<(semver::Version, Vec<PluginKind>, Slots)> {
        let api = semver::Version::parse(&self.api).ok()?;
        let slots = Slots {
            tools: self.tools.map(Slot::deferred),
            hooks: self.hooks.map(Slot::deferred),
            commands: self.commands.map(Slot::deferred),
            skin: self.skins.map(Slot::deferred),
            platform: self.platform.map(Slot::deferred),
            chat: self.chat.map(Slot::deferred),
            memory: self.memory.then(|| Slot::deferred(())),
        };
        self.kinds
            .iter()
            .all(|&kind| slots.has(kind))
            .then_some((api, self.kinds, slots))
    }
}
