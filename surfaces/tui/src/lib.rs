//! Terminal presentation for the interactive CLI: skins, streaming Markdown,
//! code highlighting and the activity feed (spinner and tool lines).

#![warn(missing_docs)]

mod activity;
mod highlight;
mod markdown;
mod skin;
mod style;
mod yaml_lines;

pub use activity::{Spinner, SpinnerPause, format_duration, format_tool_line, key_argument};
pub use highlight::{Highlighter, TokenKind};
pub use markdown::MarkdownStream;
pub use skin::{
    BUILTIN_ORIGIN, DEFAULT_SKIN, Skin, SkinCatalog, SkinError, SkinInfo, SkinSource, SkinWarning,
    SpinnerStyle,
};
pub use style::{Colour, Palette, ParseColourError, Role};
