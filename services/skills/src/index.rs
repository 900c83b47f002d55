//! The skill index: every skill's frontmatter, loaded from the roots.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::discover::discover;
use crate::files::read_skill_md;
use crate::issue::SkillIssue;
use crate::meta::{ParseMode, SkillMeta, parse_skill_md};
use crate::visibility::Visibility;

/// The category of a skill directly under a root (`<root>/<name>/SKILL.md`).
pub const GENERAL_CATEGORY: &str = "general";

/// The check behind a [`ContentScan`].
pub type ScanText = dyn Fn(&str) -> Result<(), String> + Send + Sync;

/// A check of a `SKILL.md`'s whole text before the skill is offered (the threat scanner):
/// `Err` says why it is left out.
#[derive(Clone)]
pub struct ContentScan(pub Arc<ScanText>);

impl std::fmt::Debug for ContentScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ContentScan")
    }
}

impl PartialEq for ContentScan {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ContentScan {}

/// Where skills live.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillRoots {
    /// The writable root (`$TALARIA_HOME/skills`); need not exist yet.
    pub user: PathBuf,
    /// Read-only roots (skills shipped with the distribution), searched after
    /// the user root in order.
    pub bundled: Vec<PathBuf>,
    /// Every `SKILL.md` is scanned with this at load, whatever wrote it (a command's `cp`
    /// as much as `skill_manage`); one it refuses is skipped and reported.
    pub scan: Option<ContentScan>,
}

impl SkillRoots {
    /// Just the writable root.
    pub fn new(user: impl Into<PathBuf>) -> Self {
        Self {
            user: user.into(),
            bundled: Vec::new(),
            scan: None,
        }
    }

    /// Scans every `SKILL.md` with `scan` at load (see [`scan`](Self::scan)).
    #[must_use]
    pub fn with_scan(mut self, scan: ContentScan) -> Self {
        self.scan = Some(scan);
        self
    }

    /// Adds a read-only root.
    #[must_use]
    pub fn with_bundled(mut self, root: impl Into<PathBuf>) -> Self {
        self.bundled.push(root.into());
        self
    }
}

/// One loaded skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Its frontmatter.
    pub meta: SkillMeta,
    /// Its category (the directory above it, or [`GENERAL_CATEGORY`]).
    pub category: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Whether it comes from a read-only root.
    pub bundled: bool,
}

impl Skill {
    /// The skill's name.
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    /// Its `SKILL.md`.
    pub fn skill_md(&self) -> PathBuf {
        self.dir.join("SKILL.md")
    }
}

/// A parse result remembered by file size and modification time, so a
/// reload re-reads only what changed.
#[derive(Debug, Clone)]
struct Cached {
    stamp: Stamp,
    parsed: Result<(SkillMeta, Vec<String>), String>,
}

type Stamp = (Option<SystemTime>, u64);

/// Every valid skill under the roots, sorted by category then name. Names are
/// unique: the user root wins over bundled roots, earlier roots over later
/// ones, and a later duplicate is reported and skipped.
#[derive(Debug, Clone, Default)]
pub struct SkillIndex {
    roots: SkillRoots,
    skills: Vec<Skill>,
    cache: HashMap<PathBuf, Cached>,
}

impl SkillIndex {
    /// Loads every skill under `roots`. Invalid skills are left out and
    /// reported, never fatal.
    pub fn load(roots: SkillRoots) -> (Self, Vec<SkillIssue>) {
        let mut index = Self {
            roots,
            skills: Vec::new(),
            cache: HashMap::new(),
        };
        let issues = index.reload();
        (index, issues)
    }

