//! The crate's error types.
//!
//! [`MemoryError`] messages are shown to the model as tool results, so they say what to do next.

use std::path::PathBuf;

use crate::scan::Threat;

/// Why threat patterns could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The pattern data is not valid TOML or does not have the expected shape.
    #[error("invalid threat pattern data: {0}")]
    PatternData(#[from] toml::de::Error),
    /// A pattern is not a valid regular expression.
    #[error("threat pattern `{id}` does not compile: {source}")]
    BadPattern {
        /// The rule's id.
        id: String,
        /// The regex parser's or compiler's complaint.
        source: talaria_rules::PatternError,
    },
    /// A pattern refers to a `{{name}}` that `[vars]` does not define (or that nests too deeply).
    #[error("threat pattern `{id}` uses undefined variable `{{{{{var}}}}}`")]
    UndefinedVar {
        /// The rule's id.
        id: String,
        /// The missing variable's name.
        var: String,
    },
    /// Two rules share an id, so a report naming the rule would be ambiguous.
    #[error("threat pattern id `{0}` is used more than once")]
    DuplicateId(String),
    /// The built-in pattern data failed to load (the message is the original error).
    #[error("built-in threat patterns failed to load: {0}")]
    Builtin(String),
}

/// Why a memory operation failed. The message is written for the model that made the call.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The new content tripped a threat rule; nothing was written.
    #[error(
        "Blocked: the content for {file} matches threat rule `{}` ({}: {}). Nothing was saved. \
         Memory must not contain instructions, hidden text or secrets.",
        threat.rule_id, threat.category, threat.description
    )]
    Blocked {
        /// The file that would have been written.
        file: &'static str,
        /// The rule that matched.
        threat: Threat,
    },
    /// The write would take the file over its character limit; nothing was written.
    #[error(
        "{file} is full: {used}/{limit} chars used and this change would make it {would_be} chars. \
         Nothing was saved. Consolidate first: use `replace` to merge or shorten older entries, or \
         `remove` entries that are no longer useful, then try again."
    )]
    Full {
        /// The file.
        file: &'static str,
        /// Characters in the file now.
        used: usize,
        /// The file's limit.
        limit: usize,
        /// Characters the file would have after the change.
        would_be: usize,
    },
    /// `content` was empty or only whitespace.
    #[error("`content` is empty; give the text of the entry")]
    EmptyContent,
    /// `content` holds a line with only `§`, which would split it into several entries.
    #[error("`content` must not contain a line holding only `§` (that is the entry separator)")]
    ContainsSeparator,
    /// `old_text` was empty or only whitespace.
    #[error("`old_text` is empty; give a unique part of the entry to change")]
    EmptyOldText,
    /// No entry contains `old_text`.
    #[error(
        "No entry in {file} contains {old_text:?}. {}",
        list_starts("Entries start with", starts)
    )]
    NoMatch {
        /// The file searched.
        file: &'static str,
        /// The text that was looked for.
        old_text: String,
        /// The first characters of every entry, so the model can pick the right one.
        starts: Vec<String>,
    },
    /// Several different entries contain `old_text`.
    #[error(
        "{count} entries in {file} contain {old_text:?}; use a longer `old_text` that matches \
         only one of them. {}",
        list_starts("Matching entries start with", starts)
    )]
    Ambiguous {
        /// The file searched.
        file: &'static str,
        /// The text that was looked for.
        old_text: String,
        /// How many entries matched.
        count: usize,
        /// The first characters of the matching entries.
        starts: Vec<String>,
    },
    /// The memory directory or a file in it could not be read or written.
    #[error("cannot access {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The threat scanner could not be set up, so nothing can be checked or written.
    #[error(transparent)]
    Scanner(#[from] ScanError),
}

impl MemoryError {
    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

/// "Entries start with: 1. "…" 2. "…"" — or a note that there are none.
fn list_starts(label: &str, starts: &[String]) -> String {
    if starts.is_empty() {
        return "The file has no entries.".to_owned();
    }
    let listed: Vec<String> = starts
        .iter()
        .enumerate()
        .map(|(i, start)| format!("{}. {start:?}", i + 1))
        .collect();
    format!("{label}: {}", listed.join(" "))
}
