//! Problems found while loading skills: reported, never fatal.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

/// Whether an issue cost the skill its place in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueKind {
    /// The skill was left out of the index.
    Skipped,
    /// The skill loaded; something about it is off (an ignored field, a
    /// truncated description, a name that differs from its directory).
    Warning,
}

/// One problem with one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillIssue {
    /// The file (usually a `SKILL.md`) or directory concerned.
    pub path: PathBuf,
    /// What is wrong, in words.
    pub reason: String,
    /// Skipped or loaded with a warning.
    pub kind: IssueKind,
}

impl SkillIssue {
    pub(crate) fn skipped(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            reason: reason.into(),
            kind: IssueKind::Skipped,
        }
    }

    pub(crate) fn warning(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            reason: reason.into(),
            kind: IssueKind::Warning,
        }
    }
}

impl fmt::Display for SkillIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            IssueKind::Skipped => "skipped",
            IssueKind::Warning => "warning",
        };
        write!(f, "{}: {kind}: {}", self.path.display(), self.reason)
    }
}
