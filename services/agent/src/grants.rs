//! The user's capability grants per plugin, stored in
//! `$TALARIA_HOME/plugin-grants.yaml`. Distribution plugins get what their
//! manifest requests until the user says otherwise; every other plugin gets
//! nothing until granted. `trust-native` (running a native plugin unsandboxed)
//! is only ever granted by name: not by default, not by `all`.
//!
//! A decision is bound to the plugin's source and name ([`GrantSource`]): the
//! distribution, the profile's plugin directory, an index (by its name and the
//! keys pinned for it) or one trusted project directory. A plugin of the same
//! name from another source gets nothing of it (a project's `terminal` does
//! not inherit the distribution's `exec`); a new build or version from the
//! same source keeps it.
//!
//! ```yaml
//! version: 2
//! sources:
//!   distribution:
//!     terminal: { exec: false }
//!   index:community keys=main:BASE64…:
//!     weather: { network: [api.weather.example:443] }
//! ```
//!
//! The first format (plugin name → grants) is migrated on load: each old entry
//! applies to the distribution's plugin of that name (so a revocation stays)
//! and to the one in the profile's plugin directory (under its index source if
//! the lockfile says it came from one), never to a project's. The old file is
//! kept beside the new one as `plugin-grants.v1.yaml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use talaria_plugin_host::{Access, Grants, Manifest};
use talaria_profile::home::ProfileHome;

/// Where a plugin comes from, as far as its grants go: a decision made for one
/// source never applies to a plugin of the same name from another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GrantSource {
    /// Shipped with Talaria (granted what it requests unless revoked).
    Distribution,
    /// The profile's plugin directory: copied in by hand or installed from a
    /// local package.
    User,
    /// The profile's plugin directory, installed from an index: its name and
    /// the keys pinned for it (`id:ed25519` sorted, comma-separated; empty for
    /// an unsigned index or one no longer configured).
    Index {
        /// The index's name.
        index: String,
        /// Its pinned keys.
        keys: String,
    },
    /// A trusted project directory (canonical path).
    Project(PathBuf),
}

impl GrantSource {
    /// The source's key in the grant file.
    pub fn key(&self) -> String {
        match self {
            GrantSource::Distribution => "distribution".to_owned(),
            GrantSource::User => "user".to_owned(),
            GrantSource::Index { index, keys } => format!("index:{index} keys={keys}"),
            GrantSource::Project(dir) => format!("project:{}", dir.display()),
        }
    }

    /// The source of a plugin installed from index `settings`.
    pub fn index(settings: &talaria_registry::IndexSettings) -> Self {
        let mut keys: Vec<String> = settings
            .keys
            .iter()
            .map(|key| format!("{}:{}", key.id, key.ed25519))
            .collect();
        keys.sort();
        GrantSource::Index {
            index: settings.name.clone(),
            keys: keys.join(","),
        }
    }

    /// The source of the plugin `name` in the profile's plugin directory: its
    /// index when the lockfile says it was installed from one.
    pub fn of_user_plugin(home: &ProfileHome, name: &str) -> Self {
        UserSources::load(home).source_of(name)
    }
}

impl std::fmt::Display for GrantSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrantSource::Index { index, .. } => write!(f, "index {index}"),
            GrantSource::Project(dir) => write!(f, "project {}", dir.display()),
            other => f.write_str(&other.key()),
        }
    }
}

/// Where the plugins of the profile's plugin directory were installed from
/// (the lockfile and the index list, read once).
#[derive(Debug, Default)]
pub struct UserSources {
    lockfile: Option<talaria_registry::Lockfile>,
    indexes: Option<talaria_registry::IndexList>,
}

impl UserSources {
    /// Reads the lockfile and the index list; an unreadable one counts as empty
    /// (its plugins are then `user`, which holds no index's grants).
    pub fn load(home: &ProfileHome) -> Self {
        Self {
            lockfile: talaria_registry::Lockfile::load(&home.plugin_lockfile()).ok(),
            indexes: talaria_registry::IndexList::load(&home.plugin_indexes_file()).ok(),
        }
    }

    /// The source of the plugin `name` in the profile's plugin directory.
    pub fn source_of(&self, name: &str) -> GrantSource {
        match self.lockfile.as_ref().and_then(|l| l.get(name)) {
            Some(locked) => self.source_for(&locked.source),
            None => GrantSource::User,
        }
    }

