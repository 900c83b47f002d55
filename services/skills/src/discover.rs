//! Finding skill directories under a root.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::index::GENERAL_CATEGORY;
use crate::issue::SkillIssue;

/// A directory holding a `SKILL.md`, with the category its place implies.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub dir: PathBuf,
    pub category: String,
}

/// Every skill directory under `root`, in name order: `<root>/<name>/` is in
/// [`GENERAL_CATEGORY`], `<root>/<category>/<name>/` in `<category>`. A
/// directory with a `SKILL.md` is a skill and is not searched further (its
/// subdirectories are the skill's files). Hidden entries are skipped. A root
/// that does not exist holds no skills.
pub(crate) fn discover(root: &Path, issues: &mut Vec<SkillIssue>) -> Vec<Candidate> {
    let mut found = Vec::new();
    let entries = match subdirectories(root) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return found,
        Err(error) => {
            issues.push(SkillIssue::skipped(root, format!("cannot list: {error}")));
            return found;
        }
    };
    for (name, dir) in entries {
        if dir.join("SKILL.md").is_file() {
            found.push(Candidate {
                dir,
                category: GENERAL_CATEGORY.to_owned(),
            });
            continue;
        }
        match subdirectories(&dir) {
            Ok(skills) => {
                for (_, skill_dir) in skills {
                    if skill_dir.join("SKILL.md").is_file() {
                        found.push(Candidate {
                            dir: skill_dir,
                            category: name.clone(),
                        });
                    }
                }
            }
            Err(error) => issues.push(SkillIssue::skipped(&dir, format!("cannot list: {error}"))),
        }
    }
    found
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
