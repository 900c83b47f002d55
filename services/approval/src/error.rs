//! The crate's error type.

use std::path::PathBuf;

/// Why the classifier or the approval policy could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// The pattern data is not valid TOML or does not have the expected shape.
    #[error("invalid approval pattern data: {0}")]
    PatternData(#[from] toml::de::Error),
    /// A pattern is not a valid regular expression.
    #[error("approval pattern `{id}` does not compile: {source}")]
    BadPattern {
        /// The rule's id.
        id: String,
        /// The regex parser's or compiler's complaint.
        source: talaria_rules::PatternError,
    },
    /// A pattern refers to a `{{name}}` that `[vars]` does not define (or that nests too deeply).
    #[error("approval pattern `{id}` uses undefined variable `{{{{{var}}}}}`")]
    UndefinedVar {
        /// The rule's id.
        id: String,
        /// The missing variable's name.
        var: String,
    },
    /// Two rules share an id, so an "always" approval would be ambiguous.
    #[error("approval pattern id `{0}` is used more than once")]
    DuplicateId(String),
    /// The built-in pattern data failed to load (the message is the original error).
    #[error("built-in approval patterns failed to load: {0}")]
    Builtin(String),
    /// The "always approved" file exists but could not be read.
    #[error("cannot read approvals file {}: {source}", path.display())]
    ReadAlways {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The "always approved" file is not valid; it is left untouched.
    #[error("approvals file {} is corrupt (fix or delete it): {source}", path.display())]
    CorruptAlways {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: toml::de::Error,
    },
    /// The "always approved" file could not be written.
    #[error("cannot write approvals file {}: {source}", path.display())]
    WriteAlways {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
