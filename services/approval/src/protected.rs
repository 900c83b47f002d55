//! Protected paths: the profile's control files (settings, keys, approvals, grants, plugins, the
//! profile list) that a command may change only with the user's approval — also in yolo mode and
//! in a sandbox — so a prompt-injected model cannot loosen its own leash. Some (secrets such as
//! the plugin cache key) are protected from reading too.
//!
//! Commands are screened on their text (see [`PathScreen`]): a command that names a protected
//! path, something inside one or a directory in a profile home holding one, with anything but a
//! read-only program, is "protected". Obfuscated spellings (paths built at run time) are not
//! seen; the bash syntax tree of a later issue closes that gap.

use std::path::{Path, PathBuf};

use crate::classifier::Finding;
use crate::normalize::normalize;
use crate::paths::resolve_lexically;
use crate::views::command_views;

/// The paths a profile protects, built by the agent from its home. Later features add theirs
/// (cron jobs, pairing files, caches) to the same lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    /// Changing these (or anything inside them) needs the user: files and whole directories.
    pub write: Vec<PathBuf>,
    /// Secrets: reading them needs the user too, and sandboxes hide them. Also write-protected.
    pub read: Vec<PathBuf>,
    /// The profile homes these paths belong to. A command naming a directory inside a home that
    /// holds a protected path (`rm -rf ~/.talaria`, `tar -xf x.tar -C ~/.talaria`) counts as
    /// naming that path.
    pub homes: Vec<PathBuf>,
}

impl ProtectedPaths {
    /// Adds `other`'s paths (duplicates are dropped).
    pub fn extend(&mut self, other: ProtectedPaths) {
        for (mine, theirs) in [
            (&mut self.write, other.write),
            (&mut self.read, other.read),
            (&mut self.homes, other.homes),
        ] {
            for path in theirs {
                if !mine.contains(&path) {
                    mine.push(path);
                }
            }
        }
    }

    /// Adds, for every path whose real location differs from its spelling (a symlink on the
    /// way, such as a `TALARIA_HOME` reached through one), the real location too, so checks of
    /// resolved paths (file tools, plugins) find it. Parts that do not exist yet are kept as
    /// spelled below the deepest existing directory.
    pub fn with_resolved(mut self) -> Self {
        let resolve = |list: &[PathBuf]| -> Vec<PathBuf> {
            list.iter()
                .filter_map(|path| resolve_existing(path))
                .filter(|real| !list.contains(real))
                .collect()
        };
        let extra = ProtectedPaths {
            write: resolve(&self.write),
            read: resolve(&self.read),
            homes: resolve(&self.homes),
        };
        self.extend(extra);
        self
    }

    /// Whether nothing is protected.
    pub fn is_empty(&self) -> bool {
        self.write.is_empty() && self.read.is_empty()
    }

    /// The paths a sandbox must hide (the read-protected ones).
    pub fn hidden(&self) -> &[PathBuf] {
        &self.read
    }

    /// The protected path that writing to (or deleting, replacing) `path` would change, if any:
    /// `path` is a protected path, is inside one, or is a directory in a home that holds one.
    /// `path` should be absolute and resolved (symlinks too) by the caller.
    pub fn write_protected(&self, path: &Path) -> Option<&Path> {
        let compiled = Compiled::new(self);
        let target = segments(&path.to_string_lossy().to_lowercase());
        compiled
            .related(&target, Access::Write)
            .map(|index| self.entry(index))
    }

    /// The read-protected path that reading `path` would reveal, if any (same rules as
    /// [`write_protected`](Self::write_protected)).
    pub fn read_protected(&self, path: &Path) -> Option<&Path> {
        let compiled = Compiled::new(self);
        let target = segments(&path.to_string_lossy().to_lowercase());
        compiled
            .related(&target, Access::Read)
            .map(|index| self.entry(index))
    }

    /// Entry `index` of `read` followed by `write`.
    fn entry(&self, index: usize) -> &Path {
        self.read
            .iter()
            .chain(&self.write)
            .nth(index)
            .map_or(Path::new(""), PathBuf::as_path)
    }
}

