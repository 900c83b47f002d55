//! Talaria's secret redactor.
//!
//! Text on its way to the model, the session store, spill files, logs and exports passes
//! [`redact`]: provider and platform keys (OpenAI, Anthropic, OpenRouter, GitHub, Slack, Google,
//! AWS, Stripe, Telegram, Hugging Face, npm, PyPI, GitLab, Perplexity, Notion, Tavily …), JWTs,
//! `Bearer`/`Basic`/`Authorization: token` credentials, passwords in URLs, PEM private key blocks
//! and the values of fields whose name says key, token, secret or password (`KEY=value` lines,
//! JSON, YAML, TOML, headers, `--password x`) become `<short prefix>…[REDACTED]`, so the model can
//! still tell which key stands where. Files on disk are never changed by it; a tool call that
//! would write a marker back is refused by the caller ([`contains_marker`]).
//!
//! Text is read through its JSON and markdown escapes (a tool result is a JSON object, a fetched
//! page is markdown), and only the secrets are replaced: every other character, newlines and
//! names included, stays where it was. A field's value is judged before it goes: code that names a
//! secret (`token = await getToken()`) is not one (`fields`, README "Judgement calls").
//!
//! Hashes, UUIDs, git SHAs and base64 data have no key prefix and no secret-named field, so they
//! pass unchanged (`tests/corpus/survivors.txt`).

use std::borrow::Cow;
use std::ops::Range;

mod fields;
mod formats;
mod judge;
mod view;

/// What replaces a secret, after the short prefix kept of it.
pub const MARKER: &str = "…[REDACTED]";

/// The tag a marker is recognised by.
const MARKER_TAG: &str = "[REDACTED]";

/// `text` with every secret replaced by its short prefix and [`MARKER`]; borrowed when nothing
/// was found.
pub fn redact(text: &str) -> Cow<'_, str> {
    let view = view::View::new(text);
    let mut secrets = Vec::new();
    formats::find(&view.text, &mut secrets);
    fields::find(&view.text, &mut secrets);
    if secrets.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut changed = false;
    for secret in merged(secrets) {
        let Some(value) = view.text.get(secret.clone()) else {
            continue;
        };
        // A secret found twice (a format inside a field) or an earlier marker: leave it.
        if value.contains(MARKER_TAG) {
            continue;
        }
        let kept = kept_prefix(value);
        let start = view.original(secret.start);
        let kept_end = view.original(secret.start + kept);
        let end = view.original(secret.end);
        let Some(before) = text.get(copied..kept_end).filter(|_| kept_end <= end) else {
            continue;
        };
        if start < copied || !text.is_char_boundary(end) {
            continue;
        }
        out.push_str(before);
        out.push_str(MARKER);
        // A secret over several lines (a PEM body) keeps its line breaks, as the original
        // writes them (`\n`, `\r\n`, or escaped in JSON): the lines after it keep their numbers.
        for (offset, _) in value[kept..].match_indices('\n') {
            let at = secret.start + kept + offset;
            let from = if value[..kept + offset].ends_with('\r') {
                view.original(at - 1)
            } else {
                view.original(at)
            };
            if let Some(newline) = text.get(from.max(kept_end)..view.original(at + 1)) {
                out.push_str(newline);
            }
        }
        copied = end;
        changed = true;
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Whether `text` holds a redaction marker: writing it back would replace a secret with it.
pub fn contains_marker(text: &str) -> bool {
    text.contains(MARKER_TAG)
}

/// The ranges in order, overlapping ones joined.
fn merged(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_unstable_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match out.last_mut() {
            Some(last) if range.start < last.end => last.end = last.end.max(range.end),
            _ => out.push(range),
        }
    }
    out
}

/// The length in bytes of the prefix kept of a secret: a quarter of it, at most six characters.
fn kept_prefix(value: &str) -> usize {
    let keep = (value.chars().count() / 4).min(6);
    value
        .char_indices()
        .nth(keep)
        .map_or(value.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles() {
        let (compiled, all) = formats::count();
        assert_eq!(compiled, all);
        assert!(fields::compiles());
    }

    #[test]
    fn a_key_keeps_a_short_prefix() {
        let text = "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123";
        let redacted = redact(text);
        assert_eq!(redacted, "OPENAI_API_KEY=sk-pro…[REDACTED]");
        assert!(contains_marker(&redacted));
    }

    #[test]
    fn fields_and_headers_lose_their_values() {
        assert_eq!(redact("DB_PASSWORD=hunter2"), "DB_PASSWORD=h…[REDACTED]");
        assert_eq!(
            redact(r#"{"apiKey": "abcd1234efgh5678"}"#),
            r#"{"apiKey": "abcd…[REDACTED]"}"#
        );
        assert_eq!(
            redact("curl -H 'Authorization: Bearer abc.def.ghi1234567'"),
            "curl -H 'Authorization: Bearer abc.…[REDACTED]'"
        );
        assert_eq!(
            redact("https://bob:s3cretpass@db.example.com/x"),
            "https://bob:s3…[REDACTED]@db.example.com/x"
        );
    }

    #[test]
    fn escaped_text_keeps_its_escapes_and_lines() {
        let result = r#"{"content":"     1\tA_TOKEN=abc123def456\n     2\tB_PASSWORD=zzzyyyxxx999\n     3\tx = {\"api_key\": \"abcd1234efgh5678\"}"}"#;
        assert_eq!(
            redact(result),
            r#"{"content":"     1\tA_TOKEN=abc…[REDACTED]\n     2\tB_PASSWORD=zzz…[REDACTED]\n     3\tx = {\"api_key\": \"abcd…[REDACTED]\"}"}"#
        );
        assert_eq!(
            redact(r"token ghp\_abcdefghijklmnopqrstuvwxyz0123456789"),
            r"token ghp\_ab…[REDACTED]"
        );
    }

    #[test]
    fn references_placeholders_numbers_and_code_stay() {
        for text in [
            "token=${DEPLOY_TOKEN}",
            "password: <your password>",
            "max_tokens: 4096",
            "api_key: null",
            "OPENAI_API_KEY=$OPENAI_API_KEY",
            "const token = await getToken();",
            "api_key = config.get('api_key')",
            "HA_TOKEN=os.getenv('HOMEASSISTANT_TOKEN')",
            "password: Option<String>,",
            "token: refused HTTP request to http://127.0.0.1:8080/",
        ] {
            assert_eq!(redact(text), text);
        }
    }
}
