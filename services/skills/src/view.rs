//! Levels 1 and 2: a skill's body and files, read on demand.

use serde::Serialize;

use crate::error::SkillError;
use crate::files::{FileContent, read_for_view, read_skill_md};
use crate::index::ContentScan;
use crate::index::SkillIndex;
use crate::limits::MAX_SKILL_FILE_BYTES;
use crate::listing::{SupportingFiles, list_supporting};
use crate::meta::{ParseMode, parse_skill_md};
use crate::paths::{relative, resolve_for_read};

/// Level 1: what `skill_view(name)` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillPage {
    /// The skill's name.
    pub name: String,
    /// Its category.
    pub category: String,
    /// Its description.
    pub description: String,
    /// The markdown body of `SKILL.md`.
    pub content: String,
    /// Its supporting files, readable with `skill_view(name, file_path)`.
    pub files: SupportingFiles,
    /// `related_skills` from the frontmatter.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related_skills: Vec<String>,
    /// Whether it is bundled (read-only).
    pub bundled: bool,
}

/// Level 2: what `skill_view(name, file_path)` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FilePage {
    /// The skill's name.
    pub name: String,
    /// The file, as asked for.
    pub file_path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether it is binary (then `content` is absent).
    pub binary: bool,
    /// The text, when it is text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// The result of [`SkillIndex::view`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SkillView {
    /// Level 1.
    Skill(SkillPage),
    /// Level 2.
    File(FilePage),
}

impl SkillIndex {
    /// Level 1 (`file_path` is `None`): the body and the file list, read
    /// fresh from disk. Level 2: one file of the skill, confined to its
    /// directory (no `..`, no absolute paths, no symlink leading out), text
    /// up to [`MAX_SKILL_FILE_BYTES`], binary reported by size only.
    pub fn view(&self, name: &str, file_path: Option<&str>) -> Result<SkillView, SkillError> {
        let skill = self
            .get(name)
            .ok_or_else(|| SkillError::NotFound(name.to_owned()))?;
        let Some(file_path) = file_path.filter(|p| !p.trim().is_empty()) else {
            let text = read_skill_md(&skill.skill_md())?;
            self.scan_read(&text)?;
            let parsed = parse_skill_md(&text, ParseMode::Load)?;
            return Ok(SkillView::Skill(SkillPage {
                name: skill.meta.name.clone(),
                category: skill.category.clone(),
                description: skill.meta.description.clone(),
                content: parsed.body,
                files: list_supporting(&skill.dir),
                related_skills: skill.meta.related_skills.clone(),
                bundled: skill.bundled,
            }));
        };
        let rel = relative(file_path)?;
        let path = resolve_for_read(&skill.dir, &rel, file_path)?;
        if !path.is_file() {
            return Err(SkillError::InvalidPath {
                path: file_path.to_owned(),
                reason: "it is not a file".to_owned(),
            });
        }
        let (size, content) = match read_for_view(&path, MAX_SKILL_FILE_BYTES, file_path)? {
            FileContent::Text(text) => {
                self.scan_read(&text)?;
                (text.len() as u64, Some(text))
            }
            FileContent::Binary { size } => (size, None),
        };
        Ok(SkillView::File(FilePage {
            name: skill.meta.name.clone(),
            file_path: file_path.to_owned(),
            size,
            binary: content.is_none(),
            content,
        }))
    }

    /// Text read for the model passes the roots' scan again: the file may have changed
    /// since the index loaded it.
    fn scan_read(&self, text: &str) -> Result<(), SkillError> {
        match &self.roots().scan {
            Some(ContentScan(scan)) => scan(text).map_err(SkillError::Blocked),
            None => Ok(()),
        }
    }
}
