//! The user's capability grants per plugin, stored in
//! `$TALARIA_HOME/plugin-grants.yaml`. Distribution plugins get what their
//! manifest requests until the user says otherwise; every other plugin gets
//! nothing until granted. `trust-native` (running a native plugin unsandboxed)
//! is only ever granted by name: not by default, not by `all`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use talaria_plugin_host::{Access, Grants, Manifest};

use crate::home::ProfileHome;
use crate::plugins::PluginSource;

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
         env:NAME, exec, kv, session-search, trust-native or all"
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

/// All stored grants.
#[derive(Debug, Default)]
pub struct GrantStore {
    path: PathBuf,
    grants: BTreeMap<String, Grants>,
}

impl GrantStore {
    /// Reads the store; a missing file holds no decisions.
    pub fn load(home: &ProfileHome) -> Result<Self, GrantError> {
        let path = home.root().join("plugin-grants.yaml");
        let grants = match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().is_empty() => BTreeMap::new(),
            Ok(text) => serde_yaml_ng::from_str(&text).map_err(|e| GrantError::Invalid {
                path: path.clone(),
                message: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(source) => return Err(GrantError::Io { path, source }),
        };
        Ok(Self { path, grants })
    }

    /// What `manifest`'s plugin may use.
    pub fn grants_for(&self, manifest: &Manifest, source: PluginSource) -> Grants {
        match self.grants.get(&manifest.name) {
            Some(decided) => decided.clone(),
            None if source == PluginSource::Distribution => Grants {
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
        source: PluginSource,
        capability: &str,
        allow: bool,
    ) -> Result<Grants, GrantError> {
        let mut grants = self.grants_for(manifest, source);
        apply(&mut grants, manifest, capability, allow)?;
        self.grants.insert(manifest.name.clone(), grants.clone());
        self.save()?;
        Ok(grants)
    }

    /// The user's recorded decision for `name`, if any.
    pub fn decided(&self, name: &str) -> Option<&Grants> {
        self.grants.get(name)
    }

    /// Records `grants` as the decision for `manifest`'s plugin, then saves.
    pub fn set(&mut self, manifest: &Manifest, grants: Grants) -> Result<(), GrantError> {
        self.grants.insert(manifest.name.clone(), grants);
        self.save()
    }

    /// Forgets every decision about `name` (the plugin was removed), then saves.
    pub fn forget(&mut self, name: &str) -> Result<(), GrantError> {
        if self.grants.remove(name).is_some() {
            self.save()?;
        }
        Ok(())
    }

    fn save(&self) -> Result<(), GrantError> {
        let io = |source| GrantError::Io {
            path: self.path.clone(),
            source,
        };
        let text = serde_yaml_ng::to_string(&self.grants).map_err(|e| GrantError::Invalid {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let temp = self.path.with_extension("tmp");
        std::fs::write(&temp, text).map_err(io)?;
        std::fs::rename(&temp, &self.path).map_err(io)
    }
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
        "exec" | "kv" | "session-search" | "trust-native" if rest.is_empty() => {
            let (wanted, slot) = match kind {
                "exec" => (requested.exec, &mut grants.exec),
                "kv" => (requested.kv, &mut grants.kv),
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
        "network" | "env" => {
            let (wanted, set) = match kind {
                "network" => (requested.network.contains(rest), &mut grants.network),
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
    for (on, name) in [
        (grants.exec, "exec"),
        (grants.kv, "kv"),
        (grants.session_search, "session-search"),
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
             network = [\"api.example.org:443\"]\nkv = true\n",
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
            store(dir.path()).grants_for(&m, PluginSource::Distribution),
            Grants::all_requested(&m)
        );
        assert_eq!(
            store(dir.path()).grants_for(&m, PluginSource::User),
            Grants::none()
        );
    }

    #[test]
    fn grants_and_revocations_persist_and_stay_within_the_request() {
        let dir = tempfile::tempdir().unwrap();
        let m = manifest();
        let mut grants = store(dir.path());
        grants
            .change(&m, PluginSource::User, "filesystem:$CWD:read-only", true)
            .unwrap();
        grants
            .change(&m, PluginSource::User, "network:api.example.org:443", true)
            .unwrap();
        let error = grants
            .change(&m, PluginSource::User, "exec", true)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugin demo does not request exec; it can only be granted what it asks for"
        );
        assert!(
            grants
                .change(&m, PluginSource::User, "network:evil.com:443", true)
                .is_err()
        );
        assert!(matches!(
            grants.change(&m, PluginSource::User, "teleport", true),
            Err(GrantError::UnknownCapability(_))
        ));

        let reloaded = store(dir.path()).grants_for(&m, PluginSource::User);
        assert_eq!(
            describe(&reloaded),
            ["filesystem:$CWD:read-only", "network:api.example.org:443"]
        );

        let mut grants = store(dir.path());
        let after = grants
            .change(&m, PluginSource::Distribution, "all", false)
            .unwrap();
        assert_eq!(after, Grants::none());
        assert_eq!(
            store(dir.path()).grants_for(&m, PluginSource::Distribution),
            Grants::none(),
            "a revoked distribution plugin stays revoked"
        );
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
        grants.set(&m, some.clone()).unwrap();
        assert_eq!(store(dir.path()).decided("demo"), Some(&some));
        grants.forget("demo").unwrap();
        assert_eq!(store(dir.path()).decided("demo"), None);
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
                .grants_for(&m, PluginSource::Distribution)
                .trust_native,
            "not even a distribution plugin is trusted by default"
        );
        let mut grants = store(dir.path());
        let after = grants.change(&m, PluginSource::User, "all", true).unwrap();
        assert!(!after.trust_native, "`all` never trusts native code");
        let after = grants
            .change(&m, PluginSource::User, "trust-native", true)
            .unwrap();
        assert!(after.trust_native);
        assert_eq!(describe(&after), ["trust-native"]);
        let after = grants.change(&m, PluginSource::User, "all", true).unwrap();
        assert!(after.trust_native, "granting `all` later keeps it");
        assert!(
            store(dir.path())
                .grants_for(&m, PluginSource::User)
                .trust_native
        );
        let after = grants.change(&m, PluginSource::User, "all", false).unwrap();
        assert!(!after.trust_native, "revoking `all` revokes it");

        let error = grants
            .change(&manifest(), PluginSource::User, "trust-native", true)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugin demo does not request trust-native; it can only be granted what it asks for"
        );
    }
}
