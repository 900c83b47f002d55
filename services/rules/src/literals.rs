//! The literals a regex's every match must contain, found on its syntax tree.
//!
//! For a pattern this gives a finite set of byte strings such that any text the regex matches
//! contains at least one of them — or nothing when no useful set exists (e.g. `.*` or a class of
//! hundreds of characters at every position). A text containing none of them cannot match, so
//! the regex need not be compiled for it.

use regex_syntax::hir::literal::{Extractor, Seq};
use regex_syntax::hir::{Hir, HirKind};

use crate::error::PatternError;

/// The required literals of `pattern` (parsed as the `regex` crate parses it), best set first
/// chosen by [`quality`]; `Ok(None)` when every text must be tried.
pub fn required(pattern: &str) -> Result<Option<Vec<Vec<u8>>>, PatternError> {
    let hir = regex_syntax::Parser::new().parse(pattern)?;
    Ok(best(&hir).map(|seq| {
        let mut literals: Vec<Vec<u8>> = seq
            .literals()
            .unwrap_or_default()
            .iter()
            .map(|literal| literal.as_bytes().to_vec())
            .collect();
        literals.sort();
        literals.dedup();
        literals
    }))
}

/// The most selective literal set among the prefixes of the whole expression and the sets
/// required by its parts: every match of a concatenation contains a match of each part, every
/// match of an alternation a match of one branch, every match of `x+` a match of `x`.
fn best(hir: &Hir) -> Option<Seq> {
    let whole = usable(Extractor::new().extract(hir));
    let parts: Vec<Seq> = match hir.kind() {
        HirKind::Concat(subs) => subs.iter().filter_map(best).collect(),
        HirKind::Capture(capture) => best(&capture.sub).into_iter().collect(),
        HirKind::Repetition(repetition) if repetition.min > 0 => {
            best(&repetition.sub).into_iter().collect()
        }
        HirKind::Alternation(branches) => {
            let mut union = Seq::empty();
            for branch in branches {
                let mut seq = best(branch)?;
                union.union(&mut seq);
            }
            usable(union).into_iter().collect()
        }
        _ => Vec::new(),
    };
    whole.into_iter().chain(parts).max_by_key(quality)
}

/// A set that can rule texts out: finite, not empty, no empty literal (which every text holds).
fn usable(seq: Seq) -> Option<Seq> {
    let literals = seq.literals()?;
    (!literals.is_empty() && literals.iter().all(|literal| !literal.is_empty())).then_some(seq)
}

/// Longer shortest literal first (rarer in text), then fewer literals.
fn quality(seq: &Seq) -> (usize, std::cmp::Reverse<usize>) {
    (
        seq.min_literal_len().unwrap_or(0),
        std::cmp::Reverse(seq.len().unwrap_or(usize::MAX)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(pattern: &str) -> Option<Vec<String>> {
        required(pattern).expect("test patterns parse").map(|set| {
            set.into_iter()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .collect()
        })
    }

    #[test]
    fn a_prefix_or_an_inner_part_is_required() {
        assert_eq!(strings(r"^rm\s"), Some(vec!["rm".into()]));
        // The longer of two required parts.
        assert_eq!(strings(r"^rm\s+-rf"), Some(vec!["-rf".into()]));
        // The class in front has too many members; the alternation behind it is required.
        assert_eq!(
            strings(r"(?:^|[\s;&|(])(?:curl|wget)\s"),
            Some(vec!["curl".into(), "wget".into()])
        );
        assert_eq!(
            strings(r"a.*(?:needle|haystack)+"),
            Some(vec!["haystack".into(), "needle".into()])
        );
        assert_eq!(
            strings("(?i)rm"),
            Some(vec!["RM".into(), "Rm".into(), "rM".into(), "rm".into()])
        );
    }

    #[test]
    fn nothing_is_required_when_any_text_could_match() {
        assert_eq!(strings(".*"), None);
        assert_eq!(strings("x?"), None);
        assert_eq!(strings(r"\w+"), None);
        // One branch without a literal makes the alternation useless.
        assert_eq!(strings(r"abc|\d+"), None);
    }

    #[test]
    fn bad_syntax_is_an_error() {
        assert!(matches!(required("("), Err(PatternError::Syntax(_))));
    }
}
