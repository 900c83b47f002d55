//! Every set over the loaded plugins, one per kind, built the same way.

use std::path::Path;

use super::chat::PluginChatAdapters;
use super::commands::PluginCommands;
use super::hooks::PluginHooks;
use super::memory::PluginMemoryProviders;
use super::platform::PluginPlatformAdapters;
use super::skins::PluginSkins;
use super::tool_choice::ToolProviders;
use super::tools::PluginTools;
use crate::error::HostError;
use crate::loaded::LoadedPlugin;

/// A set over the plugins of one kind, for sessions in one working
/// directory on one surface.
pub(crate) trait KindSet: Sized {
    /// What the set holds, for "plugin {NOUN} are unavailable".
    const NOUN: &'static str;

    /// Whether `plugin` gives the set anything (a tool, a subscription…);
    /// no set is built when none does.
    fn offered_by(plugin: &LoadedPlugin) -> bool;

    /// The set over the plugins of its kind among `plugins`.
    fn build(plugins: Vec<LoadedPlugin>, at: &Placement<'_>) -> Result<Self, HostError>;

    /// What the user should know about the set (names dropped, kinds not
    /// used yet), one line each.
    fn notices(&self) -> Vec<String>;
}

impl KindSet for PluginTools {
    const NOUN: &'static str = "tools";

    fn offered_by(plugin: &LoadedPlugin) -> bool {
        !plugin.tools().is_empty()
    }

    fn build(plugins: Vec<LoadedPlugin>, at: &Placement<'_>) -> Result<Self, HostError> {
        Self::choosing(plugins, at.cwd, at.tool_providers)
    }

    /// Names left out for another plugin's, unless the user chose so.
    fn notices(&self) -> Vec<String> {
        let clashes = self.clashes().iter().filter(|c| !c.chosen);
        clashes
            .map(ToString::to_string)
            .chain(self.unmet_choices().iter().cloned())
            .collect()
    }
}

impl KindSet for PluginHooks {
    const NOUN: &'static str = "hooks";

    fn offered_by(plugin: &LoadedPlugin) -> bool {
        !plugin.hook_subscriptions().is_empty()
    }

    fn build(plugins: Vec<LoadedPlugin>, at: &Placement<'_>) -> Result<Self, HostError> {
        Self::new(plugins, at.cwd, at.surface)
    }

    fn notices(&self) -> Vec<String> {
        Vec::new()
    }
}

impl KindSet for PluginCommands {
    const NOUN: &'static str = "commands";

    fn offered_by(plugin: &LoadedPlugin) -> bool {
        !plugin.commands().is_empty()
    }

    fn build(plugins: Vec<LoadedPlugin>, at: &Placement<'_>) -> Result<Self, HostError> {
        Self::new(plugins, at.cwd, at.surface)
    }

    fn notices(&self) -> Vec<String> {
        self.clashes().iter().map(ToString::to_string).collect()
    }
}

impl KindSet for PluginSkins {
    const NOUN: &'static str = "skins";

    fn offered_by(plugin: &LoadedPlugin) -> bool {
        !plugin.skins().is_empty()
    }

    fn build(plugins: Vec<LoadedPlugin>, _at: &Placement<'_>) -> Result<Self, HostError> {
        Ok(Self::new(&plugins))
    }

    fn notices(&self) -> Vec<String> {
        self.clashes().to_vec()
    }
}

impl KindSet for PluginMemoryProviders {
    const NOUN: &'static str = "memory providers";

    fn offered_by(plugin: &LoadedPlugin) -> bool {
        plugin.serves(talaria_plugin_manifest::PluginKind::Memory)
    }

    fn build(plugins: Vec<LoadedPlugin>, at: &Placement<'_>) -> Result<Self, HostError> {
        Self::new(plugins, at.cwd)
    }

    /// The session says which provider is active, if any.
    fn notices(&self) -> Vec<String> {
        Vec::new()
    }
}

impl KindSet for PluginPlatformAdapters {
    const NOUN: &'static str = "platform adapters";

    fn offered_by(plugin: &LoadedPlugin) -> bool {
        plugin.platform().is_some()
    }

