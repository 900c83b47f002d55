//! Splitting `SKILL.md` text into its YAML frontmatter and markdown body.

use std::borrow::Cow;

/// Drops a UTF-8 byte-order mark and turns CRLF (and lone CR) line endings
/// into LF, so files saved on Windows parse like any other.
pub(crate) fn normalize(text: &str) -> Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Splits normalised text into `(yaml, body)`: the file must open with a
/// `---` line and the frontmatter ends at the next `---` (or `...`) line.
pub(crate) fn split(text: &str) -> Result<(&str, &str), String> {
    let mut lines = text.split_inclusive('\n');
    let opened = lines.next().is_some_and(|line| line.trim_end() == "---");
    if !opened {
        return Err("no YAML frontmatter: the file must start with a '---' line".to_owned());
    }
    let start = text.find('\n').map_or(text.len(), |i| i + 1);
    let mut offset = start;
    for line in lines {
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            let body = &text[offset + line.len()..];
            return Ok((&text[start..offset], body.trim_start_matches('\n')));
        }
        offset += line.len();
    }
    Err("the YAML frontmatter is not closed by a '---' line".to_owned())
}

#[cfg(test)]
mod tests {
    use super::{normalize, split};

    #[test]
    fn splits_yaml_and_body() {
        let (yaml, body) = split("---\nname: a\n---\n\n# Body\n").unwrap();
        assert_eq!(yaml, "name: a\n");
        assert_eq!(body, "# Body\n");
    }

    #[test]
    fn bom_and_crlf_are_normalised() {
        let text = normalize("\u{feff}---\r\nname: a\r\n---\r\nbody\r\n");
        let (yaml, body) = split(&text).unwrap();
        assert_eq!(yaml, "name: a\n");
        assert_eq!(body, "body\n");
    }

    #[test]
    fn missing_or_unclosed_frontmatter_is_an_error() {
        assert!(split("# just markdown\n").is_err());
        assert!(split("").is_err());
        assert!(split("---\nname: a\n").is_err());
    }

    #[test]
    fn empty_frontmatter_and_no_body() {
        assert_eq!(split("---\n---").unwrap(), ("", ""));
    }
}
