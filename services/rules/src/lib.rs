//! Rule files of regular expressions, as the approval classifier (`patterns.toml`) and the memory
//! threat scanner (`threats.toml`) keep them: a `[vars]` table whose `{{name}}` entries patterns
//! insert, and rules whose `pattern`, `also` and `allow` keys hold regexes.
//!
//! Compiling every regex of such a file costs tens of milliseconds — most of a one-shot run's
//! CPU time. So a [`PatternSet`] compiles a regex only when a text could match it: for each
//! pattern the literals one of which every match must contain are worked out (at build time for
//! the built-in files, see [`codegen`]), one Aho-Corasick pass over a text tells which patterns
//! are candidates, and only those are compiled, once.

pub mod codegen;
mod error;
mod homoglyph;
pub mod literals;
mod set;
mod vars;

pub use error::PatternError;
pub use homoglyph::homoglyph;
pub use set::{LiteralTable, PatternSet, Screen};
pub use vars::{UndefinedVar, expand_vars};
