//! The errors skill operations report; their text is what the model reads.

use std::io;
use std::path::PathBuf;

/// Why a skill operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// No skill has that name.
    #[error("skill '{0}' not found; call skills_list to see the available skills")]
    NotFound(String),
    /// `create` on a name (or directory) that is taken.
    #[error("skill '{name}' already exists ({detail}); use edit or patch to change it")]
    AlreadyExists {
        /// The skill name.
        name: String,
        /// Where it lives.
        detail: String,
    },
    /// A write to a skill shipped with the distribution.
    #[error(
        "skill '{0}' is bundled and read-only; create your own skill under a different name instead"
    )]
    ReadOnly(String),
    /// A skill or category name outside the allowed form.
    #[error("invalid name '{name}': {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `SKILL.md` text that does not parse or validate.
    #[error("invalid SKILL.md: {0}")]
    InvalidSkill(String),
    /// A `file_path` outside what the operation may touch.
    #[error("invalid file_path '{path}': {reason}")]
    InvalidPath {
        /// The rejected path, as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// Content or a file over its size limit.
    #[error("{what} is {size} bytes; the limit is {limit} bytes")]
    TooLarge {
        /// What was too large.
        what: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// `patch` found no occurrence of `old_string`.
    #[error("old_string was not found in {0}; view the file and copy the exact text to replace")]
    PatchNotFound(String),
    /// `patch` found several occurrences without `replace_all`.
    #[error(
        "old_string occurs {count} times in {file}; include more surrounding text to make it unique, or set replace_all to true"
    )]
    PatchAmbiguous {
        /// The file patched.
        file: String,
        /// How many occurrences.
        count: usize,
    },
    /// The caller's threat scanner refused the text; nothing was written.
    #[error("write rejected by the security scan, nothing was changed: {0}")]
    Rejected(String),
    /// The threat scanner refused a skill's text on reading it; nothing of it is shown.
    #[error("not shown: the security scan refused it ({0})")]
    Blocked(String),
    /// A missing or malformed tool argument.
    #[error("{0}")]
    Argument(String),
    /// A filesystem failure.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done ("read", "write"…).
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl SkillError {
    /// Wraps an I/O error with what was being done and where.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
