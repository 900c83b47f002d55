//! Named profiles: separate homes under one Talaria root. The root is
//! `$TALARIA_HOME` (default `~/.talaria`) and is itself the `default`
//! profile; a named profile lives in `<root>/profiles/<name>`. The profile a
//! command uses is `-p NAME`, else the one chosen with `talaria profile use`
//! (`<root>/active-profile`), else `default` — decided before anything reads
//! a path.

use std::path::{Path, PathBuf};

use crate::home::{HOME_ENV, HomeError, ProfileHome};
use crate::home_modes;

/// The profile that is the root itself.
pub const DEFAULT_PROFILE: &str = "default";

/// What clones of a profile take along: its setup, not its history.
const CLONED: &[&str] = &[
    "config.yaml",
    ".env",
    "SOUL.md",
    "skills",
    "plugins",
    "plugin-grants.yaml",
    "trusted-dirs",
    "approvals.toml",
];

/// A profile operation that cannot be done.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The name is not usable.
    #[error("invalid profile name {0:?}: use 1 to 64 of a-z, 0-9, '-' and '_'")]
    InvalidName(String),
    /// No such profile.
    #[error("no profile named '{name}' (profiles: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The profiles that exist.
        known: String,
    },
    /// It exists already.
    #[error("profile '{0}' exists already")]
    Exists(String),
    /// The default profile cannot be deleted.
    #[error("the default profile is the Talaria home itself and cannot be deleted")]
    DeleteDefault,
    /// A file operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ProfileError + '_ {
    move |source| ProfileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One profile as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileInfo {
    /// Its name.
    pub name: String,
    /// Its home directory.
    pub home: PathBuf,
    /// Whether commands use it when no `-p` is given.
    pub active: bool,
}

/// The profiles under one Talaria root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profiles {
    root: PathBuf,
}

impl Profiles {
    /// Profiles under `root`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root chosen by the environment: `$TALARIA_HOME`, else `$HOME/.talaria`.
    pub fn from_env() -> Result<Self, HomeError> {
        if let Some(home) = std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()) {
            return Ok(Self::at(home));
        }
        std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|home| Self::at(PathBuf::from(home).join(".talaria")))
            .ok_or(HomeError)
    }

    /// The Talaria root (the default profile's home).
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn active_file(&self) -> PathBuf {
        self.root.join("active-profile")
    }

    fn dir_of(&self, name: &str) -> PathBuf {
        if name == DEFAULT_PROFILE {
            self.root.clone()
        } else {
            self.root.join("profiles").join(name)
        }
    }

    /// The profile commands use without `-p`.
    pub fn active(&self) -> String {
        std::fs::read_to_string(self.active_file())
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|name| valid_name(name) && self.dir_of(name).is_dir())
            .unwrap_or_else(|| DEFAULT_PROFILE.to_owned())
    }

    /// The home of `name` (`None`: the active profile). A named profile must exist.
    pub fn home(&self, name: Option<&str>) -> Result<ProfileHome, ProfileError> {
        let name = match name {
            Some(name) => name.to_owned(),
            None => self.active(),
        };
        check_name(&name)?;
        let dir = self.dir_of(&name);
        if name != DEFAULT_PROFILE && !dir.is_dir() {
            return Err(self.unknown(&name));
        }
        Ok(ProfileHome::at(dir))
    }

    fn unknown(&self, name: &str) -> ProfileError {
        ProfileError::Unknown {
            name: name.to_owned(),
            known: self
                .list()
                .iter()
                .map(|p| p.name.clone())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// Every profile, `default` first.
    pub fn list(&self) -> Vec<ProfileInfo> {
        let active = self.active();
        let mut names = vec![DEFAULT_PROFILE.to_owned()];
        if let Ok(entries) = std::fs::read_dir(self.root.join("profiles")) {
            let mut named: Vec<String> = entries
                .filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|n| valid_name(n) && n != DEFAULT_PROFILE)
                .collect();
            named.sort();
            names.extend(named);
        }
        names
            .into_iter()
            .map(|name| ProfileInfo {
                home: self.dir_of(&name),
                active: name == active,
                name,
            })
            .collect()
    }

    /// Creates `name`, empty or with `clone_from`'s setup (config, keys,
    /// persona, skills, plugins, grants, approvals — not sessions or memory).
    pub fn create(
        &self,
        name: &str,
        clone_from: Option<&ProfileHome>,
    ) -> Result<ProfileHome, ProfileError> {
        check_name(name)?;
        let dir = self.dir_of(name);
        if name == DEFAULT_PROFILE || dir.exists() {
            return Err(ProfileError::Exists(name.to_owned()));
        }
        home_modes::create_private_dir(&dir).map_err(io(&dir))?;
        if let Some(source) = clone_from {
            for entry in CLONED {
                let from = source.root().join(entry);
                if from.exists() {
                    copy_recursively(&from, &dir.join(entry))?;
                }
            }
        }
        Ok(ProfileHome::at(dir))
    }

    /// Makes `name` the profile used without `-p`.
    pub fn set_active(&self, name: &str) -> Result<(), ProfileError> {
        self.home(Some(name))?;
        let file = self.active_file();
        home_modes::create_private_dir(&self.root).map_err(io(&self.root))?;
        let temp = file.with_extension("tmp");
        home_modes::write_private(&temp, format!("{name}\n")).map_err(io(&temp))?;
        std::fs::rename(&temp, &file).map_err(io(&file))
    }

    /// Deletes a named profile and everything in it; when it was the active
    /// one, `default` becomes active again. Returns the deleted directory.
    pub fn delete(&self, name: &str) -> Result<PathBuf, ProfileError> {
        check_name(name)?;
        if name == DEFAULT_PROFILE {
            return Err(ProfileError::DeleteDefault);
        }
        let dir = self.dir_of(name);
        if !dir.is_dir() {
            return Err(self.unknown(name));
        }
        let was_active = self.active() == name;
        std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
        if was_active {
            let file = self.active_file();
            std::fs::remove_file(&file).map_err(io(&file))?;
        }
        Ok(dir)
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

fn check_name(name: &str) -> Result<(), ProfileError> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(ProfileError::InvalidName(name.to_owned()))
    }
}