/// `path` with its deepest existing ancestor canonicalised (symlinks resolved) and the rest
/// appended, `.` and `..` in that rest resolved lexically (it does not exist, so holds no
/// symlinks). `None` for a relative path.
pub fn resolve_existing(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let parts: Vec<_> = path.components().collect();
    (1..=parts.len()).rev().find_map(|keep| {
        let base: PathBuf = parts[..keep].iter().collect();
        let real = base.canonicalize().ok()?;
        let joined: PathBuf = std::iter::once(real.as_os_str())
            .chain(parts[keep..].iter().map(|part| part.as_os_str()))
            .collect();
        Some(PathBuf::from(resolve_lexically(&joined.to_string_lossy())))
    })
}

/// What the screen needs to read paths in a command as the shell would.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathContext {
    /// The directory commands run in (relative paths are resolved against it).
    pub cwd: Option<PathBuf>,
    /// `~` and `$HOME`.
    pub home_dir: Option<PathBuf>,
    /// `$TALARIA_HOME`: the active profile's home.
    pub talaria_home: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// The entries as lower-cased path segments (read entries first), ready for matching.
#[derive(Debug, Default)]
struct Compiled {
    entries: Vec<Vec<String>>,
    reads: usize,
    homes: Vec<Vec<String>>,
}

impl Compiled {
    fn new(paths: &ProtectedPaths) -> Self {
        let lower = |p: &PathBuf| segments(&p.to_string_lossy().to_lowercase());
        Self {
            entries: paths.read.iter().chain(&paths.write).map(lower).collect(),
            reads: paths.read.len(),
            homes: paths.homes.iter().map(lower).collect(),
        }
    }

    /// The first entry `target` (segments, possibly with globs) touches for `access`. `Read`
    /// considers read entries only; `Write` every entry. A directory above an entry counts only
    /// when it lies in a home (so `/tmp` or `/` do not make every command protected).
    fn related(&self, target: &[String], access: Access) -> Option<usize> {
        self.related_with(target, access, true)
    }

    fn related_with(&self, target: &[String], access: Access, ancestors: bool) -> Option<usize> {
        // Writes try the write entries first, so a finding names the control file rather than
        // a secret next to it.
        let order: Vec<usize> = match access {
            Access::Read => (0..self.reads).collect(),
            Access::Write => (self.reads..self.entries.len())
                .chain(0..self.reads)
                .collect(),
        };
        order.into_iter().find(|&index| {
            let entry = &self.entries[index];
            let common = target.len().min(entry.len());
            let prefix_matches = target[..common]
                .iter()
                .zip(&entry[..common])
                .all(|(t, e)| segment_matches(t, e));
            if !prefix_matches {
                return false;
            }
            target.len() >= entry.len() || (ancestors && self.in_a_home(target))
        })
    }

    fn in_a_home(&self, target: &[String]) -> bool {
        self.homes.iter().any(|home| {
            target.len() >= home.len()
                && target.iter().zip(home).all(|(t, h)| segment_matches(t, h))
        })
    }
}

/// Path segments of an absolute path (`/a/b/` → `["a", "b"]`).
fn segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .map(str::to_owned)
        .collect()
}

/// Whether a segment (possibly a glob) names `name`. `*` and `?` do not match a leading dot,
/// as in the shell; a `[…]` class counts as any one character (conservative).
fn segment_matches(pattern: &str, name: &str) -> bool {
    if !pattern.contains(['*', '?', '[']) {
        return pattern == name;
    }
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    glob(pattern.as_bytes(), name.as_bytes())
}

fn glob(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| glob(rest, &name[i..])),
        Some((b'?', rest)) => !name.is_empty() && glob(rest, &name[1..]),
        Some((b'[', rest)) => match rest.iter().position(|&c| c == b']') {
            Some(close) => !name.is_empty() && glob(&rest[close + 1..], &name[1..]),
            None => name.first() == Some(&b'[') && glob(rest, &name[1..]),
        },
        Some((c, rest)) => name.first() == Some(c) && glob(rest, &name[1..]),
    }
}

