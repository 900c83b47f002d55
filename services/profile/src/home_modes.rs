//! Keeps the profile home private to its user: the home and the directories
//! Talaria creates in it are 0700 and its files 0600, whatever the umask. The
//! home holds keys (`.env`, `config.yaml`), every session's transcript, tool
//! output and logs, none of which other users of the machine may read.
//!
//! The process umask is left alone on purpose: the commands the agent runs
//! inherit it, and files they create in the user's projects keep their usual
//! modes. Writers in the home set modes explicitly instead, and [`repair`]
//! tightens a home created by an older Talaria (or by hand) on start.

use std::fs::{self, Metadata};
use std::io;
use std::path::Path;

/// Mode of the home and of the directories created in it.
pub const DIR_MODE: u32 = 0o700;
/// Mode of the files created in the home.
pub const FILE_MODE: u32 = 0o600;

/// Bits that let other users read, write or enter.
const OTHERS: u32 = 0o077;

/// Creates `dir` and its missing parents, each 0700 (existing ones are left as
/// they are).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
    }
    #[cfg(not(unix))]
    fs::create_dir_all(dir)
}

/// Writes `bytes` to `path`: a new file is created 0600; an existing one loses
/// any access by other users before it is written.
pub fn write_private(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    use std::io::Write;
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(FILE_MODE);
    }
    let mut file = options.open(path)?;
    tighten(path, &file.metadata()?)?;
    file.write_all(bytes.as_ref())
}

/// Creates `path` empty and 0600 unless it exists (then only takes other users' access
/// away): for a file something else opens next (a SQLite database, a lock file), so it is
/// private whatever the umask.
pub fn create_private_file(path: &Path) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(FILE_MODE);
    }
    let file = options.open(path)?;
    tighten(path, &file.metadata()?).map(drop)
}

/// SQLite's journals beside the database `db` (`-wal`, `-shm`), made private when present
/// (SQLite gives them the database's mode, but a file from an older version may be open).
pub fn tighten_sqlite_journals(db: &Path) {
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut journal = db.as_os_str().to_owned();
        journal.push(suffix);
        let journal = Path::new(&journal);
        if let Ok(meta) = fs::metadata(journal) {
            let _ = tighten(journal, &meta);
        }
    }
}

/// Removes other users' access to `path`; `Ok(true)` when its mode changed.
/// The owner's bits (an executable script stays executable) are kept.
pub fn tighten(path: &Path, meta: &Metadata) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        if mode & OTHERS == 0 {
            return Ok(false);
        }
        fs::set_permissions(path, fs::Permissions::from_mode(mode & !OTHERS & 0o7777))?;
        Ok(true)
    }
    #[cfg(not(unix))]
    {
        let _ = (path, meta);
        Ok(false)
    }
}

/// What [`repair`] changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Repaired {
    /// Entries whose mode was tightened.
    pub tightened: usize,
    /// Entries that could not be changed (owned by someone else, …).
    pub failed: usize,
    /// The home itself let other users in, so what was tightened had really
    /// been readable by them (inside a private home it had not).
    pub home_was_open: bool,
}

