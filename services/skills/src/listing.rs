//! Level 1: the supporting files a skill ships next to its `SKILL.md`.

use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::limits::{MAX_LISTED_FILES, MAX_LISTING_DEPTH};

/// A skill's files other than `SKILL.md`, as paths relative to its
/// directory (`/`-separated, sorted), grouped by the directory they are in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SupportingFiles {
    /// Under `references/` (or `reference/`, as Anthropic's skills spell it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// Under `templates/`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub templates: Vec<String>,
    /// Under `scripts/`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<String>,
    /// Under `assets/`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assets: Vec<String>,
    /// Everything else (`LICENSE.txt`, other directories).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other: Vec<String>,
    /// Set when the listing stopped at its limit.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl SupportingFiles {
    /// Whether the skill has no files besides `SKILL.md`.
    pub fn is_empty(&self) -> bool {
        self.references.is_empty()
            && self.templates.is_empty()
            && self.scripts.is_empty()
            && self.assets.is_empty()
            && self.other.is_empty()
    }

    fn add(&mut self, path: String) {
        let top = path.split('/').next().unwrap_or_default();
        let group = match top {
            _ if !path.contains('/') => &mut self.other,
            "references" | "reference" => &mut self.references,
            "templates" => &mut self.templates,
            "scripts" => &mut self.scripts,
            "assets" => &mut self.assets,
            _ => &mut self.other,
        };
        group.push(path);
    }
}

/// Lists a skill directory. Hidden entries are skipped; symlinked
/// directories are not followed (no cycles, no escapes) and symlinked files
/// are listed only when they resolve inside the skill.
pub(crate) fn list_supporting(dir: &Path) -> SupportingFiles {
    let mut files = SupportingFiles::default();
    let base = dir.canonicalize().ok();
    let mut found = Vec::new();
    walk(
        dir,
        "",
        0,
        base.as_deref(),
        &mut found,
        &mut files.truncated,
    );
    found.sort();
    for path in found {
        files.add(path);
    }
    files
}

fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    base: Option<&Path>,
    found: &mut Vec<String>,
    truncated: &mut bool,
) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || (depth == 0 && name == "SKILL.md") {
            continue;
        }
        let relative = format!("{prefix}{name}");
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        let is_file = if kind.is_symlink() {
            let inside = match (path.canonicalize(), base) {
                (Ok(target), Some(base)) => target.starts_with(base),
                _ => false,
            };
            inside && path.is_file()
        } else {
            kind.is_file()
        };
        if is_file {
            if found.len() >= MAX_LISTED_FILES {
                *truncated = true;
                return;
            }
            found.push(relative);
        } else if kind.is_dir() && depth + 1 < MAX_LISTING_DEPTH {
            walk(
                &path,
                &format!("{relative}/"),
                depth + 1,
                base,
                found,
                truncated,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SupportingFiles;

    #[test]
    fn groups_by_top_directory() {
        let mut files = SupportingFiles::default();
        for path in [
            "LICENSE.txt",
            "reference/a.md",
            "references/b.md",
            "templates/t.md",
            "scripts/s.py",
            "assets/x.png",
            "misc/y",
        ] {
            files.add(path.to_owned());
        }
        assert_eq!(files.references, ["reference/a.md", "references/b.md"]);
        assert_eq!(files.other, ["LICENSE.txt", "misc/y"]);
        assert_eq!(files.templates, ["templates/t.md"]);
    }
}
