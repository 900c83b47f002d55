//! `$TALARIA_HOME/plugins.lock`: the exact version, origin and checksum of
//! every plugin installed through the registry client, so `install --locked`
//! reproduces the same bytes on another machine or profile.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::RegistryError;

const LOCK_VERSION: u32 = 1;
const HEADER: &str =
    "# Written by `talaria plugin`; `talaria plugin install --locked` reproduces it.\n";

/// One locked plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LockedPlugin {
    /// Plugin name.
    pub name: String,
    /// Exact version.
    pub version: semver::Version,
    /// What the user asked for (`*` when nothing), kept by `update`.
    pub requirement: semver::VersionReq,
    /// The index it came from, or `path` for a local package.
    pub source: String,
    /// Where the archive was fetched from (index-relative or absolute URL, or a path).
    pub url: String,
    /// SHA-256 of the archive (or, for a directory, of its packed form).
    pub sha256: String,
    /// Archive size in bytes.
    pub size: u64,
}

/// The source of a plugin installed from a local file or directory.
pub const PATH_SOURCE: &str = "path";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LockFileData {
    version: u32,
    #[serde(default, rename = "plugin")]
    plugins: Vec<LockedPlugin>,
}

/// The lockfile of one profile.
#[derive(Debug)]
pub struct Lockfile {
    path: PathBuf,
    plugins: Vec<LockedPlugin>,
}

impl Lockfile {
    /// Reads `path`; a missing file locks nothing.
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        let plugins = match std::fs::read_to_string(path) {
            Ok(text) => {
                let data: LockFileData =
                    toml::from_str(&text).map_err(|e| RegistryError::Format {
                        origin: path.display().to_string(),
                        message: e.message().to_owned(),
                    })?;
                if data.version != LOCK_VERSION {
                    return Err(RegistryError::Format {
                        origin: path.display().to_string(),
                        message: format!(
                            "lockfile version {} is not supported (expected {LOCK_VERSION})",
                            data.version
                        ),
                    });
                }
                data.plugins
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(RegistryError::io(path)(source)),
        };
        Ok(Self {
            path: path.to_path_buf(),
            plugins,
        })
    }

    /// Every locked plugin, sorted by name.
    pub fn plugins(&self) -> &[LockedPlugin] {
        &self.plugins
    }

    /// The entry for `name`.
    pub fn get(&self, name: &str) -> Option<&LockedPlugin> {
        self.plugins.iter().find(|p| p.name == name)
    }

    /// Records (or replaces) `plugin`.
    pub fn set(&mut self, plugin: LockedPlugin) {
        self.plugins.retain(|p| p.name != plugin.name);
        self.plugins.push(plugin);
        self.plugins.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// Forgets `name`.
    pub fn remove(&mut self, name: &str) {
        self.plugins.retain(|p| p.name != name);
    }

    /// Writes the file atomically.
    pub fn save(&self) -> Result<(), RegistryError> {
        let text = toml::to_string(&LockFileData {
            version: LOCK_VERSION,
            plugins: self.plugins.clone(),
        })
        .map_err(|e| RegistryError::Settings(e.to_string()))?;
        crate::fsutil::write_atomic_private(&self.path, format!("{HEADER}{text}").as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lockfile_round_trips_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plugins.lock");
        let mut lock = Lockfile::load(&path).unwrap();
        assert!(lock.plugins().is_empty());
        for name in ["zeta", "alpha"] {
            lock.set(LockedPlugin {
                name: name.into(),
                version: semver::Version::new(1, 0, 0),
                requirement: semver::VersionReq::STAR,
                source: "main".into(),
                url: format!("packages/{name}.tar.gz"),
                sha256: "a".repeat(64),
                size: 3,
            });
        }
        lock.save().unwrap();
        // It lives in the profile home: private to its user, whatever the umask.
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let again = Lockfile::load(&path).unwrap();
        let names: Vec<&str> = again.plugins().iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["alpha", "zeta"]);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .starts_with("# Written by")
        );
        std::fs::write(&path, "version = 9\n").unwrap();
        assert!(
            Lockfile::load(&path)
                .unwrap_err()
                .to_string()
                .contains("version 9")
        );
    }
}