impl Repaired {
    /// The one line to show the user, when files had been exposed. Files
    /// tightened inside an already private home (written by a tool that
    /// followed the umask) were never reachable: that is fixed silently.
    pub fn notice(&self, root: &Path) -> Option<String> {
        if !self.home_was_open {
            return None;
        }
        let root = root.display();
        match (self.tightened, self.failed) {
            (0, 0) => None,
            (n, 0) => Some(format!(
                "talaria: tightened permissions of {n} {} in {root} (they were readable by other \
                 users)",
                plural(n)
            )),
            (n, failed) => Some(format!(
                "talaria: tightened permissions of {n} {} in {root} (they were readable by other \
                 users); {failed} more could not be changed: check them with `ls -la {root}`",
                plural(n)
            )),
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "file" } else { "files" }
}

/// Directories other parts of Talaria create in the home on demand (the
/// plugin host, the REPL, scripts). Made here first, 0700, so that whoever
/// creates them later finds them private whatever the umask.
const CREATED_DIRS: &[&str] = &["state", "sessions", "logs", "cache", "plugin-data", "tmp"];

/// The files Talaria keeps at the top of a home. Only these (and
/// [`HOME_DIRS`]) are touched, so a home pointed at a directory that holds
/// other things (`TALARIA_HOME=~`) keeps the modes of those things.
const HOME_FILES: &[&str] = &[
    "config.yaml",
    "config.yaml.bak",
    "config.yaml.tmp",
    ".env",
    "approvals.toml",
    "plugin-grants.yaml",
    "plugin-grants.v1.yaml",
    "trusted-dirs",
    "active-profile",
    "SOUL.md",
    "MEMORY.md",
    "USER.md",
    ".memory.lock",
    "plugins.lock",
    "gateway.db",
    "api_server.db",
    "plugin-indexes.toml",
];

/// The directories Talaria keeps at the top of a home.
const HOME_DIRS: &[&str] = &[
    "state",
    "sessions",
    "logs",
    "cache",
    "plugin-data",
    "tmp",
    "plugins",
    "skills",
    "skins",
    "profiles",
];

/// Makes the home at `root` private: creates it 0700 when missing; otherwise
/// takes other users' access away from the home, the files Talaria keeps at
/// its top level (config, `.env`, approvals, grants, memory, …) and its
/// directories.
/// A directory that was open to others is tightened with all its content; one
/// that was already private is not walked (so a large `sessions/` costs one
/// stat per start), except the small ones holding databases, logs and caches.
/// Symbolic links are never followed below the home itself. The directories
/// Talaria fills later are created 0700 when missing.
pub fn repair(root: &Path) -> Repaired {
    let mut repaired = Repaired::default();
    let meta = match fs::metadata(root) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if create_private_dir(root).is_err() {
                repaired.failed += 1;
            }
            create_missing_dirs(root);
            return repaired;
        }
        Err(_) => return repaired,
    };
    if !meta.is_dir() {
        return repaired;
    }
    repaired.home_was_open = note(&mut repaired, tighten(root, &meta));
    repair_entries(root, &mut repaired);
    create_missing_dirs(root);
    repaired
}

fn create_missing_dirs(root: &Path) {
    for name in CREATED_DIRS {
        let dir = root.join(name);
        if fs::symlink_metadata(&dir).is_err() {
            // Best effort: the writer that needs it reports a failure itself.
            let _ = create_private_dir(&dir);
        }
    }
}

fn repair_entries(root: &Path, repaired: &mut Repaired) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_file() && HOME_FILES.contains(&name) {
            note(repaired, tighten(&path, &meta));
        } else if meta.is_dir() && HOME_DIRS.contains(&name) {
            let loose = note(repaired, tighten(&path, &meta));
            let small = matches!(name, "state" | "logs" | "cache");
            if loose || small {
                tighten_within(&path, repaired, 0);
            }
        }
    }
}

/// Deepest level walked below a top-level directory (a bound, not a limit
/// any home reaches: sessions are `sessions/<id>/tool-output/<file>`).
const MAX_DEPTH: usize = 16;

fn tighten_within(dir: &Path, repaired: &mut Repaired, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_file() || meta.is_dir() {
            note(repaired, tighten(&path, &meta));
        }
        if meta.is_dir() {
            tighten_within(&path, repaired, depth + 1);
        }
    }
}

