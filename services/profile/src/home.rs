//! The profile home: every path Talaria reads or writes is derived from here.

use std::path::{Path, PathBuf};

use talaria_approval::ProtectedPaths;

/// Environment variable naming the profile home.
pub const HOME_ENV: &str = "TALARIA_HOME";

/// A profile's home directory (`$TALARIA_HOME`, default `~/.talaria`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileHome {
    root: PathBuf,
}

impl ProfileHome {
    /// A home at an explicit path.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `config.yaml`.
    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    /// `.env` with secrets.
    pub fn env_file(&self) -> PathBuf {
        self.root.join(".env")
    }

    /// Plugins installed in this profile.
    pub fn plugins_dir(&self) -> PathBuf {
        self.root.join("plugins")
    }

    /// The exact versions and checksums of plugins installed from indexes.
    pub fn plugin_lockfile(&self) -> PathBuf {
        self.root.join("plugins.lock")
    }

    /// The plugin indexes this profile uses.
    pub fn plugin_indexes_file(&self) -> PathBuf {
        self.root.join("plugin-indexes.toml")
    }

    /// Compiled plugin components (written and read only by the plugin host).
    pub fn plugin_cache_dir(&self) -> PathBuf {
        self.root.join("cache").join("plugins")
    }

    /// The MCP servers' cached `tools/list` answers, one file per server and configuration.
    pub fn mcp_cache_dir(&self) -> PathBuf {
        self.root.join("cache").join("mcp")
    }

    /// The per-profile secret that keys the MACs of compiled plugin files, so
    /// a tampered cache file is recompiled rather than loaded. Protected
    /// (reads too) and hidden from sandboxes.
    pub fn plugin_cache_key_file(&self) -> PathBuf {
        self.root.join("cache").join("plugins.key")
    }

    /// Per-plugin data (`$PLUGIN_DATA`, key-value stores).
    pub fn plugin_data_dir(&self) -> PathBuf {
        self.root.join("plugin-data")
    }

    /// Commands approved "always" in this profile.
    pub fn approvals_file(&self) -> PathBuf {
        self.root.join("approvals.toml")
    }

    /// Chat-platform pairings: codes waiting for the owner and the users they paired.
    pub fn pairing_dir(&self) -> PathBuf {
        self.root.join("pairing")
    }

    /// Scheduled jobs: `cron/jobs.json` and their runs' output.
    pub fn cron_dir(&self) -> PathBuf {
        self.root.join("cron")
    }

    /// Attached images, content-addressed (`images/<sha256>.<ext>`): sessions refer to them,
    /// so they are kept as long as the sessions are.
    pub fn images_dir(&self) -> PathBuf {
        self.root.join("images")
    }

    /// Per-session files (spilled tool output): `sessions/<id>/`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// Plugin log lines (info and above), appended by every process.
    pub fn plugin_log_file(&self) -> PathBuf {
        self.root.join("logs").join("plugins.log")
    }

    /// `SOUL.md`, the persona.
    pub fn soul_file(&self) -> PathBuf {
        self.root.join("SOUL.md")
    }

    /// `MEMORY.md` and `USER.md` live here (the home itself).
    pub fn memory_dir(&self) -> PathBuf {
        self.root.clone()
    }

    /// The built-in memory of someone other than the owner (a chat user, a group, a client):
    /// `memories/<name>/`, `name` a file-name-safe form of who it is.
    pub fn principal_memory_dir(&self, name: &str) -> PathBuf {
        self.root.join("memories").join(name)
    }

