//! What a handler works with and what it answers.

use std::collections::BTreeSet;
use std::path::Path;

use talaria_agent::Agent;
use talaria_kernel::EventSink;
use talaria_profile::config::ToolsConfig;
use talaria_profile::{Overrides, ProfileHome};

use crate::registry::Registry;
use crate::spec::Surfaces;

/// Everything a command handler can reach.
pub struct Context<'a> {
    /// The running agent.
    pub agent: &'a mut Agent,
    /// Changes waiting for the next session.
    pub pending: &'a mut Pending,
    /// The registry the command came from (for `/help`).
    pub registry: &'a Registry,
    /// The profile home.
    pub home: &'a ProfileHome,
    /// The working directory.
    pub cwd: &'a Path,
    /// The surface running the command.
    pub surface: Surfaces,
    /// Where progress of long commands (`/compact`) goes.
    pub events: &'a dyn EventSink,
}

/// What the surface should do after showing a reply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Effect {
    /// Nothing more.
    #[default]
    None,
    /// End the conversation and exit.
    Quit,
    /// End this session and start a fresh one (pending changes apply).
    NewSession,
    /// Clear the screen, then start a fresh session.
    ClearAndNewSession,
    /// End this session and continue the stored session with this id.
    Resume(String),
    /// Apply the pending changes now, continuing this session (`--now`).
    Reload,
    /// Send this text as the user's next message.
    Send(String),
    /// Show the skins (`None`) or switch to one (terminal only).
    Skin(Option<String>),
    /// Show or hide reasoning (`None` toggles; terminal only).
    Reasoning(Option<bool>),
    /// Attach the image at this path to the next message (terminal only).
    Attach(std::path::PathBuf),
}

/// A command's answer: text to show, then an effect.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reply {
    /// Shown to the user (may be empty).
    pub text: String,
    /// What happens next.
    pub effect: Effect,
    /// Whether the text reports a failure.
    pub is_error: bool,
}

impl Reply {
    /// Text only.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// A failure message.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
            ..Self::default()
        }
    }

    /// An effect, with optional text.
    pub fn effect(effect: Effect, text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            effect,
            is_error: false,
        }
    }
}

/// Session-shaping changes asked for during a session. They change the
/// system prompt or the model, so they wait for the next session (the prompt
/// stays byte-stable for caching) unless the user says `--now`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending {
    /// Model for the next session.
    pub model: Option<String>,
    /// Provider (wire format) for the next session.
    pub provider: Option<String>,
    /// Toolsets to turn on.
    pub enable_toolsets: BTreeSet<String>,
    /// Toolsets to turn off.
    pub disable_toolsets: BTreeSet<String>,
}

impl Pending {
    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The changes in words, one per line.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(model) = &self.model {
            lines.push(format!("model → {model}"));
        }
        if let Some(provider) = &self.provider {
            lines.push(format!("provider → {provider}"));
        }
        for toolset in &self.enable_toolsets {
            lines.push(format!("toolset {toolset} on"));
        }
        for toolset in &self.disable_toolsets {
            lines.push(format!("toolset {toolset} off"));
        }
        lines
    }

    /// Turns `toolset` on (`true`) or off for the next session.
    pub fn set_toolset(&mut self, toolset: &str, on: bool) {
        let (add, remove) = if on {
            (&mut self.enable_toolsets, &mut self.disable_toolsets)
        } else {
            (&mut self.disable_toolsets, &mut self.enable_toolsets)
        };
        remove.remove(toolset);
        add.insert(toolset.to_owned());
    }

    /// Applies the model choice to the command-line overrides.
    pub fn apply_overrides(&self, overrides: &mut Overrides) {
        if let Some(model) = &self.model {
            overrides.model = Some(model.clone());
        }
        if let Some(provider) = &self.provider {
            overrides.provider = Some(provider.clone());
        }
    }

    /// Applies the toolset choices to the tool settings.
    pub fn apply_tools(&self, tools: &mut ToolsConfig) {
        tools.disabled.retain(|t| !self.enable_toolsets.contains(t));
        for toolset in &self.disable_toolsets {
            if !tools.disabled.contains(toolset) {
                tools.disabled.push(toolset.clone());
            }
        }
        if let Some(enabled) = &mut tools.enabled {
            enabled.retain(|t| !self.disable_toolsets.contains(t));
            for toolset in &self.enable_toolsets {
                if !enabled.contains(toolset) {
                    enabled.push(toolset.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolset_changes_override_the_config_both_ways() {
        let mut pending = Pending::default();
        pending.set_toolset("web", false);
        pending.set_toolset("file", true);
        pending.set_toolset("web", true);
        pending.set_toolset("terminal", false);
        let mut tools = ToolsConfig {
            enabled: Some(vec!["terminal".into()]),
            disabled: vec!["file".into()],
            ..ToolsConfig::default()
        };
        pending.apply_tools(&mut tools);
        assert_eq!(tools.disabled, ["terminal"]);
        assert_eq!(tools.enabled, Some(vec!["file".into(), "web".into()]));
        assert_eq!(
            pending.describe(),
            ["toolset file on", "toolset web on", "toolset terminal off"]
        );
    }
}
