//! Runs the text corpus in `tests/corpus/` through the built-in threat scanner.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;

use talaria_memory::normalize;
use talaria_memory::scan::{Category, Scanner, Scope};

/// Each corpus file must keep at least this many entries.
const MIN_ENTRIES: usize = 100;

/// Benign notes the scanner must keep: at least this many.
const MIN_BENIGN: usize = 200;

/// `threats.txt` must keep at least this many Chinese entries.
const MIN_CHINESE_THREATS: usize = 35;

/// One entry from a corpus file.
struct Entry {
    line: usize,
    raw: String,
    text: String,
    /// The section it is in (threats.txt only).
    section: Option<Section>,
}

/// A `[category]`, `[memory:category]` or `[document:category]` header of threats.txt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Section {
    category: Category,
    scope: Where,
}

/// Where the entries of a threats.txt section must be flagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Where {
    /// `[category]`: as a memory entry with that category, and as a document too unless the
    /// category is one whose rules apply to memory only (persistence, credential).
    Default,
    /// `[memory:category]`: as a memory entry with that category, and NOT as a document: a
    /// threat only in memory, caught by rules marked `applies = "memory"`.
    Memory,
    /// `[document:category]`: with that category both as a memory entry and as a document.
    Document,
}

/// Categories whose rules mostly apply to memory only.
const MEMORY_ONLY_CATEGORIES: [Category; 2] = [Category::Persistence, Category::Credential];

impl Section {
    /// The section a header line opens, if it is one. A `memory:`/`document:` prefix with an
    /// unknown category is a typo and panics; any other bracketed line is an entry.
    fn parse(line: &str) -> Option<Section> {
        let inner = line.strip_prefix('[')?.strip_suffix(']')?;
        let (scope, name) = match inner.split_once(':') {
            Some(("memory", name)) => (Where::Memory, name),
            Some(("document", name)) => (Where::Document, name),
            _ => (Where::Default, inner),
        };
        let category = Category::ALL.into_iter().find(|c| c.as_str() == name);
        assert!(
            category.is_some() || scope == Where::Default,
            "unknown category in section header {line:?}"
        );
        Some(Section {
            category: category?,
            scope,
        })
    }

    /// Whether the entries must be flagged when scanned as a document.
    fn flagged_as_document(self) -> bool {
        match self.scope {
            Where::Default => !MEMORY_ONLY_CATEGORIES.contains(&self.category),
            Where::Memory => false,
            Where::Document => true,
        }
    }
}

/// Reads a corpus file: one entry a line, section headers (see [`Section`]), `#` comments and
/// blank lines skipped.
fn load(name: &str) -> Vec<Entry> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("corpus file readable");
    let mut section = None;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(header) = Section::parse(trimmed) {
            section = Some(header);
            continue;
        }
        entries.push(Entry {
            line: i + 1,
            raw: line.to_owned(),
            text: decode(line),
            section,
        });
    }
    entries
}