/// Programs that only read the paths they are given (their output may still be redirected,
/// which is checked separately).
const READERS: &[&str] = &[
    "cat",
    "less",
    "more",
    "head",
    "tail",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "ls",
    "ll",
    "dir",
    "stat",
    "wc",
    "diff",
    "cmp",
    "file",
    "du",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "bat",
    "batcat",
    "nl",
    "od",
    "hexdump",
    "strings",
    "realpath",
    "readlink",
    "basename",
    "dirname",
    "test",
    "[",
    "[[",
    "cd",
    "pushd",
    "popd",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "tree",
    "jq",
    "which",
    "type",
];

/// Programs that only look at names and metadata: naming the directory a secret is in is fine.
const NAVIGATORS: &[&str] = &[
    "ls", "ll", "dir", "stat", "du", "cd", "pushd", "test", "[", "[[", "realpath", "readlink",
    "basename", "dirname", "pwd", "tree", "file",
];

/// Screens command text for protected paths.
#[derive(Debug, Default)]
pub(crate) struct PathScreen {
    compiled: Compiled,
    /// Protected entries in their original spelling (read entries first), for messages.
    shown: Vec<PathBuf>,
    /// Variable spellings (normalised) and the absolute, lower-cased directory they stand for.
    vars: Vec<(String, String)>,
    cwd: Option<String>,
}

impl PathScreen {
    pub(crate) fn new(paths: &ProtectedPaths, context: &PathContext) -> Self {
        let lower = |p: &Path| p.to_string_lossy().to_lowercase();
        let mut vars = Vec::new();
        if let Some(dir) = &context.talaria_home {
            for spelling in ["${talaria_home}", "$talaria_home"] {
                vars.push((spelling.to_owned(), lower(dir)));
            }
        }
        if let Some(dir) = &context.home_dir {
            for spelling in ["${home}", "$home", "~"] {
                vars.push((spelling.to_owned(), lower(dir)));
            }
        }
        Self {
            compiled: Compiled::new(paths),
            shown: paths.read.iter().chain(&paths.write).cloned().collect(),
            vars,
            cwd: context.cwd.as_deref().map(lower),
        }
    }

    /// The finding for `command` if it reads a read-protected path or changes a protected one.
    /// `cwd` overrides the configured working directory.
    pub(crate) fn screen(&self, command: &str, cwd: Option<&Path>) -> Option<Finding> {
        if self.compiled.entries.is_empty() {
            return None;
        }
        let line = normalize(command);
        let views = command_views(&line);
        let mut bases: Vec<String> = cwd
            .map(|c| c.to_string_lossy().to_lowercase())
            .or_else(|| self.cwd.clone())
            .into_iter()
            .collect();
        // `cd DIR && sed -i … config.yaml`: relative names may be relative to DIR too.
        for view in &views {
            let mut words = view.split(' ');
            if matches!(words.next(), Some("cd" | "pushd"))
                && let Some(dir) = words.find(|w| !w.starts_with('-'))
                && let Some(dir) = self.absolute(dir, None)
            {
                bases.push(dir);
            }
        }
        if bases.is_empty() {
            bases.push(String::new());
        }
        for view in &views {
            if let Some(finding) = self.screen_view(view, &bases) {
                return Some(finding);
            }
        }
        None
    }

    fn screen_view(&self, view: &str, bases: &[String]) -> Option<Finding> {
        let first = view.split(' ').next().unwrap_or_default();
        let name = first.rsplit('/').next().unwrap_or(first);
        let writes = !READERS.contains(&name) || writes_by_redirect(view);
        let navigates = NAVIGATORS.contains(&name) && !writes;
        for token in view.split(|c: char| c == ' ' || c == '=' || ends_path(c)) {
            if token.is_empty() || token.starts_with('-') {
                continue;
            }
            for base in bases {
                let Some(path) = self.absolute(token, Some(base)) else {
                    continue;
                };
                let target = segments(&path);
                if writes && let Some(index) = self.compiled.related(&target, Access::Write) {
                    let access = if index < self.compiled.reads {
                        Access::Read
                    } else {
                        Access::Write
                    };
                    return Some(self.finding(index, access));
                }
                if let Some(index) = self
                    .compiled
                    .related_with(&target, Access::Read, !navigates)
                {
                    return Some(self.finding(index, Access::Read));
                }
            }
        }
        None
    }

