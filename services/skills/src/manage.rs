//! `skill_manage`: creating and changing skills in the writable root.
//!
//! Every operation is scoped to one skill's directory, checks sizes and the
//! caller's threat scanner before touching the disk (a refused write changes
//! nothing), writes atomically, and refreshes the index so later
//! `skill_view` / `skills_list` calls see the change.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::atomic::write_atomic;
use crate::error::SkillError;
use crate::files::{read_skill_md, read_text};
use crate::frontmatter::normalize;
use crate::index::{GENERAL_CATEGORY, Skill, SkillIndex, SkillRoots};
use crate::issue::SkillIssue;
use crate::limits::{MAX_SKILL_FILE_BYTES, MAX_SKILL_MD_WRITE_BYTES};
use crate::meta::{ParseMode, parse_skill_md};
use crate::name::validate_name;
use crate::patch::replace;
use crate::paths::{refuse_symlinks, relative};

/// The threat scanner the caller supplies (the memory crate owns the real
/// one): `Err(reason)` refuses the text.
pub type Scanner<'a> = &'a dyn Fn(&str) -> Result<(), String>;

/// The directories `write_file` may put files in.
const FILE_DIRS: [&str; 4] = ["references", "templates", "scripts", "assets"];

/// What a successful operation did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManageOutcome {
    /// The action performed.
    pub action: &'static str,
    /// The skill.
    pub name: String,
    /// The file or directory written or removed.
    pub path: PathBuf,
    /// A sentence for the model.
    pub message: String,
}

/// Owns the index and changes skills in its writable root.
#[derive(Debug, Clone, Default)]
pub struct SkillManager {
    index: SkillIndex,
}

impl SkillManager {
    /// Manages an already loaded index.
    pub fn new(index: SkillIndex) -> Self {
        Self { index }
    }

    /// Loads the index and manages it.
    pub fn load(roots: SkillRoots) -> (Self, Vec<SkillIssue>) {
        let (index, issues) = SkillIndex::load(roots);
        (Self { index }, issues)
    }

    /// The current index (reflects every change made through the manager).
    pub fn index(&self) -> &SkillIndex {
        &self.index
    }

    /// Re-reads the roots (picks up changes made outside the manager).
    pub fn reload(&mut self) -> Vec<SkillIssue> {
        self.index.reload()
    }

