//! `patch` in mode `replace`: exact string replacement with uniqueness
//! checks, near-match hints and a diff of what changed.

use talaria_plugin_sdk::ToolError;

use crate::diff::{Region, render_regions};
use crate::similar;

/// The outcome of a replacement.
#[derive(Debug, PartialEq, Eq)]
pub struct Replaced {
    pub text: String,
    pub count: usize,
    /// Unified diff of the change (capped).
    pub diff: String,
}

/// Lines of diff returned at most.
pub const MAX_DIFF_LINES: usize = 80;

/// Replaces `old` with `new` in `content`: exactly one occurrence, or all of
/// them with `replace_all`. `shown` names the file in messages and the diff.
///
/// Files with CRLF line ends accept `old`/`new` written with `\n`.
pub fn replace(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    shown: &str,
) -> Result<Replaced, ToolError> {
    if old.is_empty() {
        return Err(ToolError::invalid(
            "old_string is empty; to create or overwrite a whole file use write_file",
        ));
    }
    if old == new {
        return Err(ToolError::invalid(
            "old_string and new_string are identical; there is nothing to change",
        ));
    }
    let (old, new) = adapt_line_ends(content, old, new);
    let positions: Vec<usize> = content
        .match_indices(old.as_str())
        .map(|(i, _)| i)
        .collect();
    match positions.len() {
        0 => return Err(ToolError::invalid(no_match_message(content, &old, shown))),
        1 => {}
        n if !replace_all => {
            let lines: Vec<String> = positions
                .iter()
                .take(20)
                .map(|&p| (line_of(content, p) + 1).to_string())
                .collect();
            let more = if n > 20 { ", …" } else { "" };
            return Err(ToolError::invalid(format!(
                "old_string occurs {n} times in {shown} (at lines {}{more}); include more \
                 surrounding lines in old_string to make it unique, or set replace_all to \
                 true to replace every occurrence",
                lines.join(", ")
            )));
        }
        _ => {}
    }
    let mut text = String::with_capacity(content.len() + positions.len() * new.len());
    let mut last = 0;
    for &p in &positions {
        text.push_str(&content[last..p]);
        text.push_str(&new);
        last = p + old.len();
    }
    text.push_str(&content[last..]);
    let regions = regions(content, &positions, old.len(), &new);
    let old_lines: Vec<&str> = split_lines(content);
    let diff = render_regions(&old_lines, &regions, shown, 3, MAX_DIFF_LINES);
    Ok(Replaced {
        text,
        count: positions.len(),
        diff,
    })
}

/// For a CRLF file and `\n`-only strings that do not occur as written,
/// the strings with CRLF line ends.
fn adapt_line_ends(content: &str, old: &str, new: &str) -> (String, String) {
    if !old.contains('\r')
        && old.contains('\n')
        && content.contains("\r\n")
        && !content.contains(old)
    {
        let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
        let old_crlf = crlf(old);
        if content.contains(&old_crlf) {
            return (old_crlf, crlf(new));
        }
    }
    (old.to_string(), new.to_string())
}

/// 0-based line index of byte `pos`.
pub fn line_of(content: &str, pos: usize) -> usize {
    content.as_bytes()[..pos]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The lines of `text` without their ends (`\r\n` or `\n`); a final newline
/// does not start another line.
pub fn split_lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Vec::new();
    }
    body.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// The changed whole-line regions of replacing `old_len` bytes at each of