    /// `token` as an absolute, lexically resolved path: variables and `~` expanded, relative
    /// paths joined to `base`. `None` when it cannot be placed.
    fn absolute(&self, token: &str, base: Option<&str>) -> Option<String> {
        let mut expanded = None;
        for (spelling, dir) in &self.vars {
            if let Some(rest) = token.strip_prefix(spelling.as_str())
                && (rest.is_empty() || rest.starts_with('/'))
            {
                expanded = Some(format!("{dir}{rest}"));
                break;
            }
        }
        let path = match expanded {
            Some(path) => path,
            None if token.starts_with('/') => token.to_owned(),
            // An unknown variable or `~user`: not a path we can place.
            None if token.starts_with(['$', '~']) => return None,
            None => format!("{}/{token}", base.filter(|b| !b.is_empty())?),
        };
        Some(resolve_lexically(&path))
    }

    fn finding(&self, index: usize, access: Access) -> Finding {
        let path = self
            .shown
            .get(index)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        match access {
            Access::Read => Finding {
                id: "protected-read".into(),
                description: format!("reads a protected secret of the Talaria profile ({path})"),
            },
            Access::Write => Finding {
                id: "protected-write".into(),
                description: format!(
                    "changes a protected control file of the Talaria profile ({path})"
                ),
            },
        }
    }
}

/// Characters that end a path inside a word (shell operators and code punctuation).
fn ends_path(c: char) -> bool {
    matches!(
        c,
        ';' | '|' | '&' | '<' | '>' | '(' | ')' | '`' | ',' | '\'' | '"' | ':'
    )
}