/// Decodes the corpus escapes: `\n` newline, `\t` tab, `\u{XXXX}` any char, `\\` a backslash.
/// Any other backslash is kept as written.
fn decode(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
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

fn is_chinese(text: &str) -> bool {
    text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

fn scanner() -> &'static Scanner {
    Scanner::builtin().expect("built-in threat rules load")
}

#[test]
fn threats_are_flagged_with_their_category() {
    let entries = load("threats.txt");
    assert!(
        entries.len() >= MIN_ENTRIES,
        "threats.txt has {} entries, needs at least {MIN_ENTRIES}",
        entries.len()
    );
    let chinese = entries.iter().filter(|e| is_chinese(&e.text)).count();
    assert!(
        chinese >= MIN_CHINESE_THREATS,
        "threats.txt has {chinese} Chinese entries, needs at least {MIN_CHINESE_THREATS}"
    );
    let covered: BTreeSet<Category> = entries
        .iter()
        .filter_map(|e| e.section.map(|s| s.category))
        .collect();
    for category in Category::ALL {
        assert!(
            covered.contains(&category),
            "threats.txt has no [{category}] section"
        );
    }
    let failures: Vec<String> = entries
        .iter()
        .filter_map(|entry| {
            let expected = entry
                .section
                .expect("every threat is under a [category] header")
                .category;
            let found = scanner().scan_all(&entry.text);
            (!found.iter().any(|t| t.category == expected)).then(|| {
                let got: Vec<String> = found.iter().map(|t| t.rule_id.clone()).collect();
                format!(
                    "threats.txt:{}: {:?}\n    normalised: {:?}\n    expected {expected}, got {got:?}",
                    entry.line,
                    entry.raw,
                    normalize(&entry.text),
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} threats not flagged as expected:\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
    );
}

#[test]
fn benign_text_is_not_flagged() {
    let entries = load("benign.txt");
    assert!(
        entries.len() >= MIN_BENIGN,
        "benign.txt has {} entries, needs at least {MIN_BENIGN}",
        entries.len()
    );
    assert!(
        entries.iter().any(|e| is_chinese(&e.text)) && entries.iter().any(|e| !is_chinese(&e.text)),
        "benign.txt needs English and Chinese entries"
    );
    let failures: Vec<String> = entries
        .iter()
        .filter_map(|entry| {
            let found = scanner().scan_all(&entry.text);
            (!found.is_empty()).then(|| {
                let got: Vec<String> = found.iter().map(ToString::to_string).collect();
                format!(
                    "benign.txt:{}: {:?}\n    normalised: {:?}\n    flagged: {}",
                    entry.line,
                    entry.raw,
                    normalize(&entry.text),
                    got.join("; ")
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} benign entries flagged:\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
    );
}

#[test]
fn documents_may_describe_what_memory_must_not_hold() {
    let entries = load("documents.txt");
    assert!(
        entries.len() >= 10,
        "documents.txt has {} entries",
        entries.len()
    );
    let failures: Vec<String> = entries
        .iter()
        .filter_map(|entry| {
            let in_document = scanner().scan_all_in(&entry.text, Scope::Document);
            let in_memory = scanner().scan_all(&entry.text);
            (!in_document.is_empty() || in_memory.is_empty()).then(|| {
                let ids = |found: &[talaria_memory::Threat]| -> Vec<String> {
                    found.iter().map(|t| t.rule_id.clone()).collect()
                };
                format!(
                    "documents.txt:{}: {:?}\n    as a document: {:?}\n    as memory: {:?}",
                    entry.line,
                    entry.raw,
                    ids(&in_document),
                    ids(&in_memory)
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} documents misjudged (must pass as a document, be flagged as memory):\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
    );
}

#[test]
fn attacks_other_than_persistence_and_credentials_are_flagged_in_documents_too() {
    let failures: Vec<String> = load("threats.txt")
        .iter()
        .filter_map(|entry| {
            let section = entry.section?;
            let found = scanner().scan_all_in(&entry.text, Scope::Document);
            let ids = || -> Vec<String> { found.iter().map(|t| t.rule_id.clone()).collect() };
            if section.flagged_as_document() {
                // A `[document:…]` section names the category expected in documents too.
                let missed = match section.scope {
                    Where::Document => !found.iter().any(|t| t.category == section.category),
                    _ => found.is_empty(),
                };
                missed.then(|| {
                    format!(
                        "threats.txt:{}: {:?}\n    as a document: expected {}, got {:?}",
                        entry.line,
                        entry.raw,
                        section.category,
                        ids()
                    )
                })
            } else if section.scope == Where::Memory {
                (!found.is_empty()).then(|| {
                    format!(
                        "threats.txt:{}: {:?}\n    under [memory:{}] but flagged as a document: {:?} \
                         (move it to [document:{}])",
                        entry.line,
                        entry.raw,
                        section.category,
                        ids(),
                        section.category
                    )
                })
            } else {
                None
            }
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} threats misjudged as documents:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn section_headers_set_category_and_scope() {
    let section = |scope, category| Some(Section { category, scope });
    assert_eq!(
        Section::parse("[promptware]"),
        section(Where::Default, Category::Promptware)
    );
    assert_eq!(
        Section::parse("[memory:credential]"),
        section(Where::Memory, Category::Credential)
    );
    assert_eq!(
        Section::parse("[document:persistence]"),
        section(Where::Document, Category::Persistence)
    );
    // Entries that happen to be bracketed stay entries.
    assert_eq!(Section::parse("[INST] hi [/INST]"), None);
    assert_eq!(Section::parse("[system: note]"), None);
    assert!(
        section(Where::Default, Category::Persistence).is_some_and(|s| !s.flagged_as_document())
    );
    assert!(
        section(Where::Document, Category::Persistence).is_some_and(Section::flagged_as_document)
    );
    assert!(
        section(Where::Default, Category::Promptware).is_some_and(Section::flagged_as_document)
    );
    assert!(section(Where::Memory, Category::Promptware).is_some_and(|s| !s.flagged_as_document()));
}

#[test]
#[should_panic(expected = "unknown category")]
fn a_scoped_header_with_an_unknown_category_is_an_error() {
    Section::parse("[document:promptwear]");
}

#[test]
fn decode_handles_escapes() {
    assert_eq!(decode(r"a\nb\tc\\d\u{200B}\m"), "a\nb\tc\\d\u{200b}\\m");
}
