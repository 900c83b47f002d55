//! Snippets for hits no FTS index produced (the LIKE scan).

use crate::search::{MATCH_END, MATCH_START};

/// Marks text cut from a snippet.
pub(crate) const ELLIPSIS: &str = "…";
/// Characters either side of a match in a scan snippet.
const CONTEXT_CHARS: usize = 40;

/// The text around the first match of `needle` (ASCII case-insensitive, like
/// SQLite's LIKE), the match wrapped in the match markers.
pub(crate) fn scan_snippet(content: &str, needle: &str) -> String {
    // ASCII lowercasing keeps byte offsets, so they index `content` directly.
    let Some(at) = content
        .to_ascii_lowercase()
        .find(&needle.to_ascii_lowercase())
    else {
        return content.chars().take(2 * CONTEXT_CHARS).collect();
    };
    let end = at + needle.len();
    let before: Vec<char> = content[..at].chars().collect();
    let keep_from = before.len().saturating_sub(CONTEXT_CHARS);
    let mut snippet = String::new();
    if keep_from > 0 {
        snippet.push_str(ELLIPSIS);
    }
    snippet.extend(&before[keep_from..]);
    snippet.push_str(MATCH_START);
    snippet.push_str(&content[at..end]);
    snippet.push_str(MATCH_END);
    let mut after = content[end..].chars();
    snippet.extend(after.by_ref().take(CONTEXT_CHARS));
    if after.next().is_some() {
        snippet.push_str(ELLIPSIS);
    }
    snippet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_snippets_mark_the_match_and_cut_long_text() {
        let content = format!("{}Go is here{}", "x".repeat(100), "y".repeat(100));
        let snippet = scan_snippet(&content, "go");
        assert!(snippet.starts_with('…'), "{snippet}");
        assert!(snippet.contains("**Go**"), "{snippet}");
        assert!(snippet.ends_with('…'), "{snippet}");
        assert_eq!(scan_snippet("迁移完成", "迁移"), "**迁移**完成");
    }
}