    /// The source of a plugin installed from `locked_source` (a lockfile's
    /// `source`: an index name, or `path` for a local package).
    pub fn source_for(&self, locked_source: &str) -> GrantSource {
        if locked_source == talaria_registry::PATH_SOURCE {
            return GrantSource::User;
        }
        match self.indexes.as_ref().and_then(|i| i.get(locked_source)) {
            Some(settings) => GrantSource::index(settings),
            None => GrantSource::Index {
                index: locked_source.to_owned(),
                keys: String::new(),
            },
        }
    }
}

/// A grant store that could not be read, parsed or written.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A capability text that names nothing.
    #[error(
        "unknown capability '{0}': use filesystem:PATH[:read-only|read-write], network:HOST:PORT, \
         env:NAME, secret:NAME, exec, kv, session-search, auxiliary-model, trust-native or all"
    )]
    UnknownCapability(String),
    /// A capability the manifest does not request.
    #[error(
        "plugin {plugin} does not request {capability}; it can only be granted what it asks for"
    )]
    NotRequested {
        /// The plugin.
        plugin: String,
        /// The capability.
        capability: String,
    },
}

/// The file's current format.
const FORMAT_VERSION: u32 = 2;

/// The grant file as stored.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantFile {
    version: u32,
    /// Source key → plugin name → grants.
    #[serde(default)]
    sources: BTreeMap<String, BTreeMap<String, Grants>>,
}

/// All stored grants.
#[derive(Debug, Default)]
pub struct GrantStore {
    path: PathBuf,
    sources: BTreeMap<String, BTreeMap<String, Grants>>,
}

impl GrantStore {
    /// Reads the store; a missing file holds no decisions. A file in the first
    /// (name-only) format is migrated and saved in the current one.
    pub fn load(home: &ProfileHome) -> Result<Self, GrantError> {
        let path = home.root().join("plugin-grants.yaml");
        let invalid = |message: String| GrantError::Invalid {
            path: path.clone(),
            message,
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(GrantError::Io { path, source }),
        };
        if text.trim().is_empty() {
            return Ok(Self {
                path,
                sources: BTreeMap::new(),
            });
        }
        let value: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let versioned = value
            .get("version")
            .is_some_and(serde_yaml_ng::Value::is_number);
        if versioned {
            let file: GrantFile =
                serde_yaml_ng::from_value(value).map_err(|e| invalid(e.to_string()))?;
            if file.version != FORMAT_VERSION {
                return Err(invalid(format!(
                    "version {} is not one this talaria reads ({FORMAT_VERSION})",
                    file.version
                )));
            }
            return Ok(Self {
                path,
                sources: file.sources,
            });
        }
        let legacy: BTreeMap<String, Grants> =
            serde_yaml_ng::from_value(value).map_err(|e| invalid(e.to_string()))?;
        let store = Self::migrated(path, legacy, &UserSources::load(home));
        // Saved now so the binding is fixed to the sources of today; the old file is kept.
        // Failing only means migrating again next time.
        let backup = store.path.with_file_name("plugin-grants.v1.yaml");
        if !backup.exists() {
            let _ = talaria_profile::home_modes::write_private(&backup, &text);
        }
        let _ = store.save();
        Ok(store)
    }

    /// The store for first-format entries: each applies to the distribution's
    /// plugin of its name and to the profile directory's, never to a project's.
    fn migrated(path: PathBuf, legacy: BTreeMap<String, Grants>, users: &UserSources) -> Self {
        let mut sources: BTreeMap<String, BTreeMap<String, Grants>> = BTreeMap::new();
        for (name, grants) in legacy {
            for source in [GrantSource::Distribution, users.source_of(&name)] {
                sources
                    .entry(source.key())
                    .or_default()
                    .insert(name.clone(), grants.clone());
            }
        }
        Self { path, sources }
    }

    /// What `manifest`'s plugin from `source` may use.
    pub fn grants_for(&self, manifest: &Manifest, source: &GrantSource) -> Grants {
        match self.decided(source, &manifest.name) {
            Some(decided) => decided.clone(),
            None if *source == GrantSource::Distribution => Grants {
                trust_native: false,
                ..Grants::all_requested(manifest)
            },
            None => Grants::none(),
        }
    }

