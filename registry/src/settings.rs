//! The indexes a profile uses (`$TALARIA_HOME/plugin-indexes.toml`): name,
//! location, priority, the signing keys pinned when the index was added, and
//! whether unsigned entries are accepted from it.
//!
//! ```toml
//! [[index]]
//! name = "community"
//! url = "https://plugins.example/index/"
//! priority = 10
//! keys = [{ id = "main", ed25519 = "…" }]
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::RegistryError;
use crate::index::IndexKey;

/// One configured index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct IndexSettings {
    /// The user's name for it.
    pub name: String,
    /// Directory, `file://`, `http://` or `https://` location.
    pub url: String,
    /// Higher is consulted first; the first index holding a plugin is the one used.
    #[serde(default)]
    pub priority: i32,
    /// Keys trusted for this index (pinned when it was added).
    #[serde(default)]
    pub keys: Vec<IndexKey>,
    /// Accept entries without a signature (only when the user said so).
    #[serde(default)]
    pub allow_unsigned: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsFile {
    #[serde(default, rename = "index")]
    indexes: Vec<IndexSettings>,
}

/// The profile's index list.
#[derive(Debug)]
pub struct IndexList {
    path: PathBuf,
    indexes: Vec<IndexSettings>,
}

impl IndexList {
    /// Reads `path`; a missing file configures no index.
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        let indexes = match std::fs::read_to_string(path) {
            Ok(text) => {
                toml::from_str::<SettingsFile>(&text)
                    .map_err(|e| RegistryError::Format {
                        origin: path.display().to_string(),
                        message: e.message().to_owned(),
                    })?
                    .indexes
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(RegistryError::io(path)(source)),
        };
        Ok(Self {
            path: path.to_path_buf(),
            indexes,
        })
    }

    /// The indexes, highest priority first (ties in the order they were added).
    pub fn by_priority(&self) -> Vec<&IndexSettings> {
        let mut list: Vec<&IndexSettings> = self.indexes.iter().collect();
        list.sort_by_key(|index| std::cmp::Reverse(index.priority));
        list
    }

    /// The index named `name`.
    pub fn get(&self, name: &str) -> Option<&IndexSettings> {
        self.indexes.iter().find(|index| index.name == name)
    }

    /// Adds (or replaces, with `replace`) an index, then saves.
    pub fn add(&mut self, index: IndexSettings, replace: bool) -> Result<(), RegistryError> {
        let valid = !index.name.is_empty()
            && index
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(RegistryError::Settings(format!(
                "'{}' is not a valid index name: use letters, digits, '-', '_' and '.'",
                index.name
            )));
        }
        match self.indexes.iter_mut().find(|i| i.name == index.name) {
            Some(existing) if replace => *existing = index,
            Some(_) => {
                return Err(RegistryError::Settings(format!(
                    "an index named '{}' exists; remove it first or pass --replace",
                    index.name
                )));
            }
            None => self.indexes.push(index),
        }
        self.save()
    }

    /// Removes the index named `name`, then saves.
    pub fn remove(&mut self, name: &str) -> Result<(), RegistryError> {
        let before = self.indexes.len();
        self.indexes.retain(|index| index.name != name);
        if self.indexes.len() == before {
            return Err(RegistryError::Settings(format!("no index named '{name}'")));
        }
        self.save()
    }

    fn save(&self) -> Result<(), RegistryError> {
        let text = toml::to_string(&SettingsFile {
            indexes: self.indexes.clone(),
        })
        .map_err(|e| RegistryError::Settings(e.to_string()))?;
        crate::fsutil::write_atomic_private(&self.path, text.as_bytes())
    }
}
