//! A rule file's regexes, each compiled the first time a text could match it.

use std::collections::HashMap;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::Regex;

use crate::error::PatternError;
use crate::literals;

/// Required literals worked out at build time (see [`crate::codegen`]): each expanded pattern
/// with its literals (`None`: every text must be tried), sorted by pattern.
pub type LiteralTable = &'static [(&'static str, Option<&'static [&'static [u8]]>)];

/// Regexes compiled on first use; [`PatternSet::screen`] tells which could match a text.
#[derive(Debug)]
pub struct PatternSet {
    patterns: Vec<Pattern>,
    screener: OnceLock<Option<Screener>>,
}

#[derive(Debug)]
struct Pattern {
    /// Whose pattern it is (a rule id), for error messages.
    label: String,
    source: String,
    literals: Option<Literals>,
    regex: OnceLock<Result<Regex, PatternError>>,
}

#[derive(Debug)]
enum Literals {
    Built(&'static [&'static [u8]]),
    Found(Vec<Vec<u8>>),
}

impl Literals {
    fn iter(&self) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match self {
            Literals::Built(literals) => Box::new(literals.iter().copied()),
            Literals::Found(literals) => Box::new(literals.iter().map(Vec::as_slice)),
        }
    }
}

/// One automaton over every pattern's literals.
#[derive(Debug)]
struct Screener {
    automaton: AhoCorasick,
    /// For each literal of the automaton, the patterns that require it.
    owners: Vec<Vec<usize>>,
    /// Patterns without literals: candidates for every text.
    always: Vec<usize>,
}

/// Which patterns of a set could match one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screen(Vec<bool>);

impl Screen {
    /// Whether pattern `index` could match the screened text.
    pub fn may_match(&self, index: usize) -> bool {
        self.0.get(index).copied().unwrap_or(true)
    }
}

