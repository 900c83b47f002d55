//! Finding skill directories under a root.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::index::GENERAL_CATEGORY;
use crate::issue::SkillIssue;
use crate::limits::MAX_CATEGORY_DEPTH;

/// A directory holding a `SKILL.md`, with the category its place implies.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub dir: PathBuf,
    pub category: String,
}

/// Every skill directory under `root`, in name order: `<root>/<name>/` is in
/// [`GENERAL_CATEGORY`], `<root>/<category>/<name>/` in `<category>`, and categories nest up to
/// [`MAX_CATEGORY_DEPTH`] folders deep (`<root>/mlops/evaluation/<name>/` is in
/// `mlops/evaluation`, as Hermes lays out its bundled skills). A directory with a `SKILL.md` is
/// a skill and is not searched further (its subdirectories are the skill's files). Hidden
/// entries are skipped. A root that does not exist holds no skills.
pub(crate) fn discover(root: &Path, issues: &mut Vec<SkillIssue>) -> Vec<Candidate> {
    let mut found = Vec::new();
    match subdirectories(root) {
        Ok(entries) => walk(entries, &[], &mut found, issues),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => issues.push(SkillIssue::skipped(root, format!("cannot list: {error}"))),
    }
    found
}

/// Skills among `entries`, the subdirectories of the category folder `category` (empty: the
/// root); folders without a `SKILL.md` are searched as deeper categories.
fn walk(
    entries: Vec<(String, PathBuf)>,
    category: &[String],
    found: &mut Vec<Candidate>,
    issues: &mut Vec<SkillIssue>,
) {
    for (name, dir) in entries {
        if dir.join("SKILL.md").is_file() {
            found.push(Candidate {
                dir,
                category: if category.is_empty() {
                    GENERAL_CATEGORY.to_owned()
                } else {
                    category.join("/")
                },
            });
            continue;
        }
        if category.len() >= MAX_CATEGORY_DEPTH {
            continue;
        }
        match subdirectories(&dir) {
            Ok(children) => {
                let mut deeper = category.to_vec();
                deeper.push(name);
                walk(children, &deeper, found, issues);
            }
            Err(error) => issues.push(SkillIssue::skipped(&dir, format!("cannot list: {error}"))),
        }
    }
}

/// Non-hidden subdirectories (symlinks to directories included), sorted.
fn subdirectories(dir: &Path) -> io::Result<Vec<(String, PathBuf)>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            found.push((name, path));
        }
    }
    found.sort();
    Ok(found)
}
