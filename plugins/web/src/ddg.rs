//! DuckDuckGo's HTML results page (`html.duckduckgo.com/html/`), read with
//! CSS selectors: each result is a `div.result` holding `a.result__a` (title
//! and link) and `.result__snippet`; ads are `div.result--ad`; a page with
//! nothing found says so with `.result--no-result` / `.no-results`.

use scraper::Html;
use talaria_plugin_sdk::ToolError;

use crate::botcheck::{self, BotCheck};
use crate::dom;
use crate::search::Hit;

/// What a DuckDuckGo answer held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Page {
    /// A results page (empty only when DuckDuckGo said it found nothing).
    Results(Vec<Hit>),
    /// The anomaly page instead of results.
    BotCheck,
}

/// Reads an answer of the HTML endpoint. `status` 202 is how DuckDuckGo
/// serves its bot check: never a results page.
pub fn parse(status: u16, html: &str) -> Result<Page, ToolError> {
    let doc = Html::parse_document(html);
    if status == 202 || botcheck::detect(&doc, None) == Some(BotCheck::DuckDuckGo) {
        return Ok(Page::BotCheck);
    }
    if !(200..300).contains(&status) {
        return Err(ToolError::failed(format!(
            "DuckDuckGo answered HTTP {status}{}",
            if status == 403 || status == 429 {
                " (it is refusing or rate-limiting this address; try again later or configure \
                 another web.backend)"
            } else {
                ""
            }
        )));
    }
    let mut hits = Vec::new();
    for result in dom::all(doc.root_element(), "div.result") {
        let classes: Vec<&str> = result.value().classes().collect();
        if classes.contains(&"result--ad") || classes.contains(&"result--no-result") {
            continue;
        }
        let Some(link) = dom::first(result, "a.result__a") else {
            continue;
        };
        let Some(url) = link.value().attr("href").and_then(target_url) else {
            continue;
        };
        let snippet = dom::first(result, ".result__snippet")
            .map(dom::text)
            .unwrap_or_default();
        hits.push(Hit {
            title: dom::text(link),
            url,
            snippet,
        });
    }
    if hits.is_empty() && !says_nothing_found(&doc) {
        return Err(ToolError::failed(
            "DuckDuckGo answered with a page that has neither results nor a \"No results\" \
             notice (its page layout may have changed, or it served something else); this is \
             not \"no results\"",
        ));
    }
    Ok(Page::Results(hits))
}

/// DuckDuckGo's own "No results found for …" notice.
fn says_nothing_found(doc: &Html) -> bool {
    dom::has(doc, ".result--no-result, .no-results, .no-results__message")
}

/// The page a result link leads to: DuckDuckGo's redirect
/// `//duckduckgo.com/l/?uddg=<percent-encoded target>&rut=…` decoded, other
/// links made absolute. Links into DuckDuckGo itself (ads through `y.js`,
/// its help pages) are not results: `None`.
pub fn target_url(href: &str) -> Option<String> {
    let base = url::Url::parse("https://duckduckgo.com/").ok()?;
    let link = base.join(href.trim()).ok()?;
    let is_ddg = |u: &url::Url| {
        u.host_str()
            .is_some_and(|h| h == "duckduckgo.com" || h.ends_with(".duckduckgo.com"))
    };
    let target = if is_ddg(&link) && link.path() == "/l/" {
        let (_, value) = link.query_pairs().find(|(k, _)| k == "uddg")?;
        url::Url::parse(&value).ok()?
    } else {
        link
    };
    if is_ddg(&target) || !matches!(target.scheme(), "http" | "https") {
        return None;
    }
    Some(target.into())
}