/// Whether `view` redirects output into a file (`>`, `>>`, `>|`, `&>`, `<>`), not counting
/// duplications (`2>&1`) and `/dev/null`, `/dev/stdout`, `/dev/stderr`.
fn writes_by_redirect(view: &str) -> bool {
    let mut rest = view;
    while let Some(at) = rest.find('>') {
        let after = rest[at + 1..].trim_start_matches(['>', '|']);
        let (dup, target) = match after.strip_prefix('&') {
            Some(target) => (true, target),
            None => (false, after),
        };
        let target = target.trim_start();
        let word = target.split([' ', ';', '|', '&', ')']).next().unwrap_or("");
        let harmless = (dup && (word == "-" || word.chars().all(|c| c.is_ascii_digit())))
            || matches!(word, "/dev/null" | "/dev/stdout" | "/dev/stderr");
        if !harmless {
            return true;
        }
        rest = &rest[at + 1..];
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> ProtectedPaths {
        ProtectedPaths {
            write: vec![
                "/h/.talaria/config.yaml".into(),
                "/h/.talaria/plugins".into(),
                "/h/.talaria/.env".into(),
            ],
            read: vec!["/h/.talaria/cache/plugins.key".into()],
            homes: vec!["/h/.talaria".into()],
        }
    }

    fn screen(command: &str, cwd: &str) -> Option<String> {
        let context = PathContext {
            cwd: Some(cwd.into()),
            home_dir: Some("/h".into()),
            talaria_home: Some("/h/.talaria".into()),
        };
        PathScreen::new(&paths(), &context)
            .screen(command, None)
            .map(|f| f.id)
    }

    #[test]
    fn writes_of_any_spelling_are_protected() {
        for command in [
            "sed -i 's/ask/yolo/' ~/.talaria/config.yaml",
            "sed --in-place s/a/b/ $HOME/.talaria/config.yaml",
            "perl -pi -e s/a/b/ ${TALARIA_HOME}/config.yaml",
            "echo x >> \"$TALARIA_HOME/config.yaml\"",
            "cp /tmp/x.yaml /h/.talaria/config.yaml",
            "cat x | tee /h/.talaria/.env",
            "rm -rf ~/.talaria/plugins/terminal",
            "rm -rf ~/.talaria",
            "mv ~/.talaria ~/old",
            "tar -xf evil.tar -C ~/.talaria",
            "cd ~/.talaria && sed -i s/a/b/ config.yaml",
            "sed -i s/a/b/ config.yaml",
            "python3 -c \"open('/h/.talaria/config.yaml','w').write('x')\"",
            "python3 - <<EOF\nopen('/h/.talaria/config.yaml', 'w')\nEOF",
            "cp x /h/.talaria/c*.yaml",
            "rm -rf /h/.talaria/*",
            "dd if=x of=/h/.talaria/config.yaml",
            "ln -sf /tmp/evil /h/.talaria/plugins",
            "echo x > /h/.talaria/../.talaria/config.yaml",
            "cp x /h/.talaria/{config.yaml,a}",
        ] {
            assert_eq!(
                screen(command, "/h/.talaria").as_deref(),
                Some("protected-write"),
                "{command}"
            );
        }
    }

    #[test]
    fn reading_control_files_and_unrelated_work_is_not() {
        for (command, cwd) in [
            ("cat ~/.talaria/config.yaml", "/work"),
            ("grep model $TALARIA_HOME/config.yaml", "/work"),
            ("ls -la ~/.talaria", "/work"),
            ("sed -i s/a/b/ config.yaml", "/work/project"),
            ("cat config.yaml > /tmp/copy.yaml", "/work"),
            ("echo hi > ~/notes.txt", "/work"),
            ("rm -rf /tmp/build", "/work"),
            ("cat ~/.talaria/config.yaml 2>/dev/null", "/work"),
            ("cargo build 2>&1 | tee build.log", "/work"),
            ("cp a.txt b.txt", "/h"),
        ] {
            assert_eq!(screen(command, cwd), None, "{command}");
        }
    }

    #[test]
    fn secrets_are_protected_from_reading() {
        for command in [
            "cat ~/.talaria/cache/plugins.key",
            "base64 /h/.talaria/cache/*.key",
            "grep -r x ~/.talaria",
            "xxd ~/.talaria/cache/plugins.key",
        ] {
            assert_eq!(
                screen(command, "/work").as_deref(),
                Some("protected-read"),
                "{command}"
            );
        }
        assert_eq!(screen("ls ~/.talaria/cache", "/work"), None);
    }

    #[test]
    fn direct_path_checks_for_the_file_tools() {
        let paths = paths();
        assert!(
            paths
                .write_protected(Path::new("/h/.talaria/config.yaml"))
                .is_some()
        );
        assert!(
            paths
                .write_protected(Path::new("/h/.talaria/plugins/x/p.wasm"))
                .is_some()
        );
        assert!(paths.write_protected(Path::new("/h/.talaria")).is_some());
        assert!(
            paths
                .write_protected(Path::new("/h/.talaria/MEMORY.md"))
                .is_none()
        );
        assert!(paths.write_protected(Path::new("/h")).is_none());
        assert!(
            paths
                .read_protected(Path::new("/h/.talaria/cache/plugins.key"))
                .is_some()
        );
        assert!(
            paths
                .read_protected(Path::new("/h/.talaria/config.yaml"))
                .is_none()
        );
        assert_eq!(
            paths.hidden(),
            [PathBuf::from("/h/.talaria/cache/plugins.key")]
        );
    }

    #[test]
    fn globs_follow_the_shell() {
        assert!(segment_matches("c*.yaml", "config.yaml"));
        assert!(!segment_matches("*", ".env"));
        assert!(segment_matches(".e*", ".env"));
        assert!(segment_matches("[ab]x", "ax"));
        assert!(!segment_matches("*.txt", "config.yaml"));
    }
}