    /// Grants (`allow = true`) or revokes one capability, then saves.
    pub fn change(
        &mut self,
        manifest: &Manifest,
        source: &GrantSource,
        capability: &str,
        allow: bool,
    ) -> Result<Grants, GrantError> {
        let mut grants = self.grants_for(manifest, source);
        apply(&mut grants, manifest, capability, allow)?;
        self.set(source, manifest, grants.clone())?;
        Ok(grants)
    }

    /// The user's recorded decision for the plugin `name` from `source`, if any.
    pub fn decided(&self, source: &GrantSource, name: &str) -> Option<&Grants> {
        self.sources.get(&source.key())?.get(name)
    }

    /// Records `grants` as the decision for `manifest`'s plugin from `source`, then saves.
    pub fn set(
        &mut self,
        source: &GrantSource,
        manifest: &Manifest,
        grants: Grants,
    ) -> Result<(), GrantError> {
        self.sources
            .entry(source.key())
            .or_default()
            .insert(manifest.name.clone(), grants);
        self.save()
    }

    /// Forgets the decision about `name` from `source` (the plugin was removed), then saves.
    pub fn forget(&mut self, source: &GrantSource, name: &str) -> Result<(), GrantError> {
        let key = source.key();
        let Some(plugins) = self.sources.get_mut(&key) else {
            return Ok(());
        };
        if plugins.remove(name).is_some() {
            if plugins.is_empty() {
                self.sources.remove(&key);
            }
            self.save()?;
        }
        Ok(())
    }

