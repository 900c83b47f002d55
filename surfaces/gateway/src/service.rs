//! `talaria gateway install|uninstall`: a systemd user unit that runs the
//! gateway of one profile. Installing writes the unit and says how to enable
//! it; it never enables or starts anything itself.

use std::path::{Path, PathBuf};

/// The first line of every unit written here: uninstall removes only files
/// that carry it.
const MARKER: &str =
    "# Written by `talaria gateway install`; remove with `talaria gateway uninstall`.";

/// Why the unit could not be written or removed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// No directory for user units could be found.
    #[error("cannot find the systemd user unit directory: set XDG_CONFIG_HOME or HOME")]
    NoConfigDir,
    /// A file of that name exists and was not written by Talaria.
    #[error("{0} exists and was not written by `talaria gateway install`; leaving it alone")]
    Foreign(PathBuf),
    /// Reading, writing or removing failed.
    #[error("{path}: {source}")]
    Io {
        /// The unit file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// The unit of one profile's gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceUnit {
    /// `talaria-gateway.service`, or `talaria-gateway-<profile>.service`.
    pub name: String,
    /// Where it is written.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

impl ServiceUnit {
    /// The unit running `exe [--profile PROFILE] gateway run` with
    /// `TALARIA_HOME=root` (`profile` `None`: the default one), in `unit_dir`.
    pub fn new(exe: &Path, root: &Path, profile: Option<&str>, unit_dir: &Path) -> Self {
        let name = match profile {
            Some(profile) => format!("talaria-gateway-{profile}.service"),
            None => "talaria-gateway.service".to_owned(),
        };
        let description = match profile {
            Some(profile) => format!("Talaria gateway (profile {profile})"),
            None => "Talaria gateway".to_owned(),
        };
        let text = format!(
            "{MARKER}\n\
             [Unit]\n\
             Description={description}\n\
             After=network-online.target\n\
             Wants=network-online.target\n\
             \n\
             [Service]\n\
             Type=simple\n\
             Environment={}\n\
             # Each turn runs on a thread of its own: capped malloc arenas keep\n\
             # memory flat over thousands of chats (measured in tests/all/gateway_load.rs).\n\
             Environment=MALLOC_ARENA_MAX=2\n\
             ExecStart={}{} gateway run\n\
             Restart=on-failure\n\
             RestartSec=10\n\
             \n\
             [Install]\n\
             WantedBy=default.target\n",
            quote(&format!("TALARIA_HOME={}", root.display())),
            quote(&exe.display().to_string()),
            profile.map_or_else(String::new, |p| format!(" --profile {}", quote(p))),
        );
        Self {
            path: unit_dir.join(&name),
            name,
            text,
        }
    }

    /// Writes the unit (replacing one Talaria wrote before).
    pub fn install(&self) -> Result<(), ServiceError> {
        self.check_ours()?;
        let io = |source| ServiceError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        std::fs::write(&self.path, &self.text).map_err(io)
    }

    /// Removes the unit; `false` when there was none.
    pub fn uninstall(&self) -> Result<bool, ServiceError> {
        if !self.path.exists() {
            return Ok(false);
        }
        self.check_ours()?;
        std::fs::remove_file(&self.path).map_err(|source| ServiceError::Io {
            path: self.path.clone(),
            source,
        })?;
        Ok(true)
    }

    /// What to run to enable and start it.
    pub fn enable_hint(&self) -> String {
        format!(
            "systemctl --user daemon-reload && systemctl --user enable --now {name}\n\
             (to keep it running after you log out: loginctl enable-linger \"$USER\")\n\
             logs: journalctl --user -u {name} -f",
            name = self.name
        )
    }

    /// What to run to stop and disable it.
    pub fn disable_hint(&self) -> String {
        format!(
            "systemctl --user disable --now {} && systemctl --user daemon-reload",
            self.name
        )
    }

    fn check_ours(&self) -> Result<(), ServiceError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) if text.starts_with(MARKER) => Ok(()),
            Ok(_) => Err(ServiceError::Foreign(self.path.clone())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(ServiceError::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }
}

/// `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`.
pub fn user_unit_dir(
    xdg_config_home: Option<&Path>,
    home: Option<&Path>,
) -> Result<PathBuf, ServiceError> {
    let config = match (xdg_config_home, home) {
        (Some(xdg), _) if xdg.is_absolute() => xdg.to_path_buf(),
        (_, Some(home)) => home.join(".config"),
        _ => return Err(ServiceError::NoConfigDir),
    };
    Ok(config.join("systemd").join("user"))
}

/// A systemd word in double quotes: `\` and `"` escaped, `%` doubled (it
/// starts a specifier), `$` doubled (it starts a variable).
fn quote(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    out.push('"');
    for c in word.chars() {
        match c {
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_runs_the_gateway_of_its_profile() {
        let unit = ServiceUnit::new(
            Path::new("/opt/tal aria/bin/talaria"),
            Path::new("/home/ana/.talaria%1"),
            Some("work"),
            Path::new("/home/ana/.config/systemd/user"),
        );
        assert_eq!(unit.name, "talaria-gateway-work.service");
        assert_eq!(
            unit.path,
            Path::new("/home/ana/.config/systemd/user/talaria-gateway-work.service")
        );
        assert!(unit.text.starts_with(MARKER));
        assert!(
            unit.text.contains(
                "ExecStart=\"/opt/tal aria/bin/talaria\" --profile \"work\" gateway run\n"
            )
        );
        assert!(
            unit.text
                .contains("Environment=\"TALARIA_HOME=/home/ana/.talaria%%1\"\n")
        );
        assert!(unit.text.contains("\nEnvironment=MALLOC_ARENA_MAX=2\n"));
        assert!(
            unit.enable_hint()
                .contains("enable --now talaria-gateway-work.service")
        );
        let default = ServiceUnit::new(Path::new("/t"), Path::new("/h"), None, Path::new("/u"));
        assert_eq!(default.name, "talaria-gateway.service");
        assert!(default.text.contains("ExecStart=\"/t\" gateway run\n"));
    }

    #[test]
    fn install_replaces_its_own_unit_and_never_a_foreign_one() {
        let dir = tempfile::tempdir().unwrap();
        let units = dir.path().join("systemd/user");
        let unit = ServiceUnit::new(Path::new("/t"), Path::new("/h"), None, &units);
        assert!(!unit.uninstall().unwrap(), "nothing to remove yet");
        unit.install().unwrap();
        unit.install().unwrap();
        assert_eq!(std::fs::read_to_string(&unit.path).unwrap(), unit.text);
        assert!(unit.uninstall().unwrap());
        assert!(!unit.path.exists());

        std::fs::write(&unit.path, "[Unit]\nDescription=mine\n").unwrap();
        assert!(matches!(unit.install(), Err(ServiceError::Foreign(_))));
        assert!(matches!(unit.uninstall(), Err(ServiceError::Foreign(_))));
        assert_eq!(
            std::fs::read_to_string(&unit.path).unwrap(),
            "[Unit]\nDescription=mine\n",
            "a foreign unit is left as it was"
        );
    }

    #[test]
    fn the_unit_directory_follows_xdg() {
        let dir = |xdg: Option<&str>, home: Option<&str>| {
            user_unit_dir(xdg.map(Path::new), home.map(Path::new))
        };
        assert_eq!(
            dir(Some("/x"), Some("/h")).unwrap(),
            Path::new("/x/systemd/user")
        );
        assert_eq!(
            dir(Some("relative"), Some("/h")).unwrap(),
            Path::new("/h/.config/systemd/user")
        );
        assert!(matches!(dir(None, None), Err(ServiceError::NoConfigDir)));
    }
}