    /// Re-reads the roots. Unchanged `SKILL.md` files (same size and
    /// modification time) are not parsed again.
    pub fn reload(&mut self) -> Vec<SkillIssue> {
        let mut issues = Vec::new();
        let mut skills: Vec<Skill> = Vec::new();
        let mut cache = HashMap::new();
        let mut origin: HashMap<String, PathBuf> = HashMap::new();
        let roots: Vec<(PathBuf, bool)> = std::iter::once((self.roots.user.clone(), false))
            .chain(self.roots.bundled.iter().map(|root| (root.clone(), true)))
            .collect();
        for (root, bundled) in roots {
            for candidate in discover(&root, &mut issues) {
                let path = candidate.dir.join("SKILL.md");
                let parsed = match stamp(&path) {
                    Ok(stamp) => {
                        let cached = self
                            .cache
                            .remove(&path)
                            .filter(|cached| cached.stamp == stamp)
                            .unwrap_or_else(|| Cached {
                                stamp,
                                parsed: parse_file(&path, self.roots.scan.as_ref()),
                            });
                        let parsed = cached.parsed.clone();
                        cache.insert(path.clone(), cached);
                        parsed
                    }
                    Err(error) => Err(format!("cannot read: {error}")),
                };
                let (meta, warnings) = match parsed {
                    Ok(parsed) => parsed,
                    Err(reason) => {
                        issues.push(SkillIssue::skipped(&path, reason));
                        continue;
                    }
                };
                for warning in warnings {
                    issues.push(SkillIssue::warning(&path, warning));
                }
                let dir_name = candidate.dir.file_name().map(|n| n.to_string_lossy());
                if dir_name.as_deref() != Some(meta.name.as_str()) {
                    // The frontmatter is authoritative (as in Hermes); the
                    // mismatch is worth knowing but not worth losing the skill.
                    issues.push(SkillIssue::warning(
                        &path,
                        format!(
                            "name '{}' differs from its directory '{}'; it is known as '{}'",
                            meta.name,
                            dir_name.unwrap_or_default(),
                            meta.name
                        ),
                    ));
                }
                if let Some(first) = origin.get(&meta.name) {
                    issues.push(SkillIssue::skipped(
                        &path,
                        format!(
                            "duplicate skill name '{}', already loaded from {}",
                            meta.name,
                            first.display()
                        ),
                    ));
                    continue;
                }
                origin.insert(meta.name.clone(), path.clone());
                skills.push(Skill {
                    meta,
                    category: candidate.category,
                    dir: candidate.dir,
                    bundled,
                });
            }
        }
        skills.sort_by(|a, b| (&a.category, &a.meta.name).cmp(&(&b.category, &b.meta.name)));
        self.skills = skills;
        self.cache = cache;
        issues
    }

    /// Forgets what is cached for a skill directory, so the next reload
    /// parses it again even if its size and timestamp look unchanged.
    pub(crate) fn forget(&mut self, dir: &Path) {
        self.cache.remove(&dir.join("SKILL.md"));
    }

    /// The roots it reads.
    pub fn roots(&self) -> &SkillRoots {
        &self.roots
    }

    /// Every loaded skill, sorted by category then name.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// A skill by name, or by `category/name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        let name = name.trim();
        if let Some(skill) = self.skills.iter().find(|s| s.meta.name == name) {
            return Some(skill);
        }
        let (category, name) = name.rsplit_once('/')?;
        self.skills
            .iter()
            .find(|s| s.meta.name == name && s.category == category)
    }

    /// The skills offered in a session with these platform, toolsets and
    /// tools, in index order.
    pub fn visible(&self, visibility: &Visibility<'_>) -> Vec<&Skill> {
        self.skills
            .iter()
            .filter(|skill| visibility.allows(&skill.meta))
            .collect()
    }

    /// How many skills each category holds.
    pub fn categories(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for skill in &self.skills {
            *counts.entry(skill.category.as_str()).or_insert(0) += 1;
        }
        counts
    }
}

fn stamp(path: &Path) -> std::io::Result<Stamp> {
    let metadata = fs::metadata(path)?;
    Ok((metadata.modified().ok(), metadata.len()))
}

fn parse_file(path: &Path, scan: Option<&ContentScan>) -> Result<(SkillMeta, Vec<String>), String> {
    let text = read_skill_md(path).map_err(|e| e.to_string())?;
    if let Some(ContentScan(scan)) = scan {
        scan(&text).map_err(|reason| format!("left out by the security scan: {reason}"))?;
    }
    let parsed = parse_skill_md(&text, ParseMode::Load).map_err(|e| e.to_string())?;
    Ok((parsed.meta, parsed.warnings))
}