    /// Creates `<root>/<category>/<name>/SKILL.md` (or `<root>/<name>/` with
    /// no category). `content` is the whole file; its frontmatter name must
    /// be `name`. Refuses a name that exists anywhere, bundled included.
    pub fn create(
        &mut self,
        name: &str,
        category: Option<&str>,
        content: &str,
        scan: Scanner<'_>,
    ) -> Result<ManageOutcome, SkillError> {
        validate_name(name)?;
        let category = category.map(str::trim).filter(|c| !c.is_empty());
        if let Some(category) = category {
            validate_name(category)?;
        }
        if let Some(existing) = self.index.get(name) {
            let kind = if existing.bundled { "bundled" } else { "yours" };
            return Err(SkillError::AlreadyExists {
                name: name.to_owned(),
                detail: format!("{kind}, category '{}'", existing.category),
            });
        }
        check_skill_md(content, name)?;
        run_scan(scan, content)?;

        let root = self.index.roots().user.clone();
        let parent = category.map_or_else(|| root.clone(), |category| root.join(category));
        if parent != root && parent.join("SKILL.md").exists() {
            return Err(SkillError::Argument(format!(
                "'{}' is a skill, not a category; choose another category",
                category.unwrap_or_default()
            )));
        }
        private_dirs(&parent).map_err(|e| SkillError::io("create", &parent, e))?;
        let dir = parent.join(name);
        // create_dir (not _all) so an existing directory, even a category
        // one, is never taken over.
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                return Err(SkillError::AlreadyExists {
                    name: name.to_owned(),
                    detail: format!("directory {} exists", dir.display()),
                });
            }
            Err(error) => return Err(SkillError::io("create", &dir, error)),
        }
        if let Err(error) = write_atomic(&dir.join("SKILL.md"), content.as_bytes()) {
            let _ = fs::remove_dir_all(&dir);
            return Err(error);
        }
        self.refresh(&dir);
        Ok(ManageOutcome {
            action: "create",
            name: name.to_owned(),
            path: dir,
            message: format!(
                "Created skill '{name}' in category '{}'. skill_view can read it now; the skill \
                 index in the system prompt lists it from the next session.",
                category.unwrap_or(GENERAL_CATEGORY)
            ),
        })
    }

    /// Replaces a skill's whole `SKILL.md`; the name must stay the same.
    pub fn edit(
        &mut self,
        name: &str,
        content: &str,
        scan: Scanner<'_>,
    ) -> Result<ManageOutcome, SkillError> {
        let skill = self.writable(name)?;
        check_skill_md(content, &skill.meta.name)?;
        run_scan(scan, content)?;
        let path = skill.skill_md();
        write_atomic(&path, content.as_bytes())?;
        self.refresh(&skill.dir);
        Ok(outcome("edit", &skill, path, "Replaced SKILL.md."))
    }

    /// Replaces `old` by `new` in `SKILL.md` (no `file_path`) or in one of
    /// the skill's text files: exactly one occurrence unless `replace_all`.
    /// A patched `SKILL.md` must still be valid and keep its name.
    pub fn patch(
        &mut self,
        name: &str,
        file_path: Option<&str>,
        old: &str,
        new: &str,
        replace_all: bool,
        scan: Scanner<'_>,
    ) -> Result<ManageOutcome, SkillError> {
        let skill = self.writable(name)?;
        let rel = match file_path.map(str::trim).filter(|p| !p.is_empty()) {
            Some(file_path) => Some((relative(file_path)?, file_path)),
            None => None,
        };
        let target = rel.filter(|(rel, _)| rel != Path::new("SKILL.md"));
        let Some((rel, shown)) = target else {
            let path = skill.skill_md();
            // Patch the LF, BOM-free form the model saw via skill_view, so a
            // file saved with CRLF endings still matches.
            let text = normalize(&read_skill_md(&path)?).into_owned();
            let patched = replace(&text, old, new, replace_all, "SKILL.md")?;
            check_skill_md(&patched, &skill.meta.name)?;
            run_scan(scan, &patched)?;
            write_atomic(&path, patched.as_bytes())?;
            self.refresh(&skill.dir);
            return Ok(outcome("patch", &skill, path, "Patched SKILL.md."));
        };
        refuse_symlinks(&skill.dir, &rel, shown)?;
        let path = skill.dir.join(&rel);
        if !path.is_file() {
            return Err(SkillError::InvalidPath {
                path: shown.to_owned(),
                reason: "no such file in this skill; skill_view(name) lists its files".to_owned(),
            });
        }
        let text = read_text(&path, MAX_SKILL_FILE_BYTES, shown)?;
        let patched = replace(&text, old, new, replace_all, shown)?;
        check_size(shown, patched.len(), MAX_SKILL_FILE_BYTES)?;
        run_scan(scan, &patched)?;
        write_atomic(&path, patched.as_bytes())?;
        Ok(outcome("patch", &skill, path, &format!("Patched {shown}.")))
    }

    /// Deletes a skill's whole directory (never a bundled skill), and its
    /// category directory when that is left empty.
    pub fn delete(&mut self, name: &str) -> Result<ManageOutcome, SkillError> {
        let skill = self.writable(name)?;
        let root = self.index.roots().user.clone();
        if skill.dir == root || !skill.dir.starts_with(&root) {
            return Err(SkillError::ReadOnly(skill.meta.name.clone()));
        }
        fs::remove_dir_all(&skill.dir).map_err(|e| SkillError::io("delete", &skill.dir, e))?;
        if let Some(parent) = skill.dir.parent().filter(|parent| *parent != root) {
            // Only succeeds when the category is now empty.
            let _ = fs::remove_dir(parent);
        }
        self.refresh(&skill.dir);
        let path = skill.dir.clone();
        Ok(outcome("delete", &skill, path, "Deleted the skill."))
    }

    /// Writes a supporting file under `references/`, `templates/`,
    /// `scripts/` or `assets/`, replacing any file already there.
    pub fn write_file(
        &mut self,
        name: &str,
        file_path: &str,
        content: &str,
        scan: Scanner<'_>,
    ) -> Result<ManageOutcome, SkillError> {
        let skill = self.writable(name)?;
        let rel = supporting_path(file_path)?;
        check_size(file_path, content.len(), MAX_SKILL_FILE_BYTES)?;
        refuse_symlinks(&skill.dir, &rel, file_path)?;
        let path = skill.dir.join(&rel);
        if path.is_dir() {
            return Err(SkillError::InvalidPath {
                path: file_path.to_owned(),
                reason: "it is a directory".to_owned(),
            });
        }
        run_scan(scan, content)?;
        if let Some(parent) = path.parent() {
            private_dirs(parent).map_err(|e| SkillError::io("create", parent, e))?;
        }
        write_atomic(&path, content.as_bytes())?;
        let message = format!("Wrote {file_path}; read it with skill_view(name, file_path).");
        Ok(outcome("write_file", &skill, path, &message))
    }

    /// Removes a supporting file (and directories it leaves empty).
    pub fn remove_file(
        &mut self,
        name: &str,
        file_path: &str,
    ) -> Result<ManageOutcome, SkillError> {
        let skill = self.writable(name)?;
        let rel = supporting_path(file_path)?;
        refuse_symlinks(&skill.dir, &rel, file_path)?;
        let path = skill.dir.join(&rel);
        let not_a_file = |reason: &str| SkillError::InvalidPath {
            path: file_path.to_owned(),
            reason: reason.to_owned(),
        };
        match fs::symlink_metadata(&path) {
            Ok(metadata) if metadata.is_dir() => {
                return Err(not_a_file("it is a directory; remove its files one by one"));
            }
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(not_a_file("no such file in this skill"));
            }
            Err(error) => return Err(SkillError::io("inspect", &path, error)),
        }
        fs::remove_file(&path).map_err(|e| SkillError::io("remove", &path, e))?;
        let mut parent = path.parent();
        while let Some(dir) = parent.filter(|dir| *dir != skill.dir) {
            if fs::remove_dir(dir).is_err() {
                break;
            }
            parent = dir.parent();
        }
        let message = format!("Removed {file_path}.");
        Ok(outcome("remove_file", &skill, path, &message))
    }

    /// The skill, if it may be changed.
    fn writable(&self, name: &str) -> Result<Skill, SkillError> {
        let skill = self
            .index
            .get(name)
            .ok_or_else(|| SkillError::NotFound(name.to_owned()))?;
        if skill.bundled {
            return Err(SkillError::ReadOnly(skill.meta.name.clone()));
        }
        Ok(skill.clone())
    }

    fn refresh(&mut self, dir: &Path) {
        self.index.forget(dir);
        // Problems elsewhere in the roots are not this operation's to report.
        let _ = self.index.reload();
    }
}

