//! The profile home: every path Talaria reads or writes is derived from here.

use std::path::{Path, PathBuf};

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

    /// Per-plugin data (`$PLUGIN_DATA`, key-value stores).
    pub fn plugin_data_dir(&self) -> PathBuf {
        self.root.join("plugin-data")
    }

    /// Commands approved "always" in this profile.
    pub fn approvals_file(&self) -> PathBuf {
        self.root.join("approvals.toml")
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

    /// The session database.
    pub fn session_db(&self) -> PathBuf {
        self.root.join("state").join("sessions.sqlite")
    }
}

/// Neither `TALARIA_HOME` nor `HOME` is set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot find the profile home: set TALARIA_HOME (or HOME)")]
pub struct HomeError;
