//! What a command may not touch on this machine, whatever it runs or however it is spelled.
//!
//! The approval layer reads a command's text; a script written earlier, a path built at run
//! time or an interpreter reading its own input are beyond it. So every process the agent
//! starts on this machine (local commands, MCP servers, the browser) starts under the
//! supervisor with a [`Confinement`], which the supervisor applies to itself before it starts
//! the program, as the kernel allows:
//!
//! 1. **A private mount namespace** (as root directly; otherwise inside a user namespace that
//!    maps only the user's own ids): the profile homes and the other control paths are bound
//!    read-only, secrets (`.env`, the plugin-cache key) are bound over by empty files or
//!    directories, `config.yaml` is shown without its keys ([`Mount::View`]); as root, a
//!    private `/proc` shows only the processes the command may ptrace (its own).
//! 2. **A Landlock domain** (Linux 5.19+, Landlock ABI 2): a process in it cannot ptrace,
//!    or read `mem`, `exe`, `fd/` of, any process outside it — the agent, its MCP servers,
//!    the browser — even as root (Linux 6.18 still lets it read their `environ` and `maps`:
//!    hence the private `/proc` above, and the agent's keys sealed out of its environment by
//!    `talaria-environ`); it cannot mount or unmount (so it cannot undo step 1); it cannot
//!    create device nodes, and cannot write `/proc`, `/sys` or raw disks (root's ways around
//!    a read-only bind).
//! 3. Where no mount namespace can be made (an unprivileged user without user namespaces),
//!    the Landlock domain also denies writes to the control paths and reads of the secrets,
//!    with rules on their siblings: then new files cannot be created directly in the
//!    directories that hold them (e.g. `~` for `~/.talaria`), which [`probe`] reports.
//!
//! What is in force is reported by [`probe`] (`talaria doctor`).

mod landlock;
mod mounts;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// One change to a command's view of the file system, applied in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// A directory or file the command sees but cannot change (nor anything under it).
    ReadOnly(PathBuf),
    /// A secret: an existing file shows as an empty one, a directory as an empty one.
    Hidden(PathBuf),
    /// A file shown with the content of another (e.g. `config.yaml` without its keys),
    /// read-only.
    View {
        /// The file commands open.
        path: PathBuf,
        /// The file whose content they see there.
        shown: PathBuf,
    },
    /// A directory that stays writable inside a read-only or hidden one (the browser's
    /// profile in the profile home).
    Writable(PathBuf),
}

/// How much of a [`Confinement`]'s protection of the control files a command gets: the user
/// may approve a command that changes them (or reads a secret), which then must be able to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Controls {
    /// Control paths read-only, secrets hidden (every command unless approved otherwise).
    #[default]
    Protected,
    /// The user approved changing a control file: homes writable, secrets still hidden.
    Writable,
    /// The user approved reading a secret: nothing hidden or read-only.
    Open,
}

/// What a process must not touch. The default confines nothing but still puts the process in
/// a Landlock domain (no ptrace or `/proc` reads of the agent, no mounts, no device nodes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Confinement {
    mounts: Vec<Mount>,
}

/// The protection a confined process actually got (from [`probe`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protection {
    /// How the control paths are kept read-only and the secrets hidden.
    pub files: FileProtection,
    /// The Landlock ABI the kernel offers (0: none).
    pub landlock_abi: i32,
    /// Whether the process is in a Landlock domain (no ptrace, `/proc` reads or mounts of
    /// processes outside it).
    pub landlock: bool,
    /// Why a step was not in force, for the report.
    pub notes: Vec<String>,
}

/// How control files are protected from a confined process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileProtection {
    /// A private mount namespace: read-only binds and hidden secrets.
    MountNamespace,
    /// Landlock rules only: writes denied under the control paths and in the directories
    /// holding them; secrets unreadable; `config.yaml` hidden rather than shown without keys.
    LandlockRules,
    /// Nothing beyond the approval layer's reading of command text.
    None,
}

impl fmt::Display for FileProtection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::MountNamespace => "mount namespace (read-only binds, secrets hidden)",
            Self::LandlockRules => "Landlock rules only (no new files beside the control paths)",
            Self::None => "none (the approval layer's text rules only)",
        })
    }
}

impl Confinement {
    /// A confinement with no mounts (the Landlock domain only).
    pub fn new() -> Self {
        Self::default()
    }

    /// Also keeps `path` read-only.
    #[must_use]
    pub fn read_only(mut self, path: impl Into<PathBuf>) -> Self {
        self.mounts.push(Mount::ReadOnly(path.into()));
        self
    }

    /// Also hides `path` (a secret).
    #[must_use]
    pub fn hidden(mut self, path: impl Into<PathBuf>) -> Self {
        self.mounts.push(Mount::Hidden(path.into()));
        self
    }