fn outcome(action: &'static str, skill: &Skill, path: PathBuf, message: &str) -> ManageOutcome {
    ManageOutcome {
        action,
        name: skill.meta.name.clone(),
        path,
        message: message.to_owned(),
    }
}

fn run_scan(scan: Scanner<'_>, text: &str) -> Result<(), SkillError> {
    scan(text).map_err(SkillError::Rejected)
}

fn check_size(what: &str, size: usize, limit: u64) -> Result<(), SkillError> {
    let size = size as u64;
    if size > limit {
        return Err(SkillError::TooLarge {
            what: what.to_owned(),
            size,
            limit,
        });
    }
    Ok(())
}

/// `SKILL.md` text about to be written: within size, valid under the spec's
/// limits, and named `name`.
fn check_skill_md(content: &str, name: &str) -> Result<(), SkillError> {
    check_size("SKILL.md", content.len(), MAX_SKILL_MD_WRITE_BYTES)?;
    let parsed = parse_skill_md(content, ParseMode::Write)?;
    if parsed.meta.name != name {
        return Err(SkillError::InvalidSkill(format!(
            "the frontmatter name '{}' does not match the skill name '{name}'",
            parsed.meta.name
        )));
    }
    Ok(())
}

/// A `write_file` / `remove_file` path: inside one of [`FILE_DIRS`].
fn supporting_path(file_path: &str) -> Result<PathBuf, SkillError> {
    let rel = relative(file_path)?;
    let mut parts = rel.components();
    let top = parts.next().map(|part| part.as_os_str().to_string_lossy());
    let allowed = top.is_some_and(|top| FILE_DIRS.contains(&top.as_ref()));
    if !allowed || parts.next().is_none() {
        return Err(SkillError::InvalidPath {
            path: file_path.to_owned(),
            reason: "files go under references/, templates/, scripts/ or assets/ \
                     (e.g. references/api.md)"
                .to_owned(),
        });
    }
    Ok(rel)
}

/// Creates `dir` and its missing parents 0700: the profile home is private whatever the
/// umask.
fn private_dirs(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}
