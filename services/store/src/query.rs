//! Turning what a person typed into FTS5 and LIKE expressions that can never
//! be a syntax error: every term becomes a quoted FTS5 string, so operators,
//! column filters, parentheses and stray quotes are just text.

/// Characters a trigram needs: shorter terms cannot use the trigram index.
pub(crate) const TRIGRAM_CHARS: usize = 3;

/// Splits a query into terms: `"quoted phrases"` stay whole, everything else
/// splits on whitespace. An unbalanced quote counts as a space.
pub(crate) fn parse_terms(query: &str) -> Vec<String> {
    // NUL would end the FTS5 query string early; it never means anything here.
    let query = query.replace('\0', " ");
    let mut terms = Vec::new();
    let mut rest = query.as_str();
    while let Some(start) = rest.find('"') {
        let (before, after) = rest.split_at(start);
        push_words(before, &mut terms);
        let after = &after[1..];
        match after.find('"') {
            Some(end) => {
                let phrase = after[..end]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                if !phrase.is_empty() {
                    terms.push(phrase);
                }
                rest = &after[end + 1..];
            }
            None => rest = after,
        }
    }
    push_words(rest, &mut terms);
    terms
}

fn push_words(text: &str, terms: &mut Vec<String>) {
    terms.extend(text.split_whitespace().map(str::to_owned));
}

/// An FTS5 string literal: the term in double quotes, inner quotes doubled.
pub(crate) fn fts_string(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// The word-index expression: every term that has a word character, ANDed.
/// Terms of punctuation only would match nothing and sink the whole AND.
pub(crate) fn word_expression(terms: &[String]) -> Option<String> {
    let parts: Vec<String> = terms
        .iter()
        .filter(|term| term.chars().any(char::is_alphanumeric))
        .map(|term| fts_string(term))
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// Terms long enough for the trigram index, and the ones that are not.
pub(crate) fn split_by_length(terms: &[String]) -> (Vec<&String>, Vec<&String>) {
    terms
        .iter()
        .partition(|term| term.chars().count() >= TRIGRAM_CHARS)
}

/// The trigram-index expression for the long terms, ANDed.
pub(crate) fn trigram_expression(long_terms: &[&String]) -> Option<String> {
    let parts: Vec<String> = long_terms.iter().map(|term| fts_string(term)).collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// A `LIKE … ESCAPE '\'` pattern matching `term` anywhere.
pub(crate) fn like_pattern(term: &str) -> String {
    let mut pattern = String::with_capacity(term.len() + 2);
    pattern.push('%');
    for ch in term.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(ch);
    }
    pattern.push('%');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_phrases_stay_whole_and_stray_quotes_are_spaces() {
        assert_eq!(
            parse_terms(r#"foo "bar  baz" qux" x"#),
            vec!["foo", "bar baz", "qux", "x"]
        );
        assert_eq!(parse_terms(r#""""#), Vec::<String>::new());
        assert_eq!(parse_terms("  "), Vec::<String>::new());
    }

    #[test]
    fn fts_strings_escape_quotes() {
        assert_eq!(fts_string(r#"say "hi""#), r#""say ""hi""""#);
    }

    #[test]
    fn punctuation_only_terms_are_left_out_of_word_search() {
        let terms = parse_terms("--- foo:bar (");
        assert_eq!(word_expression(&terms).as_deref(), Some(r#""foo:bar""#));
        assert_eq!(word_expression(&parse_terms("!!! ((")), None);
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_pattern(r"50%_a\b"), r"%50\%\_a\\b%");
    }
}
