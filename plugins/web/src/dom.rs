//! Small helpers over `scraper`: selecting by CSS without panics, and the
//! visible text of an element with its whitespace collapsed.

use scraper::{ElementRef, Html, Selector};

/// The elements under `root` matching `css`. The selectors are the
/// plugin's own literals; one that does not parse matches nothing (the unit
/// tests exercise every one of them).
pub fn all<'a>(root: ElementRef<'a>, css: &str) -> Vec<ElementRef<'a>> {
    match Selector::parse(css) {
        Ok(selector) => root.select(&selector).collect(),
        Err(_) => Vec::new(),
    }
}

/// The first element under `root` matching `css`.
pub fn first<'a>(root: ElementRef<'a>, css: &str) -> Option<ElementRef<'a>> {
    let selector = Selector::parse(css).ok()?;
    root.select(&selector).next()
}

/// The first element of the document matching `css`.
pub fn find<'a>(doc: &'a Html, css: &str) -> Option<ElementRef<'a>> {
    first(doc.root_element(), css)
}

/// Whether any element of the document matches `css`.
pub fn has(doc: &Html, css: &str) -> bool {
    find(doc, css).is_some()
}

/// The text of `element`, whitespace runs collapsed to one space.
pub fn text(element: ElementRef<'_>) -> String {
    collapse(&element.text().collect::<String>())
}

/// `s` with whitespace runs collapsed to one space and trimmed.
pub fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text of an HTML fragment (search APIs put `<strong>` in snippets).
pub fn fragment_text(html: &str) -> String {
    if !html.contains('<') && !html.contains('&') {
        return collapse(html);
    }
    let fragment = Html::parse_fragment(html);
    collapse(&fragment.root_element().text().collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_lose_their_markup() {
        assert_eq!(
            fragment_text("The <strong>Rust</strong>  &amp; wasm\n book"),
            "The Rust & wasm book"
        );
        assert_eq!(fragment_text("plain  text"), "plain text");
    }

    #[test]
    fn a_bad_selector_matches_nothing() {
        let doc = Html::parse_document("<p>x</p>");
        assert!(all(doc.root_element(), "p[").is_empty());
        assert!(has(&doc, "p"));
        assert!(!has(&doc, "div"));
    }
}
