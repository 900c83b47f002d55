//! Installing packages into a profile's plugin directory.
//!
//! An install unpacks into a staging directory next to the target (same file
//! system), checks the manifest against what the index promised, and only then
//! swaps directories under the install lock. Any failure before the swap
//! leaves the installed version untouched; the swap itself is two renames,
//! undone if the second fails.

use std::path::{Path, PathBuf};

use talaria_plugin_manifest::{HOST_API, MANIFEST_FILE, Manifest, compatible};

use crate::archive::{ArchiveLimits, unpack};
use crate::error::RegistryError;
use crate::fsutil::InstallLock;
use crate::lockfile::{LockedPlugin, Lockfile};

/// Where a profile keeps installed plugins and their records.
#[derive(Debug, Clone)]
pub struct Layout {
    /// `$TALARIA_HOME/plugins`: one directory per plugin.
    pub plugins_dir: PathBuf,
    /// `$TALARIA_HOME/plugins.lock`.
    pub lockfile: PathBuf,
}

/// Staging directories live here, inside the plugin dir (so renames are
/// atomic) but where plugin discovery does not look.
const STAGING_DIR: &str = ".staging";
const LOCK_FILE: &str = ".install.lock";

impl Layout {
    /// The layout under a profile's plugin directory and lockfile.
    pub fn new(plugins_dir: PathBuf, lockfile: PathBuf) -> Self {
        Self {
            plugins_dir,
            lockfile,
        }
    }

    /// Takes the install lock (blocks while another install commits).
    pub fn lock(&self) -> Result<InstallLock, RegistryError> {
        InstallLock::acquire(&self.plugins_dir.join(LOCK_FILE))
    }

    /// The installed package directory of `name`.
    pub fn package_dir(&self, name: &str) -> PathBuf {
        self.plugins_dir.join(name)
    }

    /// The manifest of the installed `name`, if any.
    pub fn installed(&self, name: &str) -> Option<Manifest> {
        Manifest::load(&self.package_dir(name).join(MANIFEST_FILE)).ok()
    }

    /// Every installed package's manifest, by name, with the ones that could not be read.
    pub fn installed_all(&self) -> (Vec<Manifest>, Vec<String>) {
        let mut manifests = Vec::new();
        let mut problems = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.plugins_dir) else {
            return (manifests, problems);
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join(MANIFEST_FILE).is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            match Manifest::load(&dir.join(MANIFEST_FILE)) {
                Ok(manifest) => manifests.push(manifest),
                Err(error) => problems.push(error.to_string()),
            }
        }
        (manifests, problems)
    }

    fn staging(&self, name: &str) -> Result<PathBuf, RegistryError> {
        let root = self.plugins_dir.join(STAGING_DIR);
        std::fs::create_dir_all(&root).map_err(RegistryError::io(&root))?;
        let mut suffix = [0u8; 6];
        getrandom::fill(&mut suffix).map_err(|e| {
            RegistryError::Package(format!("no randomness for a staging name: {e}"))
        })?;
        let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
        let dir = root.join(format!("{name}-{suffix}"));
        std::fs::create_dir(&dir).map_err(RegistryError::io(&dir))?;
        Ok(dir)
    }

    /// Removes `name`'s package directory and lockfile entry (under `lock`).
    pub fn remove(&self, name: &str, _lock: &InstallLock) -> Result<(), RegistryError> {
        let dir = self.package_dir(name);
        if !dir.join(MANIFEST_FILE).is_file() {
            return Err(RegistryError::Settings(format!(
                "{name} is not installed in {}",
                self.plugins_dir.display()
            )));
        }
        // Rename first so a half-deleted package is never visible as installed.
        let trash = self.staging(&format!("{name}-removed"))?;
        let moved = trash.join("package");
        std::fs::rename(&dir, &moved).map_err(RegistryError::io(&dir))?;
        let mut lockfile = Lockfile::load(&self.lockfile)?;
        lockfile.remove(name);
        lockfile.save()?;
        std::fs::remove_dir_all(&trash).map_err(RegistryError::io(&trash))
    }
}

/// What the unpacked package must be.
#[derive(Debug, Clone)]
pub struct Expected {
    /// Plugin name (`None` for a local package: whatever it is called).
    pub name: Option<String>,
    /// Exact version (`None` for local packages).
    pub version: Option<semver::Version>,
    /// The capabilities the index listed (`None` for local packages).
    pub capabilities: Option<serde_json::Value>,
}

impl Expected {
    /// Any valid package (a local file or directory).
    pub fn any() -> Self {
        Self {
            name: None,
            version: None,
            capabilities: None,
        }
    }
}

/// A package unpacked and checked, not yet installed. Dropping it discards
/// the staging directory.
#[derive(Debug)]
pub struct Prepared {
    /// The package's manifest (its path points into staging).
    pub manifest: Manifest,
    /// What the lockfile will record.
    pub locked: LockedPlugin,
    staging: Staging,
    layout: Layout,
}

