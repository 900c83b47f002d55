//! Terminal presentation: streaming Markdown, code highlighting and skins.
