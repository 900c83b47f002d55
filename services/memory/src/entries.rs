//! The on-disk entry format shared with Hermes: entries separated by a line holding only `§`.

/// The separator written between entries.
pub(crate) const SEPARATOR: &str = "\n§\n";

/// Splits file text into trimmed, non-empty entries. A separator is any line whose only
/// non-blank character is `§`; `\r\n` line ends are accepted.
pub(crate) fn parse(text: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if is_separator(line) {
            push_entry(&mut entries, &current);
            current.clear();
        } else {
            current.push(line);
        }
    }
    push_entry(&mut entries, &current);
    entries
}

/// The file text for `entries` (no trailing newline, as Hermes writes it).
pub(crate) fn serialize(entries: &[String]) -> String {
    entries.join(SEPARATOR)
}

/// Whether `content` holds a separator line, which would split it into several entries.
pub(crate) fn contains_separator(content: &str) -> bool {
    content
        .split('\n')
        .any(|line| is_separator(line.strip_suffix('\r').unwrap_or(line)))
}

/// Characters as the limit counts them: Unicode scalar values.
pub(crate) fn char_count(text: &str) -> usize {
    text.chars().count()
}

/// The first characters of an entry on one line, for error messages.
pub(crate) fn preview(entry: &str, max_chars: usize) -> String {
    let one_line: String = entry.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max_chars {
        one_line
    } else {
        let mut cut: String = one_line.chars().take(max_chars).collect();
        cut.push('…');
        cut
    }
}

fn is_separator(line: &str) -> bool {
    line.trim() == "§"
}

fn push_entry(entries: &mut Vec<String>, lines: &[&str]) {
    let entry = lines.join("\n");
    let entry = entry.trim();
    if !entry.is_empty() {
        entries.push(entry.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_separated_trimmed_entries() {
        assert_eq!(parse("a\n§\nb"), ["a", "b"]);
        assert_eq!(parse("  a \n\n§\n\n b\nc  \n§\n"), ["a", "b\nc"]);
        assert_eq!(parse("a\r\n§\r\nb\r\n"), ["a", "b"]);
        assert_eq!(parse("a\n  §  \nb"), ["a", "b"]);
    }

    #[test]
    fn empty_file_and_bare_separators_have_no_entries() {
        assert!(parse("").is_empty());
        assert!(parse("\n\n").is_empty());
        assert!(parse("§\n§\n§").is_empty());
    }

    #[test]
    fn a_section_sign_inside_a_line_is_text() {
        assert_eq!(parse("see § 4\n§\nb"), ["see § 4", "b"]);
        assert!(!contains_separator("see § 4"));
        assert!(contains_separator("a\n§\nb"));
        assert!(contains_separator("a\r\n § \r\nb"));
    }

    #[test]
    fn serialise_round_trips() {
        let entries = vec!["one".to_owned(), "two\nlines".to_owned()];
        let text = serialize(&entries);
        assert_eq!(text, "one\n§\ntwo\nlines");
        assert_eq!(parse(&text), entries);
        assert_eq!(serialize(&[]), "");
    }

    #[test]
    fn counts_scalar_values_and_previews_on_one_line() {
        assert_eq!(char_count("项目§é"), 4);
        assert_eq!(preview("a\n  b c", 10), "a b c");
        assert_eq!(preview("abcdefghijk", 5), "abcde…");
    }
}