    /// Also shows `path` with `shown`'s content.
    #[must_use]
    pub fn view(mut self, path: impl Into<PathBuf>, shown: impl Into<PathBuf>) -> Self {
        self.mounts.push(Mount::View {
            path: path.into(),
            shown: shown.into(),
        });
        self
    }

    /// Also keeps `path` writable inside a read-only or hidden directory.
    #[must_use]
    pub fn writable(mut self, path: impl Into<PathBuf>) -> Self {
        self.mounts.push(Mount::Writable(path.into()));
        self
    }

    /// The mounts, in order.
    pub fn mounts(&self) -> &[Mount] {
        &self.mounts
    }

    /// Every path kept from commands (read-only or hidden), for messages and other sandboxes.
    pub fn protected_paths(&self) -> impl Iterator<Item = &Path> {
        self.mounts.iter().filter_map(|mount| match mount {
            Mount::ReadOnly(path) | Mount::Hidden(path) | Mount::View { path, .. } => {
                Some(path.as_path())
            }
            Mount::Writable(_) => None,
        })
    }

    /// This confinement as `controls` leaves it: [`Controls::Writable`] drops the read-only
    /// paths and views (secrets stay hidden), [`Controls::Open`] every mount.
    pub fn for_controls(&self, controls: Controls) -> Self {
        let mounts = self
            .mounts
            .iter()
            .filter(|mount| match controls {
                Controls::Protected => true,
                Controls::Writable => matches!(mount, Mount::Hidden(_)),
                Controls::Open => false,
            })
            .cloned()
            .collect();
        Self { mounts }
    }

    /// The supervisor's arguments for this confinement (before its `--`).
    pub(crate) fn to_args(&self) -> Vec<OsString> {
        let mut args = vec![OsString::from(CONFINE_FLAG)];
        for mount in &self.mounts {
            match mount {
                Mount::ReadOnly(path) => args.extend(["--ro".into(), path.into()]),
                Mount::Hidden(path) => args.extend(["--hide".into(), path.into()]),
                Mount::View { path, shown } => {
                    args.extend(["--view".into(), path.into(), shown.into()]);
                }
                Mount::Writable(path) => args.extend(["--rw".into(), path.into()]),
            }
        }
        args
    }

    /// Reads the mounts [`to_args`](Self::to_args) wrote from the front of `args` (which
    /// starts with [`CONFINE_FLAG`]); returns the rest.
    pub(crate) fn from_args(
        args: &mut std::iter::Peekable<impl Iterator<Item = OsString>>,
    ) -> Result<Self, String> {
        let mut confinement = Self::new();
        loop {
            let Some(flag) = args.peek().and_then(|a| a.to_str().map(str::to_owned)) else {
                return Ok(confinement);
            };
            let mut path = |what: &str| {
                args.next();
                args.next()
                    .map(PathBuf::from)
                    .filter(|p| p.is_absolute())
                    .ok_or_else(|| format!("{flag} needs an absolute path ({what})"))
            };
            let mount = match flag.as_str() {
                "--ro" => Mount::ReadOnly(path("read-only")?),
                "--hide" => Mount::Hidden(path("hidden")?),
                "--rw" => Mount::Writable(path("writable")?),
                "--view" => {
                    let target = path("view")?;
                    let shown = args
                        .next()
                        .map(PathBuf::from)
                        .filter(|p| p.is_absolute())
                        .ok_or("--view needs the file it shows")?;
                    Mount::View {
                        path: target,
                        shown,
                    }
                }
                _ => return Ok(confinement),
            };
            confinement.mounts.push(mount);
        }
    }

    /// Applies this confinement to the calling process (the supervisor, before it starts the
    /// command; single-threaded): a mount namespace where one can be made, then the Landlock
    /// domain. What could not be applied is reported, not fatal: the text rules still stand.
    pub(crate) fn apply(&self) -> Protection {
        let mut notes = Vec::new();
        let files = match mounts::apply(&self.mounts) {
            Ok(()) => FileProtection::MountNamespace,
            Err(reason) => {
                notes.push(format!("no mount namespace: {reason}"));
                FileProtection::LandlockRules
            }
        };
        let fallback = (files == FileProtection::LandlockRules).then_some(&self.mounts[..]);
        let (landlock, landlock_abi) = match landlock::restrict(fallback) {
            Ok(abi) => (true, abi),
            Err(reason) => {
                notes.push(format!("no Landlock domain: {reason}"));
                (false, 0)
            }
        };
        let files = if files == FileProtection::LandlockRules && !landlock {
            FileProtection::None
        } else {
            files
        };
        Protection {
            files,
            landlock_abi,
            landlock,
            notes,
        }
    }
}

/// The supervisor argument that starts a confinement's mounts.
pub(crate) const CONFINE_FLAG: &str = "--confine";