    fn save(&self) -> Result<(), GrantError> {
        let io = |source| GrantError::Io {
            path: self.path.clone(),
            source,
        };
        let file = GrantFile {
            version: FORMAT_VERSION,
            sources: self.sources.clone(),
        };
        let text = serde_yaml_ng::to_string(&file).map_err(|e| GrantError::Invalid {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        write_replacing(&self.path, &text).map_err(io)
    }
}

/// Writes `text` to a temporary file beside `path`, then renames it over `path`.
fn write_replacing(path: &Path, text: &str) -> std::io::Result<()> {
    let temp = path.with_extension("tmp");
    talaria_profile::home_modes::write_private(&temp, text)?;
    std::fs::rename(&temp, path)
}

/// Applies one capability text to `grants`, refusing what the manifest does not request.
fn apply(
    grants: &mut Grants,
    manifest: &Manifest,
    text: &str,
    allow: bool,
) -> Result<(), GrantError> {
    let requested = Grants::all_requested(manifest);
    let not_requested = || GrantError::NotRequested {
        plugin: manifest.name.clone(),
        capability: text.to_owned(),
    };
    let (kind, rest) = text.split_once(':').unwrap_or((text, ""));
    match kind {
        // `all` never trusts native code: that is granted by name only.
        "all" if allow => {
            *grants = Grants {
                trust_native: grants.trust_native,
                ..requested
            }
        }
        "all" => *grants = Grants::none(),
        "exec" | "kv" | "session-search" | "auxiliary-model" | "trust-native"
            if rest.is_empty() =>
        {
            let (wanted, slot) = match kind {
                "exec" => (requested.exec, &mut grants.exec),
                "kv" => (requested.kv, &mut grants.kv),
                "auxiliary-model" => (requested.auxiliary_model, &mut grants.auxiliary_model),
                "trust-native" => (requested.trust_native, &mut grants.trust_native),
                _ => (requested.session_search, &mut grants.session_search),
            };
            if allow && !wanted {
                return Err(not_requested());
            }
            *slot = allow;
        }
        "filesystem" => {
            let (path, access) = match rest.rsplit_once(':') {
                Some((path, "read-only")) => (path, Some(Access::ReadOnly)),
                Some((path, "read-write")) => (path, Some(Access::ReadWrite)),
                _ => (rest, None),
            };
            let Some(most) = requested.filesystem.get(path).copied() else {
                return Err(not_requested());
            };
            if allow {
                grants
                    .filesystem
                    .insert(path.to_owned(), access.map_or(most, |a| a.min(most)));
            } else {
                grants.filesystem.remove(path);
            }
        }
        "network" | "env" | "secret" => {
            let (wanted, set) = match kind {
                "network" => (
                    talaria_plugin_host::network_request_covers(
                        &manifest.capabilities.network,
                        rest,
                    ),
                    &mut grants.network,
                ),
                "secret" => (requested.secrets.contains(rest), &mut grants.secrets),
                _ => (requested.env.contains(rest), &mut grants.env),
            };
            if !wanted {
                return Err(not_requested());
            }
            if allow {
                set.insert(rest.to_owned());
            } else {
                set.remove(rest);
            }
        }
        _ => return Err(GrantError::UnknownCapability(text.to_owned())),
    }
    Ok(())
}

/// The grants a `--grant` value means for `manifest`: `all`, `none`, or a
/// comma-separated list of capabilities (each must be requested).
pub fn parse_grant_list(manifest: &Manifest, text: &str) -> Result<Grants, GrantError> {
    let mut grants = Grants::none();
    for item in text
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        if item == "none" {
            grants = Grants::none();
        } else {
            apply(&mut grants, manifest, item, true)?;
        }
    }
    Ok(grants)
}

/// Short lines describing capabilities, for listings.
pub fn describe(grants: &Grants) -> Vec<String> {
    let mut lines: Vec<String> = grants
        .filesystem
        .iter()
        .map(|(path, access)| format!("filesystem:{path}:{access}"))
        .collect();
    lines.extend(grants.network.iter().map(|n| format!("network:{n}")));
    lines.extend(grants.env.iter().map(|e| format!("env:{e}")));
    lines.extend(grants.secrets.iter().map(|s| format!("secret:{s}")));
    for (on, name) in [
        (grants.exec, "exec"),
        (grants.kv, "kv"),
        (grants.session_search, "session-search"),
        (grants.auxiliary_model, "auxiliary-model"),
        (grants.trust_native, "trust-native"),
    ] {
        if on {
            lines.push(name.to_owned());
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn manifest() -> Manifest {
        Manifest::parse(
            "name = \"demo\"\nversion = \"1.0.0\"\napi = \"0.1.0\"\ndescription = \"d\"\n\
             provides = [\"tools\"]\n[capabilities]\n\
             filesystem = [{ path = \"$CWD\", access = \"read-write\" }]\n\
             network = [\"api.example.org:443\"]\nkv = true\n\
             secrets = [{ name = \"DEMO_KEY\", hosts = [\"api.example.org:443\"] }]\n",
            Path::new("plugin.toml"),
        )
        .unwrap()
    }

    fn store(dir: &Path) -> GrantStore {
        GrantStore::load(&ProfileHome::at(dir)).unwrap()
    }

    #[test]
    fn defaults_depend_on_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let m = manifest();
        assert_eq!(
            store(dir.path()).grants_for(&m, &GrantSource::Distribution),
            Grants::all_requested(&m)
        );
        assert_eq!(
            store(dir.path()).grants_for(&m, &GrantSource::User),
            Grants::none()
        );
    }

    #[test]
    fn a_network_grant_may_be_narrower_than_the_request() {
        let m = Manifest::parse(
            "name = \"wide\"\nversion = \"1.0.0\"\napi = \"0.1.2\"\ndescription = \"d\"\n\
             provides = [\"tools\"]\n[capabilities]\nnetwork = [\"127.0.0.1:*\"]\n",
            Path::new("plugin.toml"),
        )
        .unwrap();
        let narrow = parse_grant_list(&m, "network:127.0.0.1:18931").unwrap();
        assert_eq!(describe(&narrow), ["network:127.0.0.1:18931"]);
        assert_eq!(
            narrow.effective(&m.capabilities).network,
            ["127.0.0.1:18931"],
            "the plugin gets the narrower grant"
        );
        let error = parse_grant_list(&m, "network:10.0.0.1:80").unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugin wide does not request network:10.0.0.1:80; it can only be granted what it asks for"
        );
    }

    #[test]
    fn grants_and_revocations_persist_and_stay_within_the_request() {
        let dir = tempfile::tempdir().unwrap();
        let m = manifest();
        let mut grants = store(dir.path());
        grants
            .change(&m, &GrantSource::User, "filesystem:$CWD:read-only", true)
            .unwrap();
        grants
            .change(&m, &GrantSource::User, "network:api.example.org:443", true)
            .unwrap();
        let error = grants
            .change(&m, &GrantSource::User, "exec", true)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugin demo does not request exec; it can only be granted what it asks for"
        );
        assert!(
            grants
                .change(&m, &GrantSource::User, "network:evil.com:443", true)
                .is_err()
        );
        grants
            .change(&m, &GrantSource::User, "secret:DEMO_KEY", true)
            .unwrap();
        assert!(
            grants
                .change(&m, &GrantSource::User, "secret:HOME", true)
                .is_err()
        );
        assert!(matches!(
            grants.change(&m, &GrantSource::User, "teleport", true),
            Err(GrantError::UnknownCapability(_))
        ));

        let reloaded = store(dir.path()).grants_for(&m, &GrantSource::User);
        assert_eq!(
            describe(&reloaded),
            [
                "filesystem:$CWD:read-only",
                "network:api.example.org:443",
                "secret:DEMO_KEY"
            ]
        );

        let mut grants = store(dir.path());
        let after = grants
            .change(&m, &GrantSource::Distribution, "all", false)
            .unwrap();
        assert_eq!(after, Grants::none());
        assert_eq!(
            store(dir.path()).grants_for(&m, &GrantSource::Distribution),
            Grants::none(),
            "a revoked distribution plugin stays revoked"
        );
    }

