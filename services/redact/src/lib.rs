//! Talaria's secret redactor.
//!
//! Text on its way to the model, the session store, spill files, logs and exports passes
//! [`redact`]: provider and platform keys (OpenAI, Anthropic, OpenRouter, GitHub, Slack, Google,
//! AWS, Stripe, Telegram, Hugging Face, npm, PyPI, GitLab …), JWTs, `Bearer`/`Basic` credentials,
//! passwords in URLs, PEM private key blocks and the values of fields whose name says key, token,
//! secret or password (`KEY=value` lines, JSON, YAML, TOML, headers, `--password x`) become
//! `<short prefix>…[REDACTED]`, so the model can still tell which key stands where. Files on disk
//! are never changed by it; a tool call that would write a marker back is refused by the caller
//! ([`contains_marker`]).
//!
//! Hashes, UUIDs, git SHAs and base64 data have no key prefix and no secret-named field, so they
//! pass unchanged (`tests/corpus/survivors.txt`).

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Captures, Regex};

/// What replaces a secret, after the short prefix kept of it.
pub const MARKER: &str = "…[REDACTED]";

/// The tag a marker is recognised by.
const MARKER_TAG: &str = "[REDACTED]";

/// One way a secret shows up: the regex, and the capture group that is the secret.
struct Rule {
    regex: Regex,
    group: usize,
}

/// The rules, in the order they run: formats first, so a field rule sees their markers and
/// leaves them alone.
const RULES: &[(&str, usize)] = &[
    // PEM private key blocks: the body goes, the armour lines stay.
    (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----([\s\S]*?)-----END [A-Z0-9 ]*PRIVATE KEY-----",
        1,
    ),
    // OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-), Anthropic (sk-ant-…), OpenRouter (sk-or-v1-).
    (
        r"\b(sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-|ant-|or-v1-)?[A-Za-z0-9_-]{20,})",
        1,
    ),
    // GitHub tokens and fine-grained tokens.
    (
        r"\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
        1,
    ),
    // GitLab, Hugging Face, npm, PyPI, DigitalOcean, SendGrid.
    (
        r"\b(glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36,}|pypi-AgE[A-Za-z0-9_-]{40,}|do[pro]_v1_[a-f0-9]{64}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})",
        1,
    ),
    // Slack tokens and incoming webhooks.
    (
        r"\b(xox[abposre]-[A-Za-z0-9-]{10,}|hooks\.slack\.com/services/[A-Za-z0-9/]{20,})",
        1,
    ),
    // Google API keys.
    (r"\b(AIza[0-9A-Za-z_-]{35})", 1),
    // AWS access key ids (the secret key is caught as a secret-named field).
    (
        r"\b((?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16})\b",
        1,
    ),
    // Stripe secret, restricted and webhook-signing keys.
    (
        r"\b((?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[0-9A-Za-z]{24,})",
        1,
    ),
    // Telegram bot tokens.
    (r"\b(\d{8,10}:AA[0-9A-Za-z_-]{33})\b", 1),
    // JSON Web Tokens.
    (
        r"\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
        1,
    ),
    // Bearer and Basic credentials (headers, curl -H, logs).
    (r"(?i)\b(?:bearer|basic)\s+([A-Za-z0-9._~+/-]{8,}=*)", 1),
    // A password in a URL: scheme://user:password@host.
    (r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:([^/\s@]{3,})@", 1),
    // Command-line flags that take a secret: --password x, --token=x.
    (
        r"(?i)--(?:password|passwd|token|api-key|apikey|secret|client-secret|access-key)(?:=|\s+)([^\s'\x22]{4,})",
        1,
    ),
    // Fields whose name says so, in env files, JSON, YAML, TOML, INI and headers; the value
    // quoted or bare.
    (
        r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]*(?:api[_.-]?key|apikey|access[_.-]?key|secret[_.-]?(?:access[_.-]?)?key|private[_.-]?key|client[_.-]?secret|signing[_.-]?key|encryption[_.-]?key|master[_.-]?key|secret|token|password|passwd|pwd|passphrase))["']?[ \t]*[:=][ \t]*(?:"(?P<double>[^"\n]{4,})"|'(?P<single>[^'\n]{4,})'|(?P<bare>[^\s"',;}\]]{4,}))"#,
        0,
    ),
];

