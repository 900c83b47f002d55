//! The text the rules read: escapes resolved, with the way back to the original's offsets.
//!
//! A tool result reaches the redactor as JSON (`{"content":"     1\tAPI_KEY=…\n     2\t…"}`), and a
//! page from web_extract as markdown (`ghp\_…`). Read as they are, a newline is the two characters
//! `\n` (so a value runs on into the next line and swallows its key), a quote before a colon is
//! `\"` (so no JSON field is recognised) and an underscore is `\_` (so no token prefix is). The
//! rules therefore read a view with JSON string escapes and markdown backslash escapes resolved;
//! what they find is mapped back and replaced in the original text, which keeps its escapes.

use std::borrow::Cow;

/// Characters markdown writers escape with a backslash (`\_`, `\-`, `\*` …).
const MARKDOWN_ESCAPED: &[u8] = b"_-*`#+.!|~[](){}<>";

/// How many levels of escaping are read through: a tool result (JSON) holding a file that holds
/// JSON, or a log line holding a tool result, has two.
const LEVELS: usize = 3;

pub(crate) struct View<'t> {
    /// The resolved text.
    pub text: Cow<'t, str>,
    /// Per level, outermost first: after each resolved escape, its end in that level's result
    /// and in its input, ascending.
    levels: Vec<Vec<(usize, usize)>>,
}

impl<'t> View<'t> {
    pub fn new(original: &'t str) -> Self {
        let mut view = View {
            text: Cow::Borrowed(original),
            levels: Vec::new(),
        };
        while view.levels.len() < LEVELS && view.text.contains('\\') {
            let Some((text, breaks)) = resolve(&view.text) else {
                break;
            };
            view.text = Cow::Owned(text);
            view.levels.push(breaks);
        }
        view
    }

    /// The offset in the original text of `at`, a character boundary of the view.
    pub fn original(&self, at: usize) -> usize {
        self.levels.iter().rev().fold(at, |at, breaks| {
            let before = breaks.partition_point(|&(out, _)| out <= at);
            match before.checked_sub(1).and_then(|index| breaks.get(index)) {
                Some(&(out, input)) => input + (at - out),
                None => at,
            }
        })
    }
}

/// `text` with its escapes resolved, and where each ended; `None` when it has none.
fn resolve(text: &str) -> Option<(String, Vec<(usize, usize)>)> {
    let mut out = String::with_capacity(text.len());
    let mut breaks = Vec::new();
    let mut copied = 0;
    let mut at = 0;
    while let Some(found) = text.get(at..).and_then(|rest| rest.find('\\')) {
        let start = at + found;
        match escape_at(text, start) {
            Some((len, resolved)) => {
                out.push_str(&text[copied..start]);
                out.push(resolved);
                at = start + len;
                copied = at;
                breaks.push((out.len(), at));
            }
            None => at = start + 1,
        }
    }
    if breaks.is_empty() {
        return None;
    }
    out.push_str(&text[copied..]);
    Some((out, breaks))
}

/// The escape starting at `start` (a backslash): its length and the character it stands for.
fn escape_at(text: &str, start: usize) -> Option<(usize, char)> {
    let bytes = text.as_bytes();
    let next = *bytes.get(start + 1)?;
    let simple = match next {
        b'n' => Some('\n'),
        b't' => Some('\t'),
        b'r' => Some('\r'),
        b'"' => Some('"'),
        b'\'' => Some('\''),
        b'/' => Some('/'),
        _ => None,
    };
    if let Some(c) = simple {
        return Some((2, c));
    }
    if next == b'\\' {
        // A markdown escape inside a JSON string has its backslash doubled: `\\_`.
        return match bytes.get(start + 2) {
            Some(&after) if MARKDOWN_ESCAPED.contains(&after) => Some((3, char::from(after))),
            _ => Some((2, '\\')),
        };
    }
    if MARKDOWN_ESCAPED.contains(&next) {
        return Some((2, char::from(next)));
    }
    if next == b'u' {
        return unicode_escape(text, start);
    }
    None
}

/// `\uXXXX`, or a surrogate pair `\uD83D\uDE00`, as one character.
fn unicode_escape(text: &str, start: usize) -> Option<(usize, char)> {
    let hex = |from: usize| {
        text.get(from..from + 4)
            .and_then(|digits| u32::from_str_radix(digits, 16).ok())
    };
    let high = hex(start + 2)?;
    if let Some(c) = char::from_u32(high) {
        return Some((6, c));
    }
    if !(0xD800..0xDC00).contains(&high) || text.get(start + 6..start + 8) != Some("\\u") {
        return None;
    }
    let low = hex(start + 8)?;
    if !(0xDC00..0xE000).contains(&low) {
        return None;
    }
    char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)).map(|c| (12, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        let view = View::new("API_KEY=abc");
        assert!(matches!(view.text, Cow::Borrowed(_)));
        assert_eq!(view.original(4), 4);
    }

    #[test]
    fn json_and_markdown_escapes_resolve_and_map_back() {
        let original = r#"{"c":"a\tB=\"x\"\nghp\\_y\_z \u00e9!"}"#;
        let view = View::new(original);
        assert_eq!(view.text, "{\"c\":\"a\tB=\"x\"\nghp_y_z é!\"}");
        for (at, _) in view.text.char_indices() {
            let back = view.original(at);
            assert!(original.is_char_boundary(back), "{at} -> {back}");
        }
        let b = view.text.find('B').unwrap_or(0);
        assert_eq!(&original[view.original(b)..view.original(b + 1)], "B");
        let quote = view.text.find("=\"").unwrap_or(0) + 1;
        assert_eq!(
            &original[view.original(quote)..view.original(quote + 1)],
            "\\\""
        );
        let end = view.text.len();
        assert_eq!(view.original(end), original.len());
    }

    #[test]
    fn other_backslashes_stay() {
        let view = View::new(r"C:\Windows\System32 \d+");
        assert_eq!(view.text, r"C:\Windows\System32 \d+");
    }
}