    fn build(plugins: Vec<LoadedPlugin>, at: &Placement<'_>) -> Result<Self, HostError> {
        Self::new(plugins, at.cwd)
    }

    fn notices(&self) -> Vec<String> {
        let loaded = self.adapters().into_iter().map(|a| {
            format!(
                "plugin {}: platform adapter for {} loaded, not yet used by the agent",
                a.plugin, a.platform
            )
        });
        loaded.chain(self.clashes().iter().cloned()).collect()
    }
}

impl KindSet for PluginChatAdapters {
    const NOUN: &'static str = "chat adapters";

    fn offered_by(plugin: &LoadedPlugin) -> bool {
        plugin.chat_platform().is_some()
    }

    fn build(plugins: Vec<LoadedPlugin>, _at: &Placement<'_>) -> Result<Self, HostError> {
        Ok(Self::new(&plugins))
    }

    /// Only clashes: the adapters serve `talaria gateway run`, and other
    /// surfaces leave them be without a word.
    fn notices(&self) -> Vec<String> {
        self.clashes().to_vec()
    }
}

/// The sets over the loaded plugins, one per kind (`None`: no plugin offers
/// anything of that kind, or the set could not be built, which `notices`
/// says).
#[derive(Debug, Default)]
pub struct PluginSets {
    /// The tool plugins' dispatcher.
    pub tools: Option<PluginTools>,
    /// The hooks plugins.
    pub hooks: Option<PluginHooks>,
    /// The plugins' slash commands.
    pub commands: Option<PluginCommands>,
    /// The plugins' skins.
    pub skins: Option<PluginSkins>,
    /// The memory providers (a session opens the active one).
    pub memory: Option<PluginMemoryProviders>,
    /// The platform adapters (loaded, not called by sessions yet).
    pub platforms: Option<PluginPlatformAdapters>,
    /// The chat adapters (connections are opened by a gateway).
    pub chats: Option<PluginChatAdapters>,
    /// What the user should know, one line each: names dropped because an
    /// earlier plugin has them, sets that could not be built, kinds loaded
    /// but not used yet.
    pub notices: Vec<String>,
}

impl PluginSets {
    /// Every set over `plugins` (in load order: the first plugin keeps a
    /// clashing name), for sessions in `cwd` on `surface` (`cli`,
    /// `gateway`…, passed to plugins).
    pub fn build(plugins: &[LoadedPlugin], cwd: &Path, surface: &str) -> Self {
        Self::choosing(plugins, cwd, surface, &ToolProviders::new())
    }

    /// [`Self::build`], with a tool name that several plugins define served
    /// by the plugin `tool_providers` names for it (`tools.providers`).
    pub fn choosing(
        plugins: &[LoadedPlugin],
        cwd: &Path,
        surface: &str,
        tool_providers: &ToolProviders,
    ) -> Self {
        let mut notices = Vec::new();
        let at = Placement {
            cwd,
            surface,
            tool_providers,
        };
        Self {
            hooks: build_set(plugins, &at, &mut notices),
            commands: build_set(plugins, &at, &mut notices),
            skins: build_set(plugins, &at, &mut notices),
            tools: build_set(plugins, &at, &mut notices),
            memory: build_set(plugins, &at, &mut notices),
            platforms: build_set(plugins, &at, &mut notices),
            chats: build_set(plugins, &at, &mut notices),
            notices,
        }
    }
}

/// Where the sets' calls run, and the user's choices among them.
pub(crate) struct Placement<'a> {
    cwd: &'a Path,
    surface: &'a str,
    tool_providers: &'a ToolProviders,
}

/// The set of kind `S` over `plugins`, unless none offers anything of it;
/// its notices, or why it could not be built, go to `notices`.
fn build_set<S: KindSet>(
    plugins: &[LoadedPlugin],
    at: &Placement<'_>,
    notices: &mut Vec<String>,
) -> Option<S> {
    if !plugins.iter().any(S::offered_by) {
        return None;
    }
    match S::build(plugins.to_vec(), at) {
        Ok(set) => {
            notices.extend(set.notices());
            Some(set)
        }
        Err(error) => {
            notices.push(format!("plugin {} are unavailable: {error}", S::NOUN));
            None
        }
    }
}
