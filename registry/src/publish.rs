//! What plugin authors and index maintainers run: `pack` turns a package
//! directory into its archive; `publish` adds a signed entry for an archive to
//! a directory index (which can then be served as static files).

use std::path::{Path, PathBuf};

use talaria_plugin_manifest::Manifest;

use crate::archive::{ArchiveLimits, pack as pack_dir, unpack};
use crate::error::RegistryError;
use crate::fsutil::{sha256_hex, write_atomic};
use crate::index::{
    CatalogEntry, INDEX_FILE, INDEX_FORMAT, IndexConfig, PLUGINS_DIR, PluginFile, VersionEntry,
};
use crate::install::{Expected, capabilities_json, check_package};
use crate::signing::SecretKey;

/// A packed package.
#[derive(Debug)]
pub struct Packed {
    /// The archive bytes.
    pub archive: Vec<u8>,
    /// Its manifest.
    pub manifest: Manifest,
}

impl Packed {
    /// The conventional file name, `NAME-VERSION.tar.gz`.
    pub fn file_name(&self) -> String {
        archive_name(&self.manifest)
    }

    /// Lowercase hex SHA-256 of the archive.
    pub fn sha256(&self) -> String {
        sha256_hex(&self.archive)
    }
}

fn archive_name(manifest: &Manifest) -> String {
    format!("{}-{}.tar.gz", manifest.name, manifest.version)
}

/// Packs the package directory `dir` (a `plugin.toml` and the files it
/// names), checking it is a valid package first.
pub fn pack(dir: &Path) -> Result<Packed, RegistryError> {
    let manifest = check_package(dir, &Expected::any())?;
    Ok(Packed {
        archive: pack_dir(dir)?,
        manifest,
    })
}

/// Unpacks `archive` into a temporary directory and checks the package it holds.
pub fn inspect(archive: &[u8]) -> Result<Manifest, RegistryError> {
    let temp = tempfile::tempdir().map_err(RegistryError::io(std::env::temp_dir()))?;
    unpack(archive, temp.path(), ArchiveLimits::default())?;
    check_package(temp.path(), &Expected::any())
}

/// What `publish` did.
#[derive(Debug)]
pub struct Published {
    /// The plugin.
    pub name: String,
    /// The version.
    pub version: semver::Version,
    /// Where the archive now is.
    pub archive: PathBuf,
    /// False when the same archive was already published (nothing changed).
    pub added: bool,
}

/// Adds `archive` to the directory index `index_dir`, signed with `key`.
/// A new index directory is created with `key` as its key. `url_base`, when
/// given, makes the entry's URL absolute (archives hosted elsewhere).
pub fn publish(
    archive: &[u8],
    index_dir: &Path,
    key: &SecretKey,
    url_base: Option<&str>,
) -> Result<Published, RegistryError> {
    let manifest = inspect(archive)?;
    let index_path = index_dir.join(INDEX_FILE);
    let mut config = match std::fs::read(&index_path) {
        Ok(bytes) => IndexConfig::parse(&bytes, &index_path.display().to_string())?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => IndexConfig {
            format: INDEX_FORMAT,
            name: index_dir
                .file_name()
                .map_or_else(|| "index".to_owned(), |n| n.to_string_lossy().into_owned()),
            keys: vec![key.public()],
            plugins: Vec::new(),
        },
        Err(source) => return Err(RegistryError::io(&index_path)(source)),
    };
    if !config.keys.contains(&key.public()) {
        return Err(RegistryError::Key(format!(
            "key '{}' is not one of the keys in {}; add {{\"id\": \"{}\", \"ed25519\": \"{}\"}} to its \"keys\" first",
            key.id(),
            index_path.display(),
            key.id(),
            key.public().ed25519
        )));
    }

    let plugin_path = index_dir
        .join(PLUGINS_DIR)
        .join(format!("{}.json", manifest.name));
    let mut file = match std::fs::read(&plugin_path) {
        Ok(bytes) => PluginFile::parse(&bytes, &plugin_path.display().to_string(), &manifest.name)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => PluginFile {
            name: manifest.name.clone(),
            description: String::new(),
            license: String::new(),
            homepage: None,
            versions: Vec::new(),
        },
        Err(source) => return Err(RegistryError::io(&plugin_path)(source)),
    };
    let relative = format!("packages/{}/{}", manifest.name, archive_name(&manifest));
    let stored = index_dir.join(&relative);
    let sha256 = sha256_hex(archive);
    if let Some(existing) = file.version(&manifest.version) {
        if existing.sha256 == sha256 {
            return Ok(Published {
                name: manifest.name,
                version: manifest.version,
                archive: stored,
                added: false,
            });
        }
        return Err(RegistryError::Package(format!(
            "{} {} is already published with a different archive; published versions never \
             change, publish a new version",
            manifest.name, manifest.version
        )));
    }

    let mut entry = VersionEntry {
        version: manifest.version.clone(),
        api: semver::VersionReq::parse(&format!("^{}", manifest.api))
            .map_err(|e| RegistryError::Package(format!("api {}: {e}", manifest.api)))?,
        sha256,
        size: archive.len() as u64,
        capabilities: capabilities_json(&manifest),
        url: match url_base {
            Some(base) => format!("{}/{relative}", base.trim_end_matches('/')),
            None => relative,
        },
        yanked: false,
        signature: None,
    };
    entry.signature = Some(key.sign(&manifest.name, &entry));
    let newest = file.versions.iter().all(|v| v.version < manifest.version);
    if newest {
        file.description = manifest.description.clone();
        file.license = manifest.license.clone().unwrap_or_default();
        file.homepage = manifest.homepage.clone();
    }
    file.versions.push(entry);
    file.versions.sort_by(|a, b| a.version.cmp(&b.version));

    if let Some(parent) = stored.parent() {
        std::fs::create_dir_all(parent).map_err(RegistryError::io(parent))?;
    }
    write_atomic(&stored, archive)?;
    write_atomic(&plugin_path, &to_json(&file)?)?;
    match config.plugins.iter_mut().find(|p| p.name == manifest.name) {
        Some(listed) => listed.description = file.description.clone(),
        None => config.plugins.push(CatalogEntry {
            name: manifest.name.clone(),
            description: file.description.clone(),
        }),
    }
    config.plugins.sort_by(|a, b| a.name.cmp(&b.name));
    write_atomic(&index_path, &to_json(&config)?)?;
    Ok(Published {
        name: manifest.name,
        version: manifest.version,
        archive: stored,
        added: true,
    })
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, RegistryError> {
    let mut bytes =
        serde_json::to_vec_pretty(value).map_err(|e| RegistryError::Package(e.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}
