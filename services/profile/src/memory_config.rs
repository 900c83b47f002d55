//! External memory's settings (`memory:` in config.yaml): which memory
//! provider plugin is active, how long a turn waits for its recall, and each
//! provider's own settings, handed to the plugin as its config; and whose built-in
//! `MEMORY.md`/`USER.md` the shared surfaces use (`memory.scope`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Longest `memory.prefetch_timeout_ms`: a recall never holds a turn longer.
const MAX_PREFETCH_TIMEOUT_MS: u64 = 30_000;

/// `memory:` in config.yaml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// The active external provider: a memory plugin's name. Unset: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// How long a turn waits for the provider's recall, in milliseconds;
    /// a slower recall is skipped for that turn.
    pub prefetch_timeout_ms: u64,
    /// Each provider's settings, by plugin name, over its manifest's
    /// `[config]` (`memory.providers.facts.extract: true`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub providers: BTreeMap<String, BTreeMap<String, serde_yaml_ng::Value>>,
    /// Whose built-in memory (`MEMORY.md`, `USER.md`) the sessions of shared surfaces use.
    #[serde(skip_serializing_if = "crate::config::is_default")]
    pub scope: MemoryScopes,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            provider: None,
            prefetch_timeout_ms: 1500,
            providers: BTreeMap::new(),
            scope: MemoryScopes::default(),
        }
    }
}

/// Whose built-in memory a session uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryScope {
    /// None: no memory in the prompt and no `memory` tool.
    None,
    /// Its principal's own (a chat user's, a group's, a client's), kept apart from the
    /// owner's and everyone else's.
    Own,
    /// The owner's files, shared with the owner (only when the owner wants that).
    Owner,
}

/// `memory.scope`: per shared surface. The terminal, editors, cron and batch are the
/// owner's and always use the owner's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryScopes {
    /// Chat platforms (each user, or each group, its own by default).
    pub chat: MemoryScope,
    /// `talaria serve` (none by default).
    pub api: MemoryScope,
    /// `talaria mcp serve` (none by default).
    pub mcp: MemoryScope,
    /// Webhook routes: outside payloads (none by default).
    pub webhook: MemoryScope,
}

impl Default for MemoryScopes {
    fn default() -> Self {
        Self {
            chat: MemoryScope::Own,
            api: MemoryScope::None,
            mcp: MemoryScope::None,
            webhook: MemoryScope::None,
        }
    }
}

impl MemoryConfig {
    /// The active provider's name, if one is set.
    pub fn active(&self) -> Option<&str> {
        self.provider
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
    }

    /// The settings of provider `name` as plugin config values (scalars as text).
    pub fn plugin_config(&self, name: &str) -> Option<BTreeMap<String, String>> {
        let settings = self.providers.get(name)?;
        Some(
            settings
                .iter()
                .filter_map(|(key, value)| Some((key.clone(), scalar_text(value)?)))
                .collect(),
        )
    }

    /// The first bad setting: its key and what is wrong.
    pub(crate) fn validate(&self) -> Result<(), (String, String)> {
        if !(1..=MAX_PREFETCH_TIMEOUT_MS).contains(&self.prefetch_timeout_ms) {
            return Err((
                "prefetch_timeout_ms".into(),
                format!(
                    "memory.prefetch_timeout_ms must be between 1 and {MAX_PREFETCH_TIMEOUT_MS}, not {}",
                    self.prefetch_timeout_ms
                ),
            ));
        }
        for (name, settings) in &self.providers {
            if let Some((key, _)) = settings.iter().find(|(_, v)| scalar_text(v).is_none()) {
                return Err((
                    name.clone(),
                    format!("memory.providers.{name}.{key} must be a string, number or boolean"),
                ));
            }
        }
        Ok(())
    }
}

fn scalar_text(value: &serde_yaml_ng::Value) -> Option<String> {
    match value {
        serde_yaml_ng::Value::String(s) => Some(s.clone()),
        serde_yaml_ng::Value::Bool(b) => Some(b.to_string()),
        serde_yaml_ng::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{ConfigFile, EnvLayer};

    fn parse(text: &str) -> Result<ConfigFile, String> {
        ConfigFile::parse(text, Path::new("config.yaml"), &EnvLayer::default())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_provider_and_its_settings_are_read() {
        let config = parse(
            "memory:\n  provider: facts\n  prefetch_timeout_ms: 900\n  providers:\n    facts:\n      extract: true\n      recall_limit: 3\n      note: hi\n",
        )
        .unwrap();
        assert_eq!(config.memory.active(), Some("facts"));
        assert_eq!(config.memory.prefetch_timeout_ms, 900);
        let settings = config.memory.plugin_config("facts").unwrap();
        assert_eq!(settings["extract"], "true");
        assert_eq!(settings["recall_limit"], "3");
        assert_eq!(settings["note"], "hi");
        assert_eq!(config.memory.plugin_config("mem0"), None);
        assert_eq!(parse("{}").unwrap().memory.active(), None);
        assert_eq!(
            parse("memory:\n  provider: ''\n").unwrap().memory.active(),
            None
        );
    }

    #[test]
    fn bad_settings_are_refused_with_their_place() {
        let error = parse("memory:\n  prefetch_timeout_ms: 0\n").unwrap_err();
        assert!(error.contains("between 1 and 30000, not 0"), "{error}");
        assert!(error.contains("config.yaml:2"), "{error}");
        let error = parse("memory:\n  providers:\n    facts:\n      tags: [a]\n").unwrap_err();
        assert!(
            error.contains("memory.providers.facts.tags must be a string"),
            "{error}"
        );
        let error = parse("memory:\n  provder: facts\n").unwrap_err();
        assert!(error.contains("provder"), "{error}");
    }
}
