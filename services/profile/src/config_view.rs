//! `config.yaml` as commands see it: every value of a field whose name says key, token,
//! secret or password replaced, so settings stay readable inside the sandbox while keys
//! written literally into the file (`model.api_key: sk-…`, `api_server.key`, a platform's
//! `token`) do not.

/// What a hidden value reads as.
pub const HIDDEN_VALUE: &str = "\"<hidden from commands>\"";

/// Name parts (split at `_`, `-`, `.`) that make a field secret. `tokens` is a count
/// (`max_tokens`), not a token.
const SECRET_PARTS: &[&str] = &[
    "key",
    "keys",
    "apikey",
    "apikeys",
    "token",
    "secret",
    "secrets",
    "password",
    "passwd",
    "credential",
    "credentials",
    "pat",
];

/// `text` with the values of secret-named fields hidden (inline values, block scalars and
/// list items under such a field), comments and layout kept; `None` when nothing needed
/// hiding. References (`${VAR}`), empty values, `null` and booleans stay.
pub fn without_secrets(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    // The indentation of a secret field whose value continues on the next lines.
    let mut open: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        let indent = body.len() - body.trim_start().len();
        let trimmed = body.trim_start();
        if let Some(key_indent) = open {
            let continues = !trimmed.is_empty()
                && !trimmed.starts_with('#')
                && (indent > key_indent || (indent == key_indent && trimmed.starts_with("- ")));
            if continues {
                let (lead, value) = match trimmed.strip_prefix("- ") {
                    Some(item) => (&body[..body.len() - item.len()], item),
                    None => (&body[..indent], trimmed),
                };
                if worth_hiding(value) {
                    out.push_str(lead);
                    out.push_str(HIDDEN_VALUE);
                    changed = true;
                } else {
                    out.push_str(body);
                }
                out.push_str(ending);
                continue;
            }
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                open = None;
            }
        }
        match secret_field(body) {
            Some((_, value)) if value.is_empty() || is_block_indicator(value) => {
                open = Some(indent);
                out.push_str(line);
            }
            Some((prefix, value)) if worth_hiding(value) => {
                out.push_str(prefix);
                out.push_str(HIDDEN_VALUE);
                out.push_str(ending);
                changed = true;
            }
            _ => out.push_str(line),
        }
    }
    changed.then_some(out)
}

/// For `  name: value  # note`, when `name` is secret: the text up to the value (`  name: `)
/// and the value without its comment.
fn secret_field(body: &str) -> Option<(&str, &str)> {
    let trimmed = body.trim_start();
    let entry = trimmed.strip_prefix("- ").unwrap_or(trimmed);
    let colon = entry.find(':')?;
    let name = entry[..colon].trim().trim_matches(['"', '\'']);
    if name.is_empty() || name.contains(' ') || !is_secret_field(name) {
        return None;
    }
    let after = &entry[colon + 1..];
    if !after.is_empty() && !after.starts_with([' ', '\t']) {
        return None;
    }
    let value_start = body.len() - after.len() + (after.len() - after.trim_start().len());
    let value = without_comment(body[value_start..].trim_end());
    Some((&body[..value_start], value))
}

fn is_secret_field(name: &str) -> bool {
    name.to_ascii_lowercase()
        .split(['_', '-', '.'])
        .any(|part| SECRET_PARTS.contains(&part))
}

/// A value up to a ` #` comment (quoted values keep their `#`).
fn without_comment(value: &str) -> &str {
    if value.starts_with(['"', '\'']) {
        return value;
    }
    match value.find(" #") {
        Some(at) => value[..at].trim_end(),
        None => value,
    }
}

fn is_block_indicator(value: &str) -> bool {
    matches!(value.trim_end_matches(['-', '+']), "|" | ">")
}

fn worth_hiding(value: &str) -> bool {
    let unquoted = value.trim().trim_matches(['"', '\'']);
    !(unquoted.is_empty()
        || unquoted.starts_with("${")
        || matches!(
            unquoted.to_ascii_lowercase().as_str(),
            "null" | "~" | "true" | "false" | "[]" | "{}"
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_keys_are_hidden_and_everything_else_kept() {
        let text = "model:\n  provider: openai\n  name: gpt-x\n  api_key: sk-live-123 # mine\n\
                    \x20 max_tokens: 4096\n  api_keys:\n  - sk-a\n  - ${SECOND}\n\
                    api_server:\n  key: \"s3cret-key\"\n  port: 8642\n\
                    gateway:\n  telegram:\n    token: '123:AAx'\n\
                    security:\n  redact_secrets: true\n";
        let view = without_secrets(text).unwrap();
        assert_eq!(
            view,
            format!(
                "model:\n  provider: openai\n  name: gpt-x\n  api_key: {HIDDEN_VALUE}\n\
                 \x20 max_tokens: 4096\n  api_keys:\n  - {HIDDEN_VALUE}\n  - ${{SECOND}}\n\
                 api_server:\n  key: {HIDDEN_VALUE}\n  port: 8642\n\
                 gateway:\n  telegram:\n    token: {HIDDEN_VALUE}\n\
                 security:\n  redact_secrets: true\n"
            )
        );
    }

    #[test]
    fn block_scalars_and_unindented_lists_under_a_secret_are_hidden() {
        let text = "fallback:\n- name: m\n  api_key: |\n    line-one\n    line-two\n\
                    keys:\n- k1\n- k2\nnext: 1\n";
        let view = without_secrets(text).unwrap();
        assert!(!view.contains("line-one") && !view.contains("k1"), "{view}");
        assert!(view.ends_with("next: 1\n"), "{view}");
        assert!(view.contains("- name: m\n"), "{view}");
    }

    #[test]
    fn a_file_without_literal_secrets_needs_no_view() {
        for text in [
            "model:\n  api_key: ${OPENAI_API_KEY}\n  name: m\n",
            "approvals:\n  mode: ask\n",
            "model:\n  max_tokens: 10\n",
            "",
        ] {
            assert_eq!(without_secrets(text), None, "{text}");
        }
    }
}