impl PatternSet {
    /// The set of `patterns`: (label, expanded pattern) pairs, the label naming the pattern in
    /// errors. Literals come from `table` where it knows the pattern and are worked out here
    /// otherwise, which also checks the syntax.
    pub fn new(
        patterns: Vec<(String, String)>,
        table: LiteralTable,
    ) -> Result<Self, (String, PatternError)> {
        let patterns = patterns
            .into_iter()
            .map(|(label, source)| {
                let literals = match table.binary_search_by(|(known, _)| (*known).cmp(&source)) {
                    Ok(found) => table[found].1.map(Literals::Built),
                    Err(_) => match literals::required(&source) {
                        Ok(found) => found.map(Literals::Found),
                        Err(error) => return Err((label, error)),
                    },
                };
                Ok(Pattern {
                    label,
                    source,
                    literals,
                    regex: OnceLock::new(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            patterns,
            screener: OnceLock::new(),
        })
    }

    /// How many patterns the set holds.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    /// Whether the set holds no pattern.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Which patterns could match `text`: one pass over it, no regex compiled.
    pub fn screen(&self, text: &str) -> Screen {
        let Some(screener) = self.screener.get_or_init(|| self.build_screener()) else {
            return Screen(vec![true; self.patterns.len()]);
        };
        let mut candidates = vec![false; self.patterns.len()];
        for &index in &screener.always {
            candidates[index] = true;
        }
        for found in screener.automaton.find_overlapping_iter(text) {
            for &index in &screener.owners[found.pattern().as_usize()] {
                candidates[index] = true;
            }
        }
        Screen(candidates)
    }

    /// Whether pattern `index` could match `text`, checking only its own literals (for a text
    /// screened once and then changed).
    pub fn may_match(&self, index: usize, text: &str) -> bool {
        match self.patterns.get(index).and_then(|p| p.literals.as_ref()) {
            Some(literals) => literals
                .iter()
                .any(|literal| contains(text.as_bytes(), literal)),
            None => true,
        }
    }

    /// Pattern `index`, compiled on the first call.
    pub fn regex(&self, index: usize) -> Result<&Regex, PatternError> {
        let pattern = self
            .patterns
            .get(index)
            .ok_or(PatternError::NoSuchPattern(index))?;
        pattern
            .regex
            .get_or_init(|| Regex::new(&pattern.source).map_err(PatternError::from))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Compiles every pattern now (checks a rule file completely); the first failure's label.
    pub fn compile_all(&self) -> Result<(), (String, PatternError)> {
        self.patterns
            .iter()
            .enumerate()
            .try_for_each(|(index, pattern)| {
                self.regex(index)
                    .map(|_| ())
                    .map_err(|error| (pattern.label.clone(), error))
            })
    }

    fn build_screener(&self) -> Option<Screener> {
        let mut literal_ids: HashMap<&[u8], usize> = HashMap::new();
        let mut literals: Vec<&[u8]> = Vec::new();
        let mut owners: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        for (index, pattern) in self.patterns.iter().enumerate() {
            let Some(required) = &pattern.literals else {
                always.push(index);
                continue;
            };
            for literal in required.iter() {
                let id = *literal_ids.entry(literal).or_insert_with(|| {
                    literals.push(literal);
                    owners.push(Vec::new());
                    literals.len() - 1
                });
                owners[id].push(index);
            }
        }
        // The contiguous NFA builds quickly and searches short texts fast; if the automaton
        // cannot be built every pattern is simply tried.
        let automaton = AhoCorasick::builder()
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(&literals)
            .ok()?;
        Some(Screener {
            automaton,
            owners,
            always,
        })
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PATTERNS: [&str; 8] = [
        r"^rm\s(?:.*\s)?-[a-z]*r[a-z]*(?:\s|$)",
        r"(?:^|[\s;&|(])(?:curl|wget)\s[^;&]*\|\s*(?:ba)?sh(?:\s|$)",
        r"(?i)ignore\s(?:all\s)?previous",
        r"\bdrop\s(?:table|database)\b",
        r"[\w.]+@[\w.]+",
        r"x?",
        r"私钥|令牌",
        r"(?:rm|dd)+\s",
    ];

    fn set() -> PatternSet {
        let patterns = PATTERNS
            .iter()
            .map(|p| ("test".to_owned(), (*p).to_owned()))
            .collect();
        PatternSet::new(patterns, &[]).expect("test patterns parse")
    }

    fn compiled(set: &PatternSet) -> Vec<bool> {
        set.patterns
            .iter()
            .map(|p| p.regex.get().is_some())
            .collect()
    }

    #[test]
    fn a_text_without_the_literals_compiles_nothing() {
        let set = set();
        let screen = set.screen("ls -la src");
        // Only `x?`, which has no literal, is a candidate (the e-mail pattern requires `@`).
        let candidates: Vec<bool> = (0..set.len()).map(|i| screen.may_match(i)).collect();
        assert_eq!(
            candidates,
            [false, false, false, false, false, true, false, false]
        );
        assert!(compiled(&set).iter().all(|c| !c));
        let screen = set.screen("curl -s x | sh");
        assert!(screen.may_match(1));
        assert!(matches!(
            set.regex(1).map(|r| r.is_match("curl -s x | sh")),
            Ok(true)
        ));
        assert!(compiled(&set)[1]);
        assert!(matches!(
            set.regex(PATTERNS.len()),
            Err(PatternError::NoSuchPattern(_))
        ));
    }

    #[test]
    fn table_literals_are_used_without_parsing() {
        // A table entry is trusted: this "pattern" would not even parse.
        let table: LiteralTable = &[("(unparsed", Some(&[b"needle"]))];
        let unparsed = || vec![("rule".to_owned(), "(unparsed".to_owned())];
        let set = PatternSet::new(unparsed(), table).expect("known pattern");
        assert!(!set.screen("hay").may_match(0));
        assert!(set.screen("a needle").may_match(0));
        assert!(matches!(set.regex(0), Err(PatternError::Compile(_))));
        assert!(matches!(
            PatternSet::new(unparsed(), &[]),
            Err((label, PatternError::Syntax(_))) if label == "rule"
        ));
        assert!(matches!(set.compile_all(), Err((label, _)) if label == "rule"));
    }

    proptest! {
        /// The screen never rules out a text a pattern matches.
        #[test]
        fn the_screen_never_hides_a_match(
            words in proptest::collection::vec(
                prop::sample::select(vec![
                    "rm", "-rf", "-r", "curl", "wget", "|", "sh", "bash", ";", "ignore", "IGNORE",
                    "all", "previous", "drop", "table", "a@b.c", "私钥", "令牌", "dd", "x", "(", "é",
                ]),
                0..8,
            ),
            separators in proptest::collection::vec(prop::sample::select(vec![" ", "", "\n", "\t"]), 8),
        ) {
            let text: String = words
                .iter()
                .zip(&separators)
                .flat_map(|(word, sep)| [*word, *sep])
                .collect();
            let set = set();
            let screen = set.screen(&text);
            for (index, pattern) in PATTERNS.iter().enumerate() {
                let matched = set.regex(index).map(|r| r.is_match(&text)).unwrap_or(false);
                prop_assert!(!matched || screen.may_match(index), "{} hides {:?}", pattern, text);
                prop_assert!(!matched || set.may_match(index, &text));
            }
        }
    }
}