    /// Skills: `skills/<category>/<name>/SKILL.md`.
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }

    /// Scratch space of running tools (execute_code runs), cleaned as they end.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// The REPL's input history (one per profile).
    pub fn history_file(&self) -> PathBuf {
        self.root.join("state").join("history")
    }

    /// User skins: `skins/<name>.yaml`.
    pub fn skins_dir(&self) -> PathBuf {
        self.root.join("skins")
    }

    /// Files commands see in place of others (`config.yaml` without its keys).
    pub fn sandbox_views_dir(&self) -> PathBuf {
        self.root.join("state").join("sandbox")
    }

    /// The session database.
    pub fn session_db(&self) -> PathBuf {
        self.root.join("state").join("sessions.sqlite")
    }

    /// The control files of this profile and of the profiles next to it,
    /// which tools may change only with the user's approval (also under
    /// `--yolo` and in a sandbox): settings, keys, approvals, grants and the
    /// trust list, the persona, plugins and their cache, the profile list.
    /// The plugin cache key is protected from reading too. When this is a
    /// named profile (`<root>/profiles/<name>`), the root's own control files
    /// and the other profiles are included.
    pub fn protected_paths(&self) -> ProtectedPaths {
        let mut paths = self.own_protected_paths();
        match self.named_profile_root() {
            Some(root) => {
                let root_home = ProfileHome::at(&root);
                paths.extend(root_home.own_protected_paths());
                paths.write.push(root.join("active-profile"));
                // Every other profile whole; this one's own files are listed above
                // (its memory, sessions and scratch space stay writable).
                let profiles = root.join("profiles");
                paths.write.extend(
                    std::fs::read_dir(&profiles)
                        .into_iter()
                        .flatten()
                        .filter_map(Result::ok)
                        .map(|entry| entry.path())
                        .filter(|path| path.is_dir() && path.as_path() != self.root.as_path()),
                );
            }
            None => {
                paths.write.push(self.root.join("active-profile"));
                paths.write.push(self.root.join("profiles"));
            }
        }
        paths
    }

    /// The files of this home alone that [`protected_paths`](Self::protected_paths) lists.
    fn own_protected_paths(&self) -> ProtectedPaths {
        let config = self.config_file();
        let mut write = vec![
            config.with_extension("yaml.bak"),
            config,
            self.approvals_file(),
            self.pairing_dir(),
            self.root.join("plugin-grants.yaml"),
            self.root.join("plugin-grants.v1.yaml"),
            self.root.join("trusted-dirs"),
            self.soul_file(),
            self.plugins_dir(),
            self.plugin_lockfile(),
            self.plugin_indexes_file(),
            self.plugin_cache_dir(),
        ];
        write.sort();
        ProtectedPaths {
            write,
            // Secrets: the provider keys and the key of the compiled-plugin cache's MACs.
            read: vec![self.env_file(), self.plugin_cache_key_file()],
            homes: vec![self.root.clone()],
        }
    }

    /// The profile's name: `default`, or the name of a profile under
    /// `<root>/profiles/`.
    pub fn profile_name(&self) -> String {
        match self.named_profile_root() {
            Some(_) => self.root.file_name().map_or_else(
                || "default".to_owned(),
                |n| n.to_string_lossy().into_owned(),
            ),
            None => "default".to_owned(),
        }
    }

    /// The Talaria root when this home is a named profile (`<root>/profiles/<name>`).
    fn named_profile_root(&self) -> Option<PathBuf> {
        let parent = self.root.parent()?;
        (parent.file_name()? == "profiles").then(|| parent.parent().map(Path::to_path_buf))?
    }
}

/// Neither `TALARIA_HOME` nor `HOME` is set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot find the profile home: set TALARIA_HOME (or HOME)")]
pub struct HomeError;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_profile_protects_its_controls_and_the_profile_list() {
        let home = ProfileHome::at("/r");
        let paths = home.protected_paths();
        for file in [
            "config.yaml",
            "config.yaml.bak",
            ".env",
            "approvals.toml",
            "pairing",
            "plugin-grants.yaml",
            "trusted-dirs",
            "SOUL.md",
            "plugins",
            "plugins.lock",
            "plugin-indexes.toml",
            "cache/plugins",
            "active-profile",
            "profiles",
        ] {
            let path = Path::new("/r").join(file);
            assert!(paths.write_protected(&path).is_some(), "{file}");
        }
        assert_eq!(
            paths.hidden(),
            [home.env_file(), home.plugin_cache_key_file()]
        );
        for secret in [home.env_file(), home.plugin_cache_key_file()] {
            assert!(paths.read_protected(&secret).is_some(), "{secret:?}");
        }
        assert!(paths.read_protected(&home.config_file()).is_none());
        for free in [
            "MEMORY.md",
            "sessions/x/out.txt",
            "tmp/run/script.py",
            "skills",
        ] {
            assert!(
                paths.write_protected(&Path::new("/r").join(free)).is_none(),
                "{free}"
            );
        }
    }

    #[test]
    fn a_named_profile_protects_the_root_and_the_other_profiles() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for name in ["work", "other"] {
            std::fs::create_dir_all(root.join("profiles").join(name)).unwrap();
        }
        let work = ProfileHome::at(root.join("profiles").join("work"));
        let paths = work.protected_paths();
        for path in [
            work.config_file(),
            root.join("config.yaml"),
            root.join(".env"),
            root.join("active-profile"),
            root.join("profiles/other/config.yaml"),
            root.join("profiles/other/MEMORY.md"),
        ] {
            assert!(paths.write_protected(&path).is_some(), "{}", path.display());
        }
        assert!(
            paths
                .read_protected(&root.join("cache/plugins.key"))
                .is_some()
        );
        assert!(
            paths
                .write_protected(&work.root().join("MEMORY.md"))
                .is_none(),
            "the active profile's own memory stays writable"
        );
    }
}
