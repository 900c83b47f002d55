//! One stored fact, and the rules for the text that goes into one: how
//! content, categories, tags and ids are cleaned, and when two facts say the
//! same thing.

use serde::{Deserialize, Serialize};

/// Longest content kept, in characters: a fact is a sentence or two, and
/// shards stay small.
pub const MAX_CONTENT_CHARS: usize = 2000;
/// Longest category or tag, in characters.
pub const MAX_LABEL_CHARS: usize = 64;
/// Most tags on one fact.
pub const MAX_TAGS: usize = 16;
/// The trust a new fact starts with (0 to 1).
pub const DEFAULT_TRUST: f64 = 0.5;
/// The category of a fact given none.
pub const DEFAULT_CATEGORY: &str = "general";
/// How much one `helpful` rating raises trust.
pub const HELPFUL_STEP: f64 = 0.1;
/// How much one `unhelpful` rating lowers trust: more than a helpful one
/// raises it, so a wrong fact sinks faster than a good one rises.
pub const UNHELPFUL_STEP: f64 = 0.2;

/// A stored fact, as shards, `list` and `export` hold it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// `f-<n>`; never reused.
    pub id: String,
    pub content: String,
    pub category: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// 0 to 1; weights ranking, moved by `fact_feedback`.
    pub trust: f64,
    /// Unix seconds.
    pub created: u64,
    /// The session that stored it (empty when unknown).
    #[serde(default)]
    pub source: String,
    /// How many times recall before a turn returned it.
    #[serde(default)]
    pub hits: u64,
}

impl Fact {
    /// The number of the id (`f-12` → 12), for ordering by age.
    pub fn number(&self) -> u64 {
        id_number(&self.id).unwrap_or(0)
    }

    /// Trust after one rating, kept within 0 to 1.
    pub fn rated(trust: f64, helpful: bool) -> f64 {
        let moved = if helpful {
            trust + HELPFUL_STEP
        } else {
            trust - UNHELPFUL_STEP
        };
        // Rounded so repeated steps do not drift (0.30000000000000004).
        ((moved.clamp(0.0, 1.0)) * 1000.0).round() / 1000.0
    }
}

/// The id of the `n`th fact.
pub fn make_id(n: u64) -> String {
    format!("f-{n}")
}

/// The number of an id written as `f-12`, `F-12` or `12` (ids the model
/// copies back, or an integer as Hermes' fact store used).
pub fn id_number(id: &str) -> Option<u64> {
    let id = id.trim();
    let digits = id
        .strip_prefix("f-")
        .or_else(|| id.strip_prefix("F-"))
        .unwrap_or(id);
    digits.parse().ok()
}

/// The canonical form of an id the caller gave: `12` and ` F-12 ` are `f-12`;
/// anything else stays as written (and will match no fact).
pub fn canonical_id(id: &str) -> String {
    id_number(id).map_or_else(|| id.trim().to_owned(), make_id)
}

/// Content as stored: trimmed, runs of whitespace (newlines too) made one
/// space, at most [`MAX_CONTENT_CHARS`] characters.
pub fn clean_content(content: &str) -> String {
    let joined = content.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate_chars(&joined, MAX_CONTENT_CHARS)
}

/// What two facts saying the same thing have in common: content with
/// whitespace collapsed, lower case, without closing punctuation.
pub fn dedupe_key(content: &str) -> String {
    clean_content(content)
        .to_lowercase()
        .trim_end_matches(['.', '!', ';', ' '])
        .to_owned()
}

/// A category as stored: trimmed, lower case, [`DEFAULT_CATEGORY`] when empty.
pub fn clean_category(category: Option<&str>) -> String {
    let category = category.map(|c| truncate_chars(c.trim(), MAX_LABEL_CHARS).to_lowercase());
    match category {
        Some(c) if !c.is_empty() => c,
        _ => DEFAULT_CATEGORY.to_owned(),
    }
}

/// Tags as stored: trimmed, lower case, without empties and repeats, at most
/// [`MAX_TAGS`].
pub fn clean_tags(tags: &[String]) -> Vec<String> {
    let mut clean: Vec<String> = Vec::new();
    for tag in tags {
        let tag = truncate_chars(tag.trim(), MAX_LABEL_CHARS).to_lowercase();
        if !tag.is_empty() && !clean.contains(&tag) {
            clean.push(tag);
        }
        if clean.len() == MAX_TAGS {
            break;
        }
    }
    clean
}

fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].trim_end().to_owned(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_in_the_forms_a_model_writes_them() {
        assert_eq!(make_id(7), "f-7");
        assert_eq!(id_number("f-12"), Some(12));
        assert_eq!(id_number(" F-12 "), Some(12));
        assert_eq!(id_number("12"), Some(12));
        assert_eq!(id_number("fact twelve"), None);
        assert_eq!(canonical_id("12"), "f-12");
        assert_eq!(canonical_id("x-1"), "x-1");
    }

    #[test]
    fn the_same_fact_differently_written_has_one_dedupe_key() {
        let key = dedupe_key("The user prefers   tabs\nover spaces.");
        assert_eq!(key, "the user prefers tabs over spaces");
        assert_eq!(dedupe_key("the USER prefers tabs over spaces"), key);
        assert_ne!(dedupe_key("The user prefers spaces over tabs"), key);
    }

    #[test]
    fn content_labels_and_tags_are_cleaned() {
        assert_eq!(clean_content("  a\n\tb  "), "a b");
        assert_eq!(
            clean_content(&"x".repeat(MAX_CONTENT_CHARS + 10)).len(),
            MAX_CONTENT_CHARS
        );
        assert_eq!(clean_category(Some(" Project ")), "project");
        assert_eq!(clean_category(Some("  ")), DEFAULT_CATEGORY);
        assert_eq!(clean_category(None), DEFAULT_CATEGORY);
        let tags = ["Rust".to_owned(), "rust".into(), " ".into(), "CI ".into()];
        assert_eq!(clean_tags(&tags), ["rust", "ci"]);
    }

    #[test]
    fn trust_moves_by_rating_within_bounds() {
        assert_eq!(Fact::rated(0.5, true), 0.6);
        assert_eq!(Fact::rated(0.5, false), 0.3);
        assert_eq!(Fact::rated(0.95, true), 1.0);
        assert_eq!(Fact::rated(0.1, false), 0.0);
    }
}
