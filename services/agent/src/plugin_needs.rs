//! Which plugins a session loads at all: only those providing something it can use. A chat
//! adapter serves the gateway's connections, never a session (the gateway and cron delivery
//! load adapters themselves); a memory provider serves only while it is the profile's
//! provider (an idle one's tools are not offered either); a skin only where a terminal shows
//! it. Tools, hooks and commands are always wanted: they cost a remembered listing, and their
//! code is read at its first use.

use talaria_plugin_host::{KindState, KindStatus, PluginKind};
use talaria_profile::ConfigFile;

use crate::plugins::FoundPlugin;

/// What a session on `surface` wants from plugins.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionNeeds<'a> {
    /// The surface's name (`cli` for the terminal, which alone shows skins).
    pub(crate) surface: &'a str,
    /// The profile's memory provider, if any.
    pub(crate) memory_provider: Option<&'a str>,
}

impl<'a> SessionNeeds<'a> {
    pub(crate) fn new(config: &'a ConfigFile, surface: &'a str) -> Self {
        Self {
            surface,
            memory_provider: config.memory.active(),
        }
    }

    /// Why the session has no use for `found`, or `None` when it loads it.
    pub(crate) fn unneeded(&self, found: &FoundPlugin) -> Option<String> {
        let name = found.manifest.name.as_str();
        let idle_memory =
            found.manifest.provides(PluginKind::Memory) && self.memory_provider != Some(name);
        let wanted = |kind: PluginKind| match kind {
            PluginKind::Tools | PluginKind::Memory => !idle_memory,
            PluginKind::Hooks | PluginKind::Commands => true,
            PluginKind::Skin => self.surface == "cli",
            PluginKind::Chat | PluginKind::Platform => false,
        };
        if found.manifest.provides.iter().any(|&kind| wanted(kind)) {
            return None;
        }
        Some(if idle_memory {
            "a memory provider that is not the profile's (`talaria memory use` chooses one)"
                .to_owned()
        } else if found.manifest.provides(PluginKind::Chat)
            || found.manifest.provides(PluginKind::Platform)
        {
            "a chat adapter: the gateway loads it for its connections".to_owned()
        } else {
            format!(
                "nothing it provides is shown on the {} surface",
                self.surface
            )
        })
    }

    /// The statuses of a plugin left out for `reason`.
    pub(crate) fn statuses(found: &FoundPlugin, reason: &str) -> Vec<KindStatus> {
        found
            .manifest
            .provides
            .iter()
            .map(|&kind| KindStatus {
                kind,
                state: KindState::NotNeeded {
                    reason: reason.to_owned(),
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::GrantSource;
    use crate::plugins::PluginSource;

    fn found(name: &str, provides: &[&str]) -> FoundPlugin {
        let kinds: Vec<String> = provides.iter().map(|k| format!("{k:?}")).collect();
        let text = format!(
            "name = \"{name}\"\nversion = \"0.1.0\"\napi = \"0.1.0\"\nprovides = [{}]\n",
            kinds.join(", ")
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plugin.toml");
        std::fs::write(&path, text).unwrap();
        std::fs::write(dir.path().join("plugin.wasm"), b"").unwrap();
        FoundPlugin {
            manifest: talaria_plugin_host::read_manifest(&path).unwrap(),
            dir: dir.path().to_path_buf(),
            source: PluginSource::Distribution,
            grant_source: GrantSource::Distribution,
        }
    }

    #[test]
    fn sessions_load_only_what_they_can_use() {
        let config = ConfigFile::default();
        let cli = SessionNeeds::new(&config, "cli");
        let api = SessionNeeds::new(&config, "api");
        assert_eq!(cli.unneeded(&found("fs", &["tools"])), None);
        assert_eq!(api.unneeded(&found("hooks", &["hooks"])), None);
        assert_eq!(api.unneeded(&found("cmds", &["commands"])), None);
        let chat = cli.unneeded(&found("telegram", &["chat"])).unwrap();
        assert!(chat.contains("the gateway loads it"), "{chat}");
        assert!(api.unneeded(&found("irc", &["chat"])).is_some());
        assert_eq!(cli.unneeded(&found("dark", &["skin"])), None);
        assert!(api.unneeded(&found("dark", &["skin"])).is_some());
        let idle = cli.unneeded(&found("mem0", &["memory", "tools"])).unwrap();
        assert!(idle.contains("not the profile's"), "{idle}");
        // A memory provider with hooks keeps them whether or not it is the provider.
        assert_eq!(
            cli.unneeded(&found("mem-hooks", &["memory", "hooks"])),
            None
        );

        let mut with_provider = ConfigFile::default();
        with_provider.memory.provider = Some("mem0".into());
        let chosen = SessionNeeds::new(&with_provider, "api");
        assert_eq!(chosen.unneeded(&found("mem0", &["memory", "tools"])), None);
    }
}
