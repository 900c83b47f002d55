//! Secrets recognised by their shape: provider and platform key formats, JWTs, credentials after
//! `Bearer`/`Basic`/`Authorization: token`, passwords in URLs, secret-taking flags and PEM private
//! key blocks.

use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

use crate::judge;

/// One format: the regex, the capture group that is the secret, and what else the secret must
/// satisfy (prefixes that also start ordinary words need more than the prefix).
struct Format {
    regex: Regex,
    group: usize,
    check: Check,
}

#[derive(Clone, Copy)]
enum Check {
    /// The pattern says enough.
    None,
    /// Not one character repeated (`pplx-xxxx…` is a placeholder); after a prefix that also
    /// starts ordinary names (`fal_`, `fpk_`, `fw_`, `fw-`), random-looking: a letter and a
    /// digit, and not an identifier (`fw_update_handler2`).
    Prefixed,
    /// A credential, not a word or a name (`Bearer authentication`, `Basic self.auth`).
    Credential,
    /// A value, not a placeholder or a metavariable (`--token <TOKEN>`, `--password PASSWORD`).
    Value,
}

const FORMATS: &[(&str, usize, Check)] = &[
    // PEM private key blocks: the body goes, the armour lines stay.
    (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----([\s\S]*?)-----END [A-Z0-9 ]*PRIVATE KEY-----",
        1,
        Check::None,
    ),
    // OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-), Anthropic (sk-ant-…), OpenRouter (sk-or-v1-).
    (
        r"\b(sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-|ant-|or-v1-)?[A-Za-z0-9_-]{20,})",
        1,
        Check::None,
    ),
    // GitHub tokens and fine-grained tokens.
    (
        r"\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
        1,
        Check::None,
    ),
    // GitLab, Hugging Face, npm, PyPI, DigitalOcean, SendGrid.
    (
        r"\b(glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36,}|pypi-AgE[A-Za-z0-9_-]{40,}|do[pro]_v1_[a-f0-9]{64}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})",
        1,
        Check::None,
    ),
    // Slack tokens, app-level tokens (xapp-1-A…-…-hex) and incoming webhooks.
    (
        r"\b(xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{20,}|hooks\.slack\.com/services/[A-Za-z0-9/]{20,})",
        1,
        Check::None,
    ),
    // Google API keys.
    (r"\b(AIza[0-9A-Za-z_-]{35})", 1, Check::None),
    // AWS access key ids (the secret key is caught as a secret-named field).
    (
        r"\b((?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16})\b",
        1,
        Check::None,
    ),
    // Stripe secret, restricted and webhook-signing keys; ElevenLabs (sk_ and 48 hex digits).
    (
        r"\b((?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[0-9A-Za-z]{24,}|sk_[0-9a-f]{48})\b",
        1,
        Check::None,
    ),
    // Notion (ntn_, 11 digits, 35 letters and digits), Perplexity (pplx-, 48), Tavily (tvly-,
    // tvly-dev-, tvly-prod-); fal.ai (fal_; its key id:secret pair is `key_id_pairs`), Fireworks
    // (fw_, fw-) and fpk_ keys, whose prefixes also start ordinary names. One regex: a pass each
    // cost more than the checks.
    (
        r"\b(ntn_[0-9]{11}[A-Za-z0-9]{35}|pplx-[A-Za-z0-9]{40,}|tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}|(?:fal_|fpk_|fw_|fw-)[A-Za-z0-9]{20,})\b",
        1,
        Check::Prefixed,
    ),
    // Telegram bot tokens.
    (r"\b(\d{8,10}:AA[0-9A-Za-z_-]{33})\b", 1, Check::None),
    // JSON Web Tokens.
    (
        r"\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
        1,
        Check::None,
    ),
    // Bearer and Basic credentials (headers, curl -H, logs), and GitHub's `Authorization: token`.
    (
        r#"(?i)(?:\b(?:bearer|basic)|\bauthorization["']?[ \t]*[:=][ \t]*["']?token)[ \t]+([A-Za-z0-9._~+/-]{8,}=*)"#,
        1,
        Check::Credential,
    ),
    // A password in a URL: scheme://user:password@host.
    (
        r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:([^/\s@]{3,})@",
        1,
        Check::Value,
    ),
    // Command-line flags that take a secret: --password x, --token=x.
    (
        r"(?i)--(?:password|passwd|token|api-key|apikey|secret|client-secret|access-key)(?:=|[ \t]+)([^\s'\x22\])]{4,})",
        1,
        Check::Value,
    ),
];

fn formats() -> &'static [Format] {
    static COMPILED: OnceLock<Vec<Format>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        FORMATS
            .iter()
            .filter_map(|&(pattern, group, check)| {
                // The patterns are constants checked by the tests; one that failed to compile
                // would be skipped rather than take the agent down.
                Regex::new(pattern).ok().map(|regex| Format {
                    regex,
                    group,
                    check,
                })
            })
            .collect()
    })
}

/// Every format's secrets in `text`, as byte ranges.
pub(crate) fn find(text: &str, found: &mut Vec<Range<usize>>) {
    key_id_pairs(text, found);
    for format in formats() {
        for captures in format.regex.captures_iter(text) {
            let Some(secret) = captures.get(format.group) else {
                continue;
            };
            if format.check.passes(secret.as_str()) && judge::worth_redacting(secret.as_str()) {
                found.push(secret.range());
            }
        }
    }
}

/// fal.ai keys: a UUID key id, a colon and a 32-hex-digit secret
/// (`3f349760-d024-94e2-75e3-41690b8568c7:10a7…`). Found from the hyphens by hand: as a regex,
/// with no literal to start from, it cost more than every other format together.
fn key_id_pairs(text: &str, found: &mut Vec<Range<usize>>) {
    const SHAPE: &[u8] = b"hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh:hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh";
    let bytes = text.as_bytes();
    let fits = |start: usize| {
        bytes.get(start..start + SHAPE.len()).is_some_and(|window| {
            window.iter().zip(SHAPE).all(|(&b, &shape)| match shape {
                b'h' => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
                other => b == other,
            })
        })
    };
    let word = |at: Option<&u8>| at.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
    let mut from = 0;
    while let Some(offset) = text.get(from..).and_then(|rest| rest.find('-')) {
        let hyphen = from + offset;
        from = hyphen + 1;
        // The first hyphen of a UUID comes after eight hex digits.
        let Some(start) = hyphen.checked_sub(8) else {
            continue;
        };
        let end = start + SHAPE.len();
        if fits(start)
            && !word(start.checked_sub(1).and_then(|i| bytes.get(i)))
            && !word(bytes.get(end))
        {
            found.push(start..end);
            from = end;
        }
    }
}

impl Check {
    fn passes(self, value: &str) -> bool {
        match self {
            Check::None => true,
            Check::Prefixed => {
                let body = value
                    .split_at(value.find(['_', '-']).map_or(0, |i| i + 1))
                    .1;
                if ["fal_", "fpk_", "fw_", "fw-"]
                    .iter()
                    .any(|p| value.starts_with(p))
                {
                    judge::looks_random(body)
                } else {
                    !judge::one_repeated_char(value.rsplit(['-', '_']).next().unwrap_or(body))
                }
            }
            Check::Credential => judge::looks_like_credential(value),
            Check::Value => !judge::is_metavariable(value),
        }
    }
}

#[cfg(test)]
pub(crate) fn count() -> (usize, usize) {
    (formats().len(), FORMATS.len())
}
