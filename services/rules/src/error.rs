//! Why a pattern cannot be used.

/// A pattern that does not parse, or parses but does not compile (size limits).
#[derive(Debug, Clone, thiserror::Error)]
pub enum PatternError {
    /// Not valid regex syntax.
    #[error("{0}")]
    Syntax(Box<regex_syntax::Error>),
    /// Valid syntax the regex compiler refused.
    #[error("{0}")]
    Compile(#[from] regex::Error),
    /// A caller asked for a pattern index the set does not have.
    #[error("no pattern number {0} in the set")]
    NoSuchPattern(usize),
}

impl From<regex_syntax::Error> for PatternError {
    fn from(error: regex_syntax::Error) -> Self {
        Self::Syntax(Box::new(error))
    }
}
