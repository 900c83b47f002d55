//! Which line of a YAML text holds which key path (`colors.accent`,
//! `spinner.faces[2]`), so errors found after parsing can name their line.
//!
//! A small indentation scanner for block mappings and sequences, which is what
//! skin files use; keys inside flow collections (`{a: b}`, `[x, y]`) are found
//! through their parent's line.

use std::collections::HashMap;

struct Entry {
    indent: usize,
    path: String,
    is_item: bool,
    /// A key whose value is on the following lines (a nested mapping or sequence).
    open: bool,
    items: usize,
}

/// Key paths to the 1-based numbers of the lines they are on (in order; more
/// than one when a key is repeated).
#[derive(Debug, Default)]
pub(crate) struct KeyLines {
    lines: HashMap<String, Vec<usize>>,
}

impl KeyLines {
    /// Scans `text`.
    pub fn scan(text: &str) -> KeyLines {
        let mut lines: HashMap<String, Vec<usize>> = HashMap::new();
        let mut stack: Vec<Entry> = Vec::new();
        // The indentation of a key whose value is a block scalar (`|` or `>`):
        // deeper lines are its text, not keys.
        let mut block_scalar: Option<usize> = None;
        for (n, raw) in text.lines().enumerate() {
            let line_no = n + 1;
            let trimmed = raw.trim_start_matches(' ');
            if trimmed.trim().is_empty() {
                continue;
            }
            let mut indent = raw.len() - trimmed.len();
            if let Some(owner) = block_scalar {
                if indent > owner {
                    continue;
                }
                block_scalar = None;
            }
            if trimmed.starts_with('#')
                || (indent == 0 && (trimmed.starts_with("---") || trimmed.starts_with("...")))
            {
                continue;
            }
            let mut rest = trimmed;
            if rest == "-" || rest.starts_with("- ") {
                while stack.last().is_some_and(|top| {
                    top.indent > indent || (top.indent == indent && (top.is_item || !top.open))
                }) {
                    stack.pop();
                }
                let path = match stack.last_mut() {
                    Some(parent) => {
                        parent.items += 1;
                        format!("{}[{}]", parent.path, parent.items - 1)
                    }
                    None => String::new(),
                };
                lines.entry(path.clone()).or_default().push(line_no);
                stack.push(Entry {
                    indent,
                    path,
                    is_item: true,
                    open: false,
                    items: 0,
                });
                let after = rest[1..].trim_start_matches(' ');
                indent += rest.len() - after.len();
                rest = after;
                if rest.is_empty() {
                    continue;
                }
            }
            let Some((key, value)) = split_key(rest) else {
                continue;
            };
            while stack.last().is_some_and(|top| top.indent >= indent) {
                stack.pop();
            }
            let path = match stack.last() {
                Some(parent) if !parent.path.is_empty() => format!("{}.{key}", parent.path),
                _ => key,
            };
            lines.entry(path.clone()).or_default().push(line_no);
            let value = strip_comment(value);
            if value.starts_with('|') || value.starts_with('>') {
                block_scalar = Some(indent);
            }
            stack.push(Entry {
                indent,
                path,
                is_item: false,
                open: value.is_empty(),
                items: 0,
            });
        }
        KeyLines { lines }
    }

    /// The line of the second occurrence of exactly `path`.
    pub fn second_line_of(&self, path: &str) -> Option<usize> {
        self.lines.get(path).and_then(|l| l.get(1)).copied()
    }

    /// The line of `path`, or of its nearest ancestor that has one.
    pub fn line_of(&self, path: &str) -> Option<usize> {
        let mut path = path;
        loop {
            if let Some(line) = self.lines.get(path).and_then(|l| l.first()) {
                return Some(*line);
            }
            let cut = path.rfind(['.', '['])?;
            path = &path[..cut];
        }
    }
}

/// `key: value` → (`key`, `value`), for plain and quoted keys.
fn split_key(s: &str) -> Option<(String, &str)> {
    let (key, after) = if let Some(quote @ ('"' | '\'')) = s.chars().next() {
        let end = s[1..].find(quote)? + 1;
        (s[1..end].to_string(), &s[end + 1..])
    } else {
        if s.starts_with(['{', '[', '&', '*', '!', '|', '>']) {
            return None;
        }
        let colon = find_key_colon(s)?;
        (s[..colon].trim_end().to_string(), &s[colon..])
    };
    let value = after.trim_start().strip_prefix(':')?;
    if !(value.is_empty() || value.starts_with([' ', '\t'])) {
        return None;
    }
    Some((key, value.trim()))
}

/// The first `:` followed by a space or the end of the line.
fn find_key_colon(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    (0..bytes.len())
        .find(|&i| bytes[i] == b':' && bytes.get(i + 1).is_none_or(|b| *b == b' ' || *b == b'\t'))
}

/// `value  # comment` → `value` (a `#` after whitespace starts a comment).
fn strip_comment(value: &str) -> &str {
    if value.starts_with('#') {
        return "";
    }
    match value.find(" #") {
        Some(i) => value[..i].trim_end(),
        None => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# comment
name: x
banner: |
  a: not a key
  b
colors:
  accent: red   # trailing
  'quoted key': 1
spinner:
  faces:
  - a
  - b
  verbs:
    - v
    - w: nested
  interval_ms: 3
tool_emoji: {a: b}
last: 1
";

    #[test]
    fn finds_key_lines() {
        let k = KeyLines::scan(TEXT);
        assert_eq!(k.line_of("name"), Some(2));
        assert_eq!(k.line_of("banner"), Some(3));
        assert_eq!(k.line_of("a"), None);
        assert_eq!(k.line_of("colors"), Some(6));
        assert_eq!(k.line_of("colors.accent"), Some(7));
        assert_eq!(k.line_of("colors.quoted key"), Some(8));
        assert_eq!(k.line_of("spinner.faces"), Some(10));
        assert_eq!(k.line_of("spinner.faces[0]"), Some(11));
        assert_eq!(k.line_of("spinner.faces[1]"), Some(12));
        assert_eq!(k.line_of("spinner.verbs[1]"), Some(15));
        assert_eq!(k.line_of("spinner.verbs[1].w"), Some(15));
        assert_eq!(k.line_of("spinner.interval_ms"), Some(16));
        assert_eq!(k.line_of("tool_emoji.a"), Some(17));
        assert_eq!(k.line_of("last"), Some(18));
        assert_eq!(k.line_of("colors.nope"), Some(6));
    }
}