fn copy_recursively(from: &Path, to: &Path) -> Result<(), ProfileError> {
    if from.is_dir() {
        home_modes::create_private_dir(to).map_err(io(to))?;
        for entry in std::fs::read_dir(from).map_err(io(from))? {
            let entry = entry.map_err(io(from))?;
            copy_recursively(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        // A copy keeps the source's mode; the clone is private whatever that was.
        std::fs::copy(from, to).map_err(io(from))?;
        let meta = std::fs::metadata(to).map_err(io(to))?;
        home_modes::tighten(to, &meta).map(|_| ()).map_err(io(to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_created_used_listed_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let profiles = Profiles::at(dir.path());
        assert_eq!(profiles.active(), "default");
        assert_eq!(profiles.home(None).unwrap().root(), dir.path());

        std::fs::write(dir.path().join("config.yaml"), "model:\n  name: m\n").unwrap();
        std::fs::create_dir_all(dir.path().join("skills/x/y")).unwrap();
        std::fs::write(dir.path().join("skills/x/y/SKILL.md"), "s").unwrap();
        std::fs::write(dir.path().join("MEMORY.md"), "private").unwrap();
        let default = profiles.home(None).unwrap();
        let work = profiles.create("work", Some(&default)).unwrap();
        assert!(work.config_file().is_file(), "setup is cloned");
        assert!(work.root().join("skills/x/y/SKILL.md").is_file());
        assert!(!work.root().join("MEMORY.md").exists(), "memory is not");
        assert!(matches!(
            profiles.create("work", None),
            Err(ProfileError::Exists(_))
        ));
        assert!(matches!(
            profiles.create("Bad Name", None),
            Err(ProfileError::InvalidName(_))
        ));

        profiles.set_active("work").unwrap();
        assert_eq!(profiles.active(), "work");
        assert_eq!(profiles.home(None).unwrap(), work);
        let listed: Vec<(String, bool)> = profiles
            .list()
            .into_iter()
            .map(|p| (p.name, p.active))
            .collect();
        assert_eq!(listed, [("default".into(), false), ("work".into(), true)]);

        assert!(matches!(
            profiles.home(Some("nope")),
            Err(ProfileError::Unknown { .. })
        ));
        assert!(matches!(
            profiles.delete("default"),
            Err(ProfileError::DeleteDefault)
        ));
        profiles.delete("work").unwrap();
        assert_eq!(
            profiles.active(),
            "default",
            "deleting the active profile resets it"
        );
        assert!(!dir.path().join("profiles/work").exists());
        assert!(
            dir.path().join("MEMORY.md").exists(),
            "the default profile is untouched"
        );
    }
}