    fn index(name: &str, key: &str) -> GrantSource {
        GrantSource::Index {
            index: name.to_owned(),
            keys: format!("main:{key}"),
        }
    }

    #[test]
    fn a_decision_applies_only_to_its_source() {
        let dir = tempfile::tempdir().unwrap();
        let m = manifest();
        let mut grants = store(dir.path());
        grants.change(&m, &GrantSource::User, "kv", true).unwrap();
        grants
            .change(&m, &index("community", "K1"), "all", true)
            .unwrap();
        let reloaded = store(dir.path());
        assert_eq!(
            describe(&reloaded.grants_for(&m, &GrantSource::User)),
            ["kv"]
        );
        assert_eq!(
            reloaded.grants_for(&m, &index("community", "K1")),
            Grants::all_requested(&m)
        );
        for other in [
            GrantSource::Project(dir.path().join("project")),
            index("community", "K2"),
            index("other", "K1"),
        ] {
            assert_eq!(
                reloaded.grants_for(&m, &other),
                Grants::none(),
                "{other:?} inherited another source's grants"
            );
            assert_eq!(reloaded.decided(&other, "demo"), None);
        }
        // A revoked distribution plugin does not make a project's plugin of that name revoked
        // either way: each source is decided on its own.
        let mut grants = store(dir.path());
        grants
            .change(&m, &GrantSource::Distribution, "kv", false)
            .unwrap();
        let text = std::fs::read_to_string(dir.path().join("plugin-grants.yaml")).unwrap();
        assert!(text.starts_with("version: 2\n"), "{text}");
        assert!(text.contains("index:community keys=main:K1"), "{text}");
    }

    #[test]
    fn name_only_grant_files_are_migrated_without_reaching_projects() {
        let dir = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(dir.path());
        let old = "demo:\n  kv: true\nfrom-index:\n  exec: true\n";
        std::fs::write(dir.path().join("plugin-grants.yaml"), old).unwrap();
        // `from-index` was installed from index `community`, whose key is pinned.
        let mut lockfile = talaria_registry::Lockfile::load(&home.plugin_lockfile()).unwrap();
        lockfile.set(talaria_registry::LockedPlugin {
            name: "from-index".into(),
            version: "1.0.0".parse().unwrap(),
            requirement: "*".parse().unwrap(),
            source: "community".into(),
            url: "from-index-1.0.0.tar.gz".into(),
            sha256: "00".repeat(32),
            size: 1,
        });
        lockfile.save().unwrap();
        let mut indexes = talaria_registry::IndexList::load(&home.plugin_indexes_file()).unwrap();
        indexes
            .add(
                talaria_registry::IndexSettings {
                    name: "community".into(),
                    url: "file:///nowhere".into(),
                    priority: 0,
                    keys: vec![talaria_registry::IndexKey {
                        id: "main".into(),
                        ed25519: "K1".into(),
                    }],
                    allow_unsigned: false,
                },
                false,
            )
            .unwrap();

        let migrated = store(dir.path());
        let kv = Grants {
            kv: true,
            ..Grants::none()
        };
        assert_eq!(migrated.decided(&GrantSource::User, "demo"), Some(&kv));
        assert_eq!(
            migrated.decided(&GrantSource::Distribution, "demo"),
            Some(&kv)
        );
        let project = GrantSource::Project(dir.path().to_path_buf());
        assert_eq!(migrated.decided(&project, "demo"), None);
        let exec = Grants {
            exec: true,
            ..Grants::none()
        };
        assert_eq!(
            migrated.decided(&index("community", "K1"), "from-index"),
            Some(&exec)
        );
        assert_eq!(migrated.decided(&GrantSource::User, "from-index"), None);
        assert_eq!(migrated.decided(&project, "from-index"), None);

        // Saved in the new format, the old file kept; loading again changes nothing.
        let text = std::fs::read_to_string(dir.path().join("plugin-grants.yaml")).unwrap();
        assert!(text.starts_with("version: 2\n"), "{text}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("plugin-grants.v1.yaml")).unwrap(),
            old
        );
        let again = store(dir.path());
        assert_eq!(again.decided(&GrantSource::User, "demo"), Some(&kv));
        assert_eq!(again.decided(&project, "demo"), None);
    }