/// `positions` with `new`; matches sharing lines form one region.
fn regions(content: &str, positions: &[usize], old_len: usize, new: &str) -> Vec<Region> {
    let bytes = content.as_bytes();
    let line_start = |p: usize| {
        bytes[..p]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
    };
    let line_end = |p: usize| {
        // End (exclusive, after the newline) of the line holding byte p - 1,
        // where p is the end of a match.
        if p > 0 && bytes[p - 1] == b'\n' {
            p
        } else {
            bytes[p..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |i| p + i + 1)
        }
    };
    let mut out: Vec<Region> = Vec::new();
    let mut i = 0;
    while i < positions.len() {
        let start = line_start(positions[i]);
        let mut end = line_end(positions[i] + old_len);
        let mut j = i + 1;
        while j < positions.len() && positions[j] < end {
            end = end.max(line_end(positions[j] + old_len));
            j += 1;
        }
        let mut replaced = String::new();
        let mut last = start;
        for &p in &positions[i..j] {
            replaced.push_str(&content[last..p]);
            replaced.push_str(new);
            last = p + old_len;
        }
        replaced.push_str(&content[last..end]);
        let old_len_lines = split_lines(&content[start..end]).len();
        out.push(Region {
            old_start: line_of(content, start),
            old_len: old_len_lines,
            new_lines: split_lines(&replaced)
                .iter()
                .map(|s| s.to_string())
                .collect(),
        });
        i = j;
    }
    out
}

