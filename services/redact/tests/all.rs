//! The redactor against real-shaped secrets (every provider format, in env files, JSON, YAML,
//! headers, URLs and PEM blocks) and look-alikes that must survive.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use talaria_redact::{contains_marker, redact};

/// Each corpus file keeps at least this many lines.
const MIN_SECRETS: usize = 200;
const MIN_SURVIVORS: usize = 100;

fn load(name: &str) -> Vec<(usize, String)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    std::fs::read_to_string(&path)
        .expect("corpus file readable")
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|(index, line)| (index + 1, line.replace("\\n", "\n")))
        .collect()
}

#[test]
fn every_secret_is_redacted() {
    let entries = load("secrets.txt");
    assert!(entries.len() >= MIN_SECRETS, "{} secrets", entries.len());
    let failures: Vec<String> = entries
        .iter()
        .filter_map(|(line, raw)| {
            let (before, rest) = raw.split_once('⟦').expect("a ⟦secret⟧ on every line");
            let (secret, after) = rest.split_once('⟧').expect("a closing ⟧");
            let text = format!("{before}{secret}{after}");
            let redacted = redact(&text);
            let tail: String = secret
                .chars()
                .rev()
                .take(8)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            (!contains_marker(&redacted) || redacted.contains(&tail))
                .then(|| format!("secrets.txt:{line}: {text:?}\n    redacted: {redacted:?}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} secrets not redacted:\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
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
    assert!(
        failures.is_empty(),
        "{} of {} look-alikes changed:\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
    );
}

#[test]
fn redacting_twice_changes_nothing_more() {
    for (_, raw) in load("secrets.txt") {
        let text = raw.replace(['⟦', '⟧'], "");
        let once = redact(&text).into_owned();
        assert_eq!(redact(&once), once.as_str(), "{text:?}");
    }
}