fn rules() -> &'static [Rule] {
    static RULES_COMPILED: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES_COMPILED.get_or_init(|| {
        RULES
            .iter()
            .filter_map(|(pattern, group)| {
                // The patterns are constants checked by the tests; one that failed to compile
                // would be skipped rather than take the agent down.
                Regex::new(pattern).ok().map(|regex| Rule {
                    regex,
                    group: *group,
                })
            })
            .collect()
    })
}

/// `text` with every secret replaced by its short prefix and [`MARKER`]; borrowed when nothing
/// was found.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut current = Cow::Borrowed(text);
    for rule in rules() {
        if let Cow::Owned(changed) = rule.apply(&current) {
            current = Cow::Owned(changed);
        }
    }
    current
}

/// Whether `text` holds a redaction marker: writing it back would replace a secret with it.
pub fn contains_marker(text: &str) -> bool {
    text.contains(MARKER_TAG)
}

impl Rule {
    fn apply<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.regex
            .replace_all(text, |captures: &Captures<'_>| self.replace(captures))
    }

    /// The match with its secret part masked.
    fn replace(&self, captures: &Captures<'_>) -> String {
        let whole = captures.get(0).map_or("", |m| m.as_str());
        // A field rule's value is whichever of its groups matched; `PWD` is a directory.
        let secret = if self.group == 0 {
            let name = captures.name("name").map_or("", |m| m.as_str());
            if name.eq_ignore_ascii_case("pwd") || name.eq_ignore_ascii_case("oldpwd") {
                return whole.to_owned();
            }
            ["double", "single", "bare"]
                .iter()
                .find_map(|group| captures.name(group))
        } else {
            captures.get(self.group)
        };
        let Some(secret) = secret else {
            return whole.to_owned();
        };
        let value = secret.as_str();
        if !worth_redacting(value) {
            return whole.to_owned();
        }
        let start = secret.start() - captures.get(0).map_or(0, |m| m.start());
        let end = start + value.len();
        format!("{}{}{}", &whole[..start], masked(value), &whole[end..])
    }
}

/// A value that is not a secret: a reference, a placeholder, a number, an existing marker.
fn worth_redacting(value: &str) -> bool {
    let lower = value.trim().to_ascii_lowercase();
    const PLACEHOLDERS: &[&str] = &[
        "null",
        "none",
        "true",
        "false",
        "changeme",
        "change_me",
        "example",
        "placeholder",
        "redacted",
        "secret",
        "password",
        "undefined",
    ];
    !(value.contains("[REDACTED")
        || lower.starts_with(['$', '<', '{', '%', '*'])
        || lower.starts_with("your")
        || lower.starts_with("xxxx")
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("env.")
        || PLACEHOLDERS.contains(&lower.as_str())
        || (lower.len() < 8 && lower.chars().all(|c| c.is_ascii_digit())))
}

/// The kept prefix (a quarter of the value, at most six characters) and the marker.
fn masked(value: &str) -> String {
    let keep = (value.chars().count() / 4).min(6);
    let prefix: String = value.chars().take(keep).collect();
    format!("{prefix}{MARKER}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles() {
        assert_eq!(rules().len(), RULES.len());
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
    fn references_placeholders_and_numbers_stay() {
        for text in [
            "token=${DEPLOY_TOKEN}",
            "password: <your password>",
            "max_tokens: 4096",
            "api_key: null",
            "OPENAI_API_KEY=$OPENAI_API_KEY",
        ] {
            assert_eq!(redact(text), text);
        }
    }
}
