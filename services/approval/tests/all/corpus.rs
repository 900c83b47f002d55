//! Runs the command corpus in `tests/corpus/` through the built-in classifier.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use talaria_approval::{Classifier, Risk, normalize};

/// Each corpus file must keep at least this many commands.
const MIN_ENTRIES: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    Hardline,
    Protected,
    Dangerous,
    Safe,
}

/// One command from a corpus file.
struct Entry {
    line: usize,
    raw: String,
    command: String,
}

/// Reads a corpus file: one command a line, `#` comments and blank lines skipped.
fn load(name: &str) -> Vec<Entry> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("corpus file readable");
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(i, l)| Entry {
            line: i + 1,
            raw: l.to_owned(),
            command: decode(l),
        })
        .collect()
}

/// Decodes the corpus escapes: `\e` ESC, `\t` tab, `\n` newline, `\u{XXXX}` any char, `\\` a
/// backslash. Any other backslash is kept as written (`r\m` and `\rm` stay as they are).
fn decode(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some('e') => out.push('\u{1b}'),
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('\\') => out.push('\\'),
            Some('u') => {
                chars.next();
                assert_eq!(chars.next(), Some('{'), "bad \\u escape in {line:?}");
                let hex: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let code = u32::from_str_radix(&hex, 16).expect("hex in \\u{…}");
                out.push(char::from_u32(code).expect("valid char in \\u{…}"));
                continue;
            }
            _ => {
                out.push('\\');
                continue;
            }
        }
        chars.next();
    }
    out
}

fn check(name: &str, expected: Expected) {
    check_at_least(name, expected, MIN_ENTRIES);
}

fn check_at_least(name: &str, expected: Expected, min_entries: usize) {
    let classifier = Classifier::builtin().expect("built-in patterns load");
    let entries = load(name);
    assert!(
        entries.len() >= min_entries,
        "{name} has {} commands, needs at least {min_entries}",
        entries.len()
    );
    let failures: Vec<String> = entries
        .iter()
        .filter_map(|entry| {
            let risk = classifier.classify(&entry.command);
            let got = match risk {
                Risk::Hardline(_) => Expected::Hardline,
                Risk::Dangerous(_) => Expected::Dangerous,
                Risk::Protected(_) => Expected::Protected,
                Risk::Safe => Expected::Safe,
            };
            (got != expected).then(|| {
                format!(
                    "{name}:{}: {:?}\n    normalised: {:?}\n    expected {expected:?}, got {risk:?}",
                    entry.line,
                    entry.raw,
                    normalize(&entry.command),
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} commands misclassified:\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
    );
}

#[test]
fn hardline_corpus() {
    check("hardline.txt", Expected::Hardline);
}

#[test]
fn protected_corpus() {
    check_at_least("protected.txt", Expected::Protected, 20);
}

#[test]
fn dangerous_corpus() {
    check("dangerous.txt", Expected::Dangerous);
}

#[test]
fn safe_corpus() {
    check("safe.txt", Expected::Safe);
}

#[test]
fn decode_handles_escapes() {
    assert_eq!(decode(r"a\eb\tc\\d\u{FF52}\m"), "a\u{1b}b\tc\\dｒ\\m");
}