/// Counts one tightening; whether the entry had been open to others.
fn note(repaired: &mut Repaired, result: io::Result<bool>) -> bool {
    match result {
        Ok(changed) => {
            repaired.tightened += usize::from(changed);
            changed
        }
        Err(_) => {
            repaired.failed += 1;
            true
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used)] // test helpers outside #[test]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    fn set_mode(path: &Path, mode: u32) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_missing_home_is_created_private() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("a/home");
        assert_eq!(repair(&root).notice(&root), None);
        assert_eq!(mode(&root), 0o700);
        for name in CREATED_DIRS {
            assert_eq!(mode(&root.join(name)), 0o700, "{name}");
        }
    }

    #[test]
    fn an_open_home_is_tightened_once_with_one_notice() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("home");
        for sub in ["state", "sessions/s1/tool-output", "logs", "skills/x"] {
            fs::create_dir_all(root.join(sub)).unwrap();
        }
        let files = [
            "config.yaml",
            "config.yaml.bak",
            ".env",
            "approvals.toml",
            "MEMORY.md",
            "state/sessions.sqlite",
            "state/sessions.sqlite-wal",
            "sessions/s1/tool-output/c1.txt",
            "logs/plugins.log",
        ];
        for file in files {
            fs::write(root.join(file), "secret").unwrap();
            set_mode(&root.join(file), 0o644);
        }
        fs::write(root.join("skills/x/run.sh"), "#!/bin/sh").unwrap();
        set_mode(&root.join("skills/x/run.sh"), 0o755);
        for d in [
            "",
            "state",
            "sessions",
            "sessions/s1",
            "sessions/s1/tool-output",
            "logs",
            "skills",
            "skills/x",
        ] {
            set_mode(&root.join(d), 0o755);
        }
        // A link to a file outside the home is not followed.
        let outside = dir.path().join("outside.txt");
        fs::write(&outside, "not ours").unwrap();
        set_mode(&outside, 0o644);
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        // What is not Talaria's keeps its mode (a home may be a shared directory).
        fs::create_dir_all(root.join("projects")).unwrap();
        fs::write(root.join("notes.txt"), "mine").unwrap();
        for other in ["projects", "notes.txt"] {
            set_mode(&root.join(other), 0o755);
        }

        let repaired = repair(&root);
        assert_eq!(repaired.failed, 0);
        assert_eq!(repaired.tightened, files.len() + 9, "{repaired:?}");
        let notice = repaired.notice(&root).unwrap();
        assert!(
            notice.starts_with("talaria: tightened permissions of 18 files in ")
                && notice.contains("readable by other users"),
            "{notice}"
        );
        assert_eq!(mode(&root), 0o700);
        for file in files {
            assert_eq!(mode(&root.join(file)), 0o600, "{file}");
        }
        assert_eq!(mode(&root.join("sessions/s1/tool-output")), 0o700);
        assert_eq!(
            mode(&root.join("skills/x/run.sh")),
            0o700,
            "owner bits kept"
        );
        assert_eq!(mode(&outside), 0o644, "links are not followed");
        assert_eq!(mode(&root.join("projects")), 0o755);
        assert_eq!(mode(&root.join("notes.txt")), 0o755);

        let again = repair(&root);
        assert_eq!((again.tightened, again.failed), (0, 0));
        assert_eq!(again.notice(&root), None, "nothing to say the second time");
    }

    #[test]
    fn small_private_directories_are_checked_even_when_closed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        set_mode(root, 0o700);
        fs::create_dir_all(root.join("state")).unwrap();
        set_mode(&root.join("state"), 0o700);
        fs::write(root.join("state/history"), "ls").unwrap();
        set_mode(&root.join("state/history"), 0o644);
        let repaired = repair(root);
        assert_eq!(repaired.tightened, 1);
        assert_eq!(mode(&root.join("state/history")), 0o600);
        assert_eq!(repaired.notice(root), None, "it was never exposed");
    }

    #[test]
    fn private_writes_and_dirs_ignore_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("x/y");
        create_private_dir(&sub).unwrap();
        assert_eq!(mode(&sub), 0o700);
        assert_eq!(mode(&dir.path().join("x")), 0o700);
        let file = sub.join("f");
        fs::write(&file, "old").unwrap();
        set_mode(&file, 0o664);
        write_private(&file, "new").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        write_private(&sub.join("g"), "g").unwrap();
        assert_eq!(mode(&sub.join("g")), 0o600);
    }
}
