//! Full-text search over the facts: words are lower-case runs of letters and
//! digits with common English words dropped and plurals folded, scored with
//! BM25 (the classic Okapi weighting: rare words count more, a word repeated
//! in a long fact counts less).

use std::collections::{HashMap, HashSet};

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;

/// Words too common to say what a text is about. Also the pieces that
/// splitting contractions at the apostrophe leaves (`don't` → `don`, `t`).
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "but", "by", "can", "could", "d", "did", "do", "does",
    "doing", "don", "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers",
    "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "ll", "m", "me",
    "might", "more", "most", "my", "no", "not", "now", "of", "on", "or", "our", "ours", "out",
    "please", "re", "s", "she", "should", "so", "some", "such", "t", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "us", "ve",
    "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why",
    "will", "with", "would", "you", "your", "yours",
];

fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// Folds the regular English plural (`facts` → `fact`, `libraries` →
/// `library`), leaving words like `class`, `status` and `this` alone.
fn fold_plural(word: &str) -> String {
    if word.len() > 4
        && let Some(stem) = word.strip_suffix("ies")
    {
        return format!("{stem}y");
    }
    if word.len() > 3
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        return word[..word.len() - 1].to_owned();
    }
    word.to_owned()
}

/// The search terms of `text`, in order, repeats kept.
pub fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| !is_stopword(word))
        .map(|word| fold_plural(&word))
        .collect()
}

/// An inverted index of documents numbered from 0 in the order given.
#[derive(Debug, Default)]
pub struct Index {
    /// Term → (document, occurrences in it).
    postings: HashMap<String, Vec<(u32, u32)>>,
    /// Terms per document.
    lengths: Vec<u32>,
    total_length: u64,
}

impl Index {
    /// Indexes `documents`.
    pub fn build<I, S>(documents: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut index = Self::default();
        for (doc, text) in documents.into_iter().enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            let words = terms(text.as_ref());
            let mut counts: HashMap<String, u32> = HashMap::new();
            for word in &words {
                *counts.entry(word.clone()).or_default() += 1;
            }
            for (word, count) in counts {
                index.postings.entry(word).or_default().push((doc, count));
            }
            let length = u32::try_from(words.len()).unwrap_or(u32::MAX);
            index.lengths.push(length);
            index.total_length += u64::from(length);
        }
        index
    }

    /// How many documents it holds.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether it holds no document.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The BM25 score of every document sharing a term with `query` (each
    /// query term counted once), by document number, unordered.
    pub fn search(&self, query: &str) -> Vec<(usize, f64)> {
        if self.is_empty() {
            return Vec::new();
        }
        let documents = self.lengths.len() as f64;
        let average = (self.total_length as f64 / documents).max(1.0);
        let mut scores: HashMap<u32, f64> = HashMap::new();
        let unique: HashSet<String> = terms(query).into_iter().collect();
        for term in unique {
            let Some(postings) = self.postings.get(&term) else {
                continue;
            };
            let df = postings.len() as f64;
            let idf = (1.0 + (documents - df + 0.5) / (df + 0.5)).ln();
            for &(doc, count) in postings {
                let tf = f64::from(count);
                let length = f64::from(self.lengths[doc as usize]);
                let saturation = tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average));
                *scores.entry(doc).or_default() += idf * saturation;
            }
        }
        scores
            .into_iter()
            .map(|(doc, score)| (doc as usize, score))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ranked(index: &Index, query: &str) -> Vec<usize> {
        let mut hits = index.search(query);
        hits.sort_by(|a, b| b.1.total_cmp(&a.1));
        hits.into_iter().map(|(doc, _)| doc).collect()
    }

    #[test]
    fn the_stopword_list_is_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn terms_are_lower_case_words_without_stopwords_and_plurals() {
        assert_eq!(
            terms("The user's Libraries: don't break CI-builds in 2024!"),
            ["user", "library", "break", "ci", "build", "2024"]
        );
        assert_eq!(terms("class status this"), ["class", "status"]);
        assert_eq!(terms("Straße über Ünïcode"), ["straße", "über", "ünïcode"]);
    }

    #[test]
    fn documents_sharing_no_term_with_the_query_score_nothing() {
        let index = Index::build(["The user prefers dark mode", "Deploys run on Fridays"]);
        assert!(index.search("what is the weather like").is_empty());
        assert!(index.search("").is_empty());
        assert!(Index::build(Vec::<String>::new()).search("mode").is_empty());
    }

    #[test]
    fn rare_terms_and_more_matches_rank_higher() {
        let index = Index::build([
            "project uses rust",
            "project uses postgres for storage",
            "project deploys with rust and postgres",
            "project has a website",
        ]);
        // "postgres" is rarer than "project", and doc 2 matches both rare terms.
        assert_eq!(ranked(&index, "rust postgres")[0], 2);
        let project_only = index.search("project");
        let postgres = index.search("postgres");
        let best = |hits: &[(usize, f64)]| hits.iter().map(|h| h.1).fold(0.0, f64::max);
        assert!(best(&postgres) > best(&project_only));
    }

    #[test]
    fn a_query_repeating_a_word_counts_it_once() {
        let index = Index::build(["alpha beta", "gamma delta"]);
        let once = index.search("alpha");
        let thrice = index.search("alpha alpha alpha");
        assert_eq!(once, thrice);
    }
}
