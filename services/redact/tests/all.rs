//! The redactor against real-shaped secrets (every provider format, in env files, JSON, YAML,
//! headers, URLs and PEM blocks), look-alikes that must survive, and real source code that names
//! keys and tokens without holding one; each also as a tool would return it (a JSON object whose
//! string holds numbered lines, which is what the dispatcher redacts).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use regex::Regex;
use talaria_redact::{contains_marker, redact};

/// Each corpus file keeps at least this many lines.
const MIN_SECRETS: usize = 200;
const MIN_SURVIVORS: usize = 100;
const MIN_CODE_LINES: usize = 1500;
/// code.txt comes from at least this many source files (its `# from` headers).
const MIN_CODE_FILES: usize = 300;

fn corpus_text(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    std::fs::read_to_string(&path).expect("corpus file readable")
}

/// A corpus line's escapes resolved: `\n` a newline, `\t` a tab, `\\` one backslash; any other
/// backslash stays as it is.
fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// secrets.txt and survivors.txt: one entry a line, with escapes; `#` lines are comments.
fn load(name: &str) -> Vec<(usize, String)> {
    corpus_text(name)
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|(index, line)| (index + 1, unescape(line)))
        .collect()
}

/// code.txt: raw source lines (no escapes); `# ` lines are its provenance headers.
fn load_code() -> Vec<(usize, String)> {
    corpus_text("code.txt")
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty() && !line.starts_with("# "))
        .map(|(index, line)| (index + 1, line.to_owned()))
        .collect()
}

/// A secrets.txt entry: the text, and the secret in it.
fn secret_entry(raw: &str) -> (String, String) {
    let (before, rest) = raw.split_once('⟦').expect("a ⟦secret⟧ on every line");
    let (secret, after) = rest.split_once('⟧').expect("a closing ⟧");
    (format!("{before}{secret}{after}"), secret.to_owned())
}

fn last_chars(text: &str, count: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    chars[chars.len().saturating_sub(count)..].iter().collect()
}

/// `text` as the inside of a JSON string, escaped the way serde_json writes it.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// `text` the way the fs plugin's read_file returns it to the dispatcher: numbered lines
/// (`{n:>6}\t`) in the JSON object's `content` string.
fn read_file_result(text: &str) -> String {
    let numbered: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(index, line)| format!("{:>6}\t{line}", index + 1))
        .collect();
    format!(
        r#"{{"content":"{}","total_lines":{}}}"#,
        json_string(&numbered.join("\n")),
        numbered.len()
    )
}

