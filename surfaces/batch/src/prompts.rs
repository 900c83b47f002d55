//! The input: one JSON object per line, `{"id": …, "prompt": …}` with an
//! optional `toolsets` (a list of names), `model` and `system`. Every line
//! is checked before anything runs, so a typo on line 4,000 does not stop a
//! batch half-way; blank lines are skipped.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;

/// The most bad lines one error lists.
const LISTED_ERRORS: usize = 10;

/// One prompt of the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchItem {
    /// Unique in the file; a number is read as its decimal text.
    pub id: String,
    pub prompt: String,
    /// Only these toolsets (within the batch tool profile).
    pub toolsets: Option<Vec<String>>,
    /// The model of this item (default: the profile's).
    pub model: Option<String>,
    /// Text added after the system prompt for this item.
    pub system: Option<String>,
}

/// A prompts file that cannot run: every bad line (the first ten), by number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe(.errors, *.total))]
pub struct PromptsError {
    /// (line number, what is wrong), the first few.
    pub errors: Vec<(usize, String)>,
    /// How many lines are wrong in all.
    pub total: usize,
}

fn describe(errors: &[(usize, String)], total: usize) -> String {
    let mut text = format!("{total} bad line(s) in the prompts file, nothing was run:");
    for (line, error) in errors {
        text.push_str(&format!("\n  line {line}: {error}"));
    }
    if total > errors.len() {
        text.push_str(&format!("\n  … and {} more", total - errors.len()));
    }
    text
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    id: Value,
    prompt: String,
    #[serde(default)]
    toolsets: Option<Vec<String>>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    system: Option<String>,
}

/// Reads a prompts file.
pub fn parse_prompts(text: &str) -> Result<Vec<BatchItem>, PromptsError> {
    let mut items = Vec::new();
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        match item(line) {
            Ok(item) if !seen.insert(item.id.clone()) => {
                errors.push((
                    number,
                    format!("id {:?} is used by an earlier line", item.id),
                ));
            }
            Ok(item) => items.push(item),
            Err(error) => errors.push((number, error)),
        }
    }
    if !errors.is_empty() {
        let total = errors.len();
        errors.truncate(LISTED_ERRORS);
        return Err(PromptsError { errors, total });
    }
    Ok(items)
}

fn item(line: &str) -> Result<BatchItem, String> {
    let line: Line = serde_json::from_str(line).map_err(|e| {
        format!("{e} (expected {{\"id\": …, \"prompt\": …}} with optional toolsets, model, system)")
    })?;
    let id = match &line.id {
        Value::String(id) => id.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        other => return Err(format!("id must be a string or a number, not {other}")),
    };
    if id.is_empty() || id.chars().any(char::is_control) {
        return Err("id must be non-empty text on one line".to_owned());
    }
    if line.prompt.trim().is_empty() {
        return Err(format!("item {id:?} has an empty prompt"));
    }
    let filled = |text: Option<String>| text.filter(|t| !t.trim().is_empty());
    Ok(BatchItem {
        id,
        prompt: line.prompt,
        toolsets: line.toolsets,
        model: filled(line.model),
        system: filled(line.system),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn lines_are_read_with_their_options_and_blank_lines_skipped() {
        let text = r#"{"id": 1, "prompt": "What is 2+2?"}

{"id": "b", "prompt": "List the files", "toolsets": ["file"], "model": "small", "system": "Be brief."}
"#;
        let items = parse_prompts(text).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].id, "1");
        assert_eq!(items[1].toolsets.as_deref(), Some(&["file".to_owned()][..]));
        assert_eq!(items[1].model.as_deref(), Some("small"));
        assert_eq!(items[1].system.as_deref(), Some("Be brief."));
    }

    #[test]
    fn every_bad_line_is_named_and_nothing_is_returned() {
        let text = [
            r#"{"id": 1, "prompt": "fine"}"#,
            r#"{"id": 1, "prompt": "again"}"#,
            r#"{"prompt": "no id"}"#,
            "not json",
            r#"{"id": 2, "prompt": "  "}"#,
            r#"{"id": [3], "prompt": "x"}"#,
            r#"{"id": 4, "prompt": "x", "temperature": 2}"#,
        ]
        .join("\n");
        let error = parse_prompts(&text).unwrap_err();
        assert_eq!(error.total, 6);
        let lines: Vec<usize> = error.errors.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [2, 3, 4, 5, 6, 7]);
        let text = error.to_string();
        assert!(
            text.contains("line 2: id \"1\" is used by an earlier line"),
            "{text}"
        );
        assert!(text.contains("line 3: missing field `id`"), "{text}");
        assert!(
            text.contains("line 5: item \"2\" has an empty prompt"),
            "{text}"
        );
        assert!(text.contains("unknown field `temperature`"), "{text}");
    }
}