/// Why `old` was not found, with the closest candidates from the file.
fn no_match_message(content: &str, old: &str, shown: &str) -> String {
    let lines = split_lines(content);
    let wanted: Vec<&str> = split_lines(old)
        .into_iter()
        .skip_while(|l| l.trim().is_empty())
        .collect();
    let wanted: Vec<&str> = match wanted.iter().rposition(|l| !l.trim().is_empty()) {
        Some(last) => wanted[..=last].to_vec(),
        None => wanted,
    };
    let mut msg = format!("old_string was not found in {shown}");
    let ws = similar::whitespace_insensitive(&lines, &wanted, 3);
    if let Some(&start) = ws.first() {
        msg.push_str(&format!(
            ". It matches {} when whitespace is ignored (indentation or spacing \
             differs); the file has:\n{}\nCopy old_string exactly from the file.",
            similar::line_range(start, wanted.len()),
            similar::excerpt(&lines, start, wanted.len(), 30)
        ));
        return msg;
    }
    if let Some(p) = content.to_lowercase().find(&old.to_lowercase())
        && content.len() == content.to_lowercase().len()
    {
        msg.push_str(&format!(
            ". It matches at line {} when letter case is ignored.",
            line_of(content, p) + 1
        ));
        return msg;
    }
    let near = similar::most_similar(&lines, &wanted, 3, 0.5);
    if near.is_empty() {
        msg.push_str(", and no similar lines either; read the file to see its current content.");
        return msg;
    }
    msg.push_str(". The most similar parts of the file:");
    for n in near {
        msg.push_str(&format!(
            "\n\n{} ({:.0}% similar):\n{}",
            similar::line_range(n.start, n.len),
            n.score * 100.0,
            similar::excerpt(&lines, n.start, n.len, 20)
        ));
    }
    msg.push_str("\n\nCopy old_string exactly from the file (read_file shows the current text).");
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";

    fn invalid(r: Result<Replaced, ToolError>) -> String {
        match r {
            Err(ToolError::InvalidArguments(m)) => m,
            other => panic!("expected invalid arguments, got {other:?}"),
        }
    }

    #[test]
    fn replaces_a_unique_occurrence_with_a_diff() {
        let r = replace(FILE, "let x = 1;", "let x = 2;", false, "src/main.rs").unwrap();
        assert_eq!(r.count, 1);
        assert_eq!(r.text, FILE.replace("x = 1", "x = 2"));
        assert_eq!(
            r.diff,
            "--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,4 +1,4 @@\n fn main() {\n-    let x = 1;\n+    let x = 2;\n     println!(\"{x}\");\n }"
        );
    }

    #[test]
    fn multiline_and_deleting_replacements() {
        let r = replace(FILE, "    let x = 1;\n", "", false, "m.rs").unwrap();
        assert_eq!(r.text, "fn main() {\n    println!(\"{x}\");\n}\n");
        assert!(
            r.diff
                .contains("@@ -1,4 +1,3 @@\n fn main() {\n-    let x = 1;\n     println"),
            "{}",
            r.diff
        );
        let r = replace(FILE, "{\n    let", "{\n    // one\n    let", false, "m.rs").unwrap();
        assert!(
            r.diff.contains(
                "-fn main() {\n-    let x = 1;\n+fn main() {\n+    // one\n+    let x = 1;"
            ),
            "{}",
            r.diff
        );
    }

    #[test]
    fn multiple_matches_need_replace_all() {
        let text = "a = 1\nb = 1\nc = 1\n";
        let msg = invalid(replace(text, "= 1", "= 2", false, "f"));
        assert!(
            msg.starts_with("old_string occurs 3 times in f (at lines 1, 2, 3)"),
            "{msg}"
        );
        assert!(msg.contains("replace_all"), "{msg}");
        let r = replace(text, "= 1", "= 2", true, "f").unwrap();
        assert_eq!((r.text.as_str(), r.count), ("a = 2\nb = 2\nc = 2\n", 3));
        assert!(
            r.diff
                .contains("@@ -1,3 +1,3 @@\n-a = 1\n+a = 2\n-b = 1\n+b = 2\n-c = 1\n+c = 2"),
            "{}",
            r.diff
        );
    }

    #[test]
    fn distant_replacements_make_separate_hunks() {
        let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let r = replace(&text, "line 2\n", "LINE 2\n", false, "f").unwrap();
        assert!(r.diff.contains("@@ -1,5 +1,5 @@"), "{}", r.diff);
        let text = text.replace("line 18\n", "line 2\n");
        let r = replace(&text, "line 2\n", "L2\n", true, "f").unwrap();
        assert_eq!(r.count, 2);
        assert!(r.diff.contains("@@ -1,5 +1,5 @@"), "{}", r.diff);
        assert!(r.diff.contains("@@ -15,6 +15,6 @@"), "{}", r.diff);
    }

    #[test]
    fn no_match_shows_whitespace_insensitive_match() {
        let msg = invalid(replace(
            FILE,
            "let  x = 1;\nprintln!(\"{x}\");",
            "y",
            false,
            "m.rs",
        ));
        assert!(
            msg.starts_with(
                "old_string was not found in m.rs. It matches lines 2-3 when whitespace is ignored"
            ),
            "{msg}"
        );
        assert!(
            msg.contains("     2\t    let x = 1;\n     3\t    println!(\"{x}\");"),
            "{msg}"
        );
    }

    #[test]
    fn no_match_shows_similar_lines() {
        let msg = invalid(replace(FILE, "let x = 10;", "y", false, "m.rs"));
        assert!(
            msg.contains("The most similar parts of the file:\n\nline 2 ("),
            "{msg}"
        );
        assert!(msg.contains("     2\t    let x = 1;"), "{msg}");
        let msg = invalid(replace(FILE, "zzzz qqqq", "y", false, "m.rs"));
        assert!(
            msg.ends_with("no similar lines either; read the file to see its current content."),
            "{msg}"
        );
        let msg = invalid(replace(FILE, "LET X = 1;", "y", false, "m.rs"));
        assert!(
            msg.contains("matches at line 2 when letter case is ignored"),
            "{msg}"
        );
    }

    #[test]
    fn bad_arguments() {
        assert!(invalid(replace(FILE, "", "x", false, "f")).contains("old_string is empty"));
        assert!(invalid(replace(FILE, "main", "main", false, "f")).contains("identical"));
    }

    #[test]
    fn crlf_files_accept_lf_strings() {
        let text = "a\r\nb\r\nc\r\n";
        let r = replace(text, "a\nb", "x\ny", false, "f").unwrap();
        assert_eq!(r.text, "x\r\ny\r\nc\r\n");
    }

    #[test]
    fn split_lines_handles_ends() {
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("a"), ["a"]);
        assert_eq!(split_lines("a\n"), ["a"]);
        assert_eq!(split_lines("a\r\n\nb"), ["a", "", "b"]);
    }
}