/// A staging directory, removed when dropped (best effort: a leftover one is
/// invisible to discovery).
#[derive(Debug)]
struct Staging(PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where an archive came from, for the lockfile (name and version come from
/// the package's own manifest).
#[derive(Debug, Clone)]
pub struct Provenance {
    /// What the user asked for.
    pub requirement: semver::VersionReq,
    /// The index name, or `path`.
    pub source: String,
    /// Where it was fetched from.
    pub url: String,
    /// SHA-256 of the archive, lowercase hex.
    pub sha256: String,
    /// Archive size in bytes.
    pub size: u64,
}

impl Prepared {
    /// Unpacks `archive` (already checked against its size and checksum) and
    /// checks the package inside against `expected`.
    pub fn from_archive(
        layout: &Layout,
        archive: &[u8],
        expected: &Expected,
        provenance: Provenance,
        limits: ArchiveLimits,
    ) -> Result<Self, RegistryError> {
        let staging = Staging(layout.staging(expected.name.as_deref().unwrap_or("local"))?);
        let package = staging.0.join("package");
        std::fs::create_dir(&package).map_err(RegistryError::io(&package))?;
        unpack(archive, &package, limits)?;
        let manifest = check_package(&package, expected)?;
        // Packing and publishing accept any API; installing needs this host's.
        if !compatible(&manifest.api, &HOST_API) {
            return Err(RegistryError::Package(format!(
                "the package targets plugin API {}, this Talaria implements {HOST_API}",
                manifest.api
            )));
        }
        let locked = LockedPlugin {
            name: manifest.name.clone(),
            version: manifest.version.clone(),
            requirement: provenance.requirement,
            source: provenance.source,
            url: provenance.url,
            sha256: provenance.sha256,
            size: provenance.size,
        };
        Ok(Self {
            manifest,
            locked,
            staging,
            layout: layout.clone(),
        })
    }

    /// The staged package directory.
    pub fn package_dir(&self) -> PathBuf {
        self.staging.0.join("package")
    }

    /// Installs the package in place of any previous version and records it
    /// in the lockfile. Needs the install lock.
    pub fn commit(self, _lock: &InstallLock) -> Result<(), RegistryError> {
        let target = self.layout.package_dir(&self.manifest.name);
        let staged = self.package_dir();
        let previous = self.staging.0.join("previous");
        let had_previous = target.exists();
        if had_previous {
            std::fs::rename(&target, &previous).map_err(RegistryError::io(&target))?;
        }
        if let Err(source) = std::fs::rename(&staged, &target) {
            if had_previous {
                // Put the old version back; if even that fails, say where it is.
                if let Err(restore) = std::fs::rename(&previous, &target) {
                    return Err(RegistryError::Package(format!(
                        "installing {} failed ({source}) and the previous version could not be \
                         restored ({restore}); it is in {}",
                        target.display(),
                        previous.display()
                    )));
                }
            }
            return Err(RegistryError::Io {
                path: target,
                source,
            });
        }
        let mut lockfile = Lockfile::load(&self.layout.lockfile)?;
        lockfile.set(self.locked.clone());
        lockfile.save()
        // The staging dir, with the previous version in it, goes when `self` drops.
    }
}

/// Reads and checks the unpacked package's manifest.
pub(crate) fn check_package(
    package: &Path,
    expected: &Expected,
) -> Result<Manifest, RegistryError> {
    let manifest_path = package.join(MANIFEST_FILE);
    if !manifest_path.is_file() {
        return Err(RegistryError::Package(format!(
            "the archive has no {MANIFEST_FILE} at its root"
        )));
    }
    let manifest =
        Manifest::load(&manifest_path).map_err(|e| RegistryError::Package(e.to_string()))?;
    if let Some(name) = &expected.name
        && &manifest.name != name
    {
        return Err(RegistryError::Package(format!(
            "the package is '{}', expected '{name}'",
            manifest.name
        )));
    }
    if let Some(version) = &expected.version
        && &manifest.version != version
    {
        return Err(RegistryError::Package(format!(
            "the package is version {}, the index lists {version}",
            manifest.version
        )));
    }
    if let Some(listed) = &expected.capabilities {
        let actual = capabilities_json(&manifest);
        if &actual != listed {
            return Err(RegistryError::Package(format!(
                "the package requests capabilities {actual} but the index lists {listed}"
            )));
        }
    }
    let wasm = package.join(&manifest.wasm);
    if !wasm.is_file() {
        return Err(RegistryError::Package(format!(
            "the manifest names {} but the package has no such file",
            manifest.wasm.display()
        )));
    }
    Ok(manifest)
}

/// The `[capabilities]` of a manifest as the index lists them.
pub fn capabilities_json(manifest: &Manifest) -> serde_json::Value {
    serde_json::to_value(&manifest.capabilities).unwrap_or(serde_json::Value::Null)
}
