//! The kinds of functionality a plugin provides, one WIT world each.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A kind of functionality a plugin provides; one WIT world each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PluginKind {
    /// `tool-plugin`: tools for the model.
    Tools,
    /// `memory-plugin`: a memory provider.
    Memory,
    /// `command-plugin`: slash commands.
    Commands,
    /// `skin-plugin`: skins as data.
    Skin,
    /// `platform-plugin`: a chat platform adapter.
    Platform,
    /// `hooks-plugin`: lifecycle hooks.
    Hooks,
    /// `chat-adapter-plugin`: a long-lived connection to a chat platform.
    Chat,
}

impl PluginKind {
    /// Every kind, in order.
    pub const ALL: [Self; 7] = [
        Self::Tools,
        Self::Memory,
        Self::Commands,
        Self::Skin,
        Self::Platform,
        Self::Hooks,
        Self::Chat,
    ];

    /// The name used in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Memory => "memory",
            Self::Commands => "commands",
            Self::Skin => "skin",
            Self::Platform => "platform",
            Self::Hooks => "hooks",
            Self::Chat => "chat",
        }
    }

    /// The WIT interface a component of this kind exports.
    pub fn interface(self) -> &'static str {
        match self {
            Self::Tools => "tool-provider",
            Self::Memory => "memory-provider",
            Self::Commands => "command-provider",
            Self::Skin => "skin-provider",
            Self::Platform => "platform-adapter",
            Self::Hooks => "hooks",
            Self::Chat => "chat-adapter",
        }
    }
}

impl fmt::Display for PluginKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