fn report(failures: &[String], total: usize, what: &str) {
    assert!(
        failures.is_empty(),
        "{} of {total} {what}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_secret_is_redacted() {
    let entries = load("secrets.txt");
    assert!(entries.len() >= MIN_SECRETS, "{} secrets", entries.len());
    let failures: Vec<String> = entries
        .iter()
        .filter_map(|(line, raw)| {
            let (text, secret) = secret_entry(raw);
            let redacted = redact(&text);
            (!contains_marker(&redacted) || redacted.contains(&last_chars(&secret, 8)))
                .then(|| format!("secrets.txt:{line}: {text:?}\n    redacted: {redacted:?}"))
        })
        .collect();
    report(&failures, entries.len(), "secrets not redacted");
}

#[test]
fn every_secret_is_redacted_in_a_tool_result() {
    let entries = load("secrets.txt");
    let failures: Vec<String> = entries
        .iter()
        .filter_map(|(line, raw)| {
            let (text, secret) = secret_entry(raw);
            let result = read_file_result(&text);
            let redacted = redact(&result);
            let tail = last_chars(&json_string(&secret), 8);
            (!contains_marker(&redacted) || redacted.contains(&tail))
                .then(|| format!("secrets.txt:{line}: {result:?}\n    redacted: {redacted:?}"))
        })
        .collect();
    report(
        &failures,
        entries.len(),
        "secrets not redacted in a tool result",
    );
}

#[test]
fn look_alikes_survive() {
    let entries = load("survivors.txt");
    assert!(
        entries.len() >= MIN_SURVIVORS,
        "{} survivors",
        entries.len()
    );
    let failures: Vec<String> = entries
        .iter()
        .filter(|(_, text)| redact(text) != text.as_str())
        .map(|(line, text)| {
            format!(
                "survivors.txt:{line}: {text:?}\n    redacted: {:?}",
                redact(text)
            )
        })
        .collect();
    report(&failures, entries.len(), "look-alikes changed");
}

#[test]
fn look_alikes_survive_in_a_tool_result() {
    let entries = load("survivors.txt");
    let failures: Vec<String> = entries
        .iter()
        .map(|(line, text)| (line, read_file_result(text)))
        .filter(|(_, result)| redact(result) != result.as_str())
        .map(|(line, result)| {
            format!(
                "survivors.txt:{line}: {result:?}\n    redacted: {:?}",
                redact(&result)
            )
        })
        .collect();
    report(
        &failures,
        entries.len(),
        "look-alikes changed in a tool result",
    );
}

#[test]
fn code_that_names_secrets_is_left_alone() {
    let text = corpus_text("code.txt");
    let files = text.lines().filter(|l| l.starts_with("# from ")).count();
    let entries = load_code();
    assert!(files >= MIN_CODE_FILES, "code.txt has {files} source files");
    assert!(
        entries.len() >= MIN_CODE_LINES,
        "code.txt has {} lines",
        entries.len()
    );
    let failures: Vec<String> = entries
        .iter()
        .filter(|(_, line)| redact(line) != line.as_str())
        .map(|(number, line)| {
            format!(
                "code.txt:{number}: {line:?}\n    redacted: {:?}",
                redact(line)
            )
        })
        .collect();
    report(&failures, entries.len(), "code lines changed");
}

#[test]
fn code_is_left_alone_as_whole_files_and_tool_results() {
    let entries = load_code();
    // Pages of 500 lines, like read_file's default window.
    for page in entries.chunks(500) {
        let text: Vec<&str> = page.iter().map(|(_, line)| line.as_str()).collect();
        let text = text.join("\n");
        let redacted = redact(&text);
        let changed: Vec<(&str, &str)> = text
            .lines()
            .zip(redacted.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert!(changed.is_empty(), "changed in a page: {changed:#?}");
        let result = read_file_result(&text);
        let redacted = redact(&result);
        if redacted != result.as_str() {
            let original = result.split("\\n");
            let changed: Vec<(&str, &str)> = original
                .zip(redacted.split("\\n"))
                .filter(|(a, b)| a != b)
                .take(20)
                .collect();
            panic!("changed in a tool result: {changed:#?}");
        }
    }
}

/// The names of secret-named fields in a line (`DB_PASSWORD` in `DB_PASSWORD=x`).
fn field_names(line: &str) -> Vec<String> {
    static NAME: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let name = NAME.get_or_init(|| {
        Regex::new(r#"(?i)[A-Za-z0-9_.-]*(?:key|token|secret|password|passwd)[A-Za-z0-9_.-]*["']?[ \t]*[:=]"#)
            .expect("pattern compiles")
    });
    name.find_iter(line)
        .map(|m| m.as_str().to_owned())
        .collect()
}

#[test]
fn line_structure_is_kept() {
    let mut texts: Vec<String> = load("secrets.txt")
        .into_iter()
        .map(|(_, raw)| secret_entry(&raw).0)
        .collect();
    texts.extend(load("survivors.txt").into_iter().map(|(_, text)| text));
    texts.extend(load_code().into_iter().map(|(_, text)| text));
    let mut failures = Vec::new();
    for chunk in texts.chunks(40) {
        let text = chunk.join("\n");
        let redacted = redact(&text);
        if redacted.lines().count() != text.lines().count() {
            failures.push(format!(
                "line count {} became {}: {text:?}\n    redacted: {redacted:?}",
                text.lines().count(),
                redacted.lines().count()
            ));
            continue;
        }
        for (before, after) in text.lines().zip(redacted.lines()) {
            for name in field_names(before) {
                if !after.contains(&name) {
                    failures.push(format!(
                        "{name:?} lost: {before:?}\n    redacted: {after:?}"
                    ));
                }
            }
        }
        let result = read_file_result(&text);
        let redacted = redact(&result);
        if redacted.matches("\\n").count() != result.matches("\\n").count() {
            failures.push(format!(
                "lines merged in a tool result: {result:?}\n    redacted: {redacted:?}"
            ));
        }
    }
    report(&failures, texts.len(), "structure failures");
}

#[test]
fn redacting_twice_changes_nothing_more() {
    for (_, raw) in load("secrets.txt") {
        let (text, _) = secret_entry(&raw);
        let once = redact(&text).into_owned();
        assert_eq!(redact(&once), once.as_str(), "{text:?}");
        let result = read_file_result(&text);
        let once = redact(&result).into_owned();
        assert_eq!(redact(&once), once.as_str(), "{result:?}");
    }
}