    #[test]
    fn an_unknown_format_version_is_an_error_not_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("plugin-grants.yaml"),
            "version: 3\nsources: {}\n",
        )
        .unwrap();
        let error = GrantStore::load(&ProfileHome::at(dir.path())).unwrap_err();
        assert!(error.to_string().contains("version 3"), "{error}");
    }

    #[test]
    fn a_grant_list_is_parsed_against_the_manifest() {
        let m = manifest();
        assert_eq!(
            parse_grant_list(&m, "all").unwrap(),
            Grants::all_requested(&m)
        );
        assert_eq!(parse_grant_list(&m, "none").unwrap(), Grants::none());
        let some = parse_grant_list(&m, "kv, filesystem:$CWD:read-only").unwrap();
        assert_eq!(describe(&some), ["filesystem:$CWD:read-only", "kv"]);
        assert!(parse_grant_list(&m, "kv,exec").is_err());

        let dir = tempfile::tempdir().unwrap();
        let mut grants = store(dir.path());
        grants.set(&GrantSource::User, &m, some.clone()).unwrap();
        assert_eq!(
            store(dir.path()).decided(&GrantSource::User, "demo"),
            Some(&some)
        );
        grants.forget(&GrantSource::User, "demo").unwrap();
        assert_eq!(store(dir.path()).decided(&GrantSource::User, "demo"), None);
    }

    #[cfg(feature = "native")]
    fn native_manifest() -> Manifest {
        Manifest::parse(
            "name = \"fast\"\nversion = \"1.0.0\"\napi = \"0.1.1\"\nruntime = \"native\"\n\
             library = \"libfast.so\"\nprovides = [\"tools\"]\n[capabilities]\ntrust-native = true\n",
            Path::new("plugin.toml"),
        )
        .unwrap()
    }

    #[cfg(feature = "native")]
    #[test]
    fn trust_native_is_granted_by_name_only() {
        let dir = tempfile::tempdir().unwrap();
        let m = native_manifest();
        assert!(
            !store(dir.path())
                .grants_for(&m, &GrantSource::Distribution)
                .trust_native,
            "not even a distribution plugin is trusted by default"
        );
        let mut grants = store(dir.path());
        let after = grants.change(&m, &GrantSource::User, "all", true).unwrap();
        assert!(!after.trust_native, "`all` never trusts native code");
        let after = grants
            .change(&m, &GrantSource::User, "trust-native", true)
            .unwrap();
        assert!(after.trust_native);
        assert_eq!(describe(&after), ["trust-native"]);
        let after = grants.change(&m, &GrantSource::User, "all", true).unwrap();
        assert!(after.trust_native, "granting `all` later keeps it");
        assert!(
            store(dir.path())
                .grants_for(&m, &GrantSource::User)
                .trust_native
        );
        let after = grants.change(&m, &GrantSource::User, "all", false).unwrap();
        assert!(!after.trust_native, "revoking `all` revokes it");

        let error = grants
            .change(&manifest(), &GrantSource::User, "trust-native", true)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugin demo does not request trust-native; it can only be granted what it asks for"
        );
    }
}