/// The supervisor argument that applies the confinement and prints the [`Protection`] it got
/// instead of running a program.
pub(crate) const PROBE_FLAG: &str = "--probe";

impl Protection {
    /// One line a person reads.
    pub fn summary(&self) -> String {
        let landlock = if self.landlock {
            format!("Landlock domain (ABI {})", self.landlock_abi)
        } else if self.landlock_abi > 0 {
            format!("no Landlock domain (ABI {})", self.landlock_abi)
        } else {
            "no Landlock in this kernel".to_owned()
        };
        format!("control files: {}; processes: {landlock}", self.files)
    }

    /// The text the supervisor prints for `--probe`, one `key=value` a line.
    pub(crate) fn to_lines(&self) -> String {
        let files = match self.files {
            FileProtection::MountNamespace => "mount-namespace",
            FileProtection::LandlockRules => "landlock-rules",
            FileProtection::None => "none",
        };
        let mut text = format!(
            "files={files}\nlandlock={}\nlandlock_abi={}\n",
            self.landlock, self.landlock_abi
        );
        for note in &self.notes {
            text.push_str(&format!("note={}\n", note.replace('\n', " ")));
        }
        text
    }

    /// Reads what [`to_lines`](Self::to_lines) printed.
    pub(crate) fn from_lines(text: &str) -> Option<Self> {
        let mut protection = Self {
            files: FileProtection::None,
            landlock_abi: 0,
            landlock: false,
            notes: Vec::new(),
        };
        let mut seen_files = false;
        for line in text.lines() {
            let (key, value) = line.split_once('=')?;
            match key {
                "files" => {
                    seen_files = true;
                    protection.files = match value {
                        "mount-namespace" => FileProtection::MountNamespace,
                        "landlock-rules" => FileProtection::LandlockRules,
                        _ => FileProtection::None,
                    };
                }
                "landlock" => protection.landlock = value == "true",
                "landlock_abi" => protection.landlock_abi = value.parse().unwrap_or(0),
                "note" => protection.notes.push(value.to_owned()),
                _ => {}
            }
        }
        seen_files.then_some(protection)
    }
}

/// The protection a process confined by `confinement` gets on this machine, found by starting
/// the supervisor with it (so this process stays as it is). `None` when no supervisor is
/// enabled or it could not run.
pub fn probe(confinement: &Confinement) -> Option<Protection> {
    let exe = crate::supervisor::supervisor()?;
    let output = std::process::Command::new(exe)
        .arg(crate::SUPERVISE_ARG)
        .arg(std::process::id().to_string())
        .args(confinement.to_args())
        .arg(PROBE_FLAG)
        .env_clear()
        .output()
        .ok()?;
    Protection::from_lines(&String::from_utf8_lossy(&output.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Confinement {
        Confinement::new()
            .read_only("/h/.talaria")
            .hidden("/h/.talaria/.env")
            .view("/h/.talaria/config.yaml", "/h/.talaria/state/config.view")
            .writable("/h/.talaria/tmp/browser/s1")
    }

    #[test]
    fn a_confinement_survives_the_supervisors_arguments() {
        let confinement = sample();
        let mut args = confinement.to_args();
        args.extend(["--".into(), "sh".into()]);
        let mut args = args.into_iter().peekable();
        assert_eq!(args.next().as_deref(), Some(CONFINE_FLAG.as_ref()));
        assert_eq!(Confinement::from_args(&mut args).unwrap(), confinement);
        assert_eq!(args.next().as_deref(), Some("--".as_ref()));
    }

    #[test]
    fn relative_or_missing_paths_are_refused() {
        for bad in [
            &["--ro", "rel"][..],
            &["--hide"],
            &["--view", "/a"],
            &["--view", "/a", "b"],
        ] {
            let mut args = bad.iter().map(OsString::from).peekable();
            assert!(Confinement::from_args(&mut args).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn approved_commands_lose_only_what_the_user_approved() {
        let confinement = sample();
        assert_eq!(confinement.for_controls(Controls::Protected), confinement);
        assert_eq!(
            confinement.for_controls(Controls::Writable).mounts(),
            [Mount::Hidden("/h/.talaria/.env".into())]
        );
        assert!(confinement.for_controls(Controls::Open).mounts().is_empty());
    }

    #[test]
    fn a_probe_report_reads_back() {
        let protection = Protection {
            files: FileProtection::LandlockRules,
            landlock_abi: 7,
            landlock: true,
            notes: vec!["no mount namespace: EPERM".into()],
        };
        assert_eq!(
            Protection::from_lines(&protection.to_lines()),
            Some(protection.clone())
        );
        assert!(
            protection.summary().contains("ABI 7"),
            "{}",
            protection.summary()
        );
        assert_eq!(Protection::from_lines("garbage"), None);
    }
}
