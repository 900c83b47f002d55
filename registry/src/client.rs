//! Reading configured indexes: finding a plugin by priority, checking
//! signatures against the pinned keys, and downloading archives whose size
//! and checksum match their entry.

use crate::error::RegistryError;
use crate::fsutil::sha256_hex;
use crate::index::{CatalogEntry, INDEX_FILE, IndexConfig, PLUGINS_DIR, PluginFile, VersionEntry};
use crate::settings::IndexSettings;
use crate::signing;
use crate::source::{Location, MAX_INDEX_FILE_BYTES};

/// One configured index, ready to read.
#[derive(Debug, Clone)]
pub struct Index {
    /// What the profile says about it.
    pub settings: IndexSettings,
    location: Location,
}

impl Index {
    /// Opens the index `settings` describes (nothing is fetched yet).
    pub fn open(settings: IndexSettings) -> Result<Self, RegistryError> {
        let location = Location::parse(&settings.url)?;
        Ok(Self { settings, location })
    }

    /// The index's name in this profile.
    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// Fetches `index.json`.
    pub async fn config(&self) -> Result<IndexConfig, RegistryError> {
        let bytes = self
            .location
            .fetch(INDEX_FILE, MAX_INDEX_FILE_BYTES)
            .await?;
        IndexConfig::parse(&bytes, &self.location.describe(INDEX_FILE))
    }

    /// Fetches `plugins/<name>.json`; `None` when the index has no such plugin.
    pub async fn plugin(&self, name: &str) -> Result<Option<PluginFile>, RegistryError> {
        let relative = format!("{PLUGINS_DIR}/{name}.json");
        match self.location.fetch(&relative, MAX_INDEX_FILE_BYTES).await {
            Ok(bytes) => {
                PluginFile::parse(&bytes, &self.location.describe(&relative), name).map(Some)
            }
            Err(RegistryError::Missing { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Checks that `entry` may be trusted: signed by a pinned key, or
    /// unsigned from an index the user allowed to be unsigned.
    pub fn verify(&self, plugin: &str, entry: &VersionEntry) -> Result<(), RegistryError> {
        let failed = |message: String| RegistryError::Signature {
            plugin: plugin.to_owned(),
            version: entry.version.to_string(),
            message,
        };
        if entry.signature.is_none() && self.settings.allow_unsigned {
            return Ok(());
        }
        if self.settings.keys.is_empty() {
            return Err(failed(format!(
                "index '{}' has no trusted key; add it again with --key, or with --allow-unsigned \
                 if you accept unsigned plugins from it",
                self.name()
            )));
        }
        signing::verify(plugin, entry, &self.settings.keys)
            .map_err(|message| failed(format!("{message} (index '{}')", self.name())))
    }

    /// Downloads the archive of `entry` and checks its size and SHA-256
    /// against the entry before anything else looks at it.
    pub async fn download(
        &self,
        plugin: &str,
        entry: &VersionEntry,
    ) -> Result<Vec<u8>, RegistryError> {
        let mismatch = |message: String| RegistryError::Integrity {
            plugin: plugin.to_owned(),
            version: entry.version.to_string(),
            message,
        };
        let bytes = match self.location.fetch(&entry.url, entry.size).await {
            Err(RegistryError::TooLarge { .. }) => {
                return Err(mismatch(format!(
                    "the archive is larger than the {} bytes the index lists",
                    entry.size
                )));
            }
            other => other?,
        };
        check_archive(&bytes, entry.size, &entry.sha256).map_err(mismatch)?;
        Ok(bytes)
    }
}

/// Compares an archive with the size and checksum it should have.
pub fn check_archive(bytes: &[u8], size: u64, sha256: &str) -> Result<(), String> {
    if bytes.len() as u64 != size {
        return Err(format!(
            "the archive is {} bytes, the index says {size}",
            bytes.len()
        ));
    }
    let actual = sha256_hex(bytes);
    if !actual.eq_ignore_ascii_case(sha256) {
        return Err(format!(
            "the archive's SHA-256 is {actual}, the index says {sha256} (tampered or corrupted)"
        ));
    }
    Ok(())
}

/// Every configured index, highest priority first.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    indexes: Vec<Index>,
}

/// A search hit.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// The index it is in.
    pub index: String,
    /// Name and description.
    pub entry: CatalogEntry,
}

impl Registry {
    /// A registry over `indexes` (already in priority order).
    pub fn new(indexes: Vec<Index>) -> Self {
        Self { indexes }
    }

    /// The indexes, highest priority first.
    pub fn indexes(&self) -> &[Index] {
        &self.indexes
    }

    /// The first index (by priority, or only `only`) that has `name`, with its file.
    pub async fn find(
        &self,
        name: &str,
        only: Option<&str>,
    ) -> Result<(&Index, PluginFile), RegistryError> {
        let candidates: Vec<&Index> = match only {
            Some(wanted) => {
                let index = self
                    .indexes
                    .iter()
                    .find(|i| i.name() == wanted)
                    .ok_or_else(|| {
                        RegistryError::Settings(format!(
                            "no index named '{wanted}' (configured: {})",
                            self.names()
                        ))
                    })?;
                vec![index]
            }
            None => self.indexes.iter().collect(),
        };
        if candidates.is_empty() {
            return Err(RegistryError::Settings(
                "no plugin index is configured; add one with `talaria plugin index add NAME URL`"
                    .to_owned(),
            ));
        }
        for index in &candidates {
            if let Some(file) = index.plugin(name).await? {
                return Ok((index, file));
            }
        }
        Err(RegistryError::NotFound {
            name: name.to_owned(),
            searched: format!(
                "the configured indexes ({})",
                candidates
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }

    /// Catalogue entries whose name or description contains `term`
    /// (case-insensitive), with the indexes that could not be read.
    pub async fn search(&self, term: &str) -> (Vec<SearchHit>, Vec<RegistryError>) {
        let term = term.to_lowercase();
        let mut hits = Vec::new();
        let mut errors = Vec::new();
        for index in &self.indexes {
            match index.config().await {
                Ok(config) => hits.extend(
                    config
                        .plugins
                        .into_iter()
                        .filter(|p| {
                            p.name.contains(&term) || p.description.to_lowercase().contains(&term)
                        })
                        .map(|entry| SearchHit {
                            index: index.name().to_owned(),
                            entry,
                        }),
                ),
                Err(error) => errors.push(error),
            }
        }
        (hits, errors)
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.indexes.iter().map(Index::name).collect();
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    }
}
