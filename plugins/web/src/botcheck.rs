//! Bot checks: pages a site serves instead of the content when it takes the
//! client for a bot (DuckDuckGo's anomaly page, Cloudflare's "Just a
//! moment...", CAPTCHA forms). They must never be read as "no results" or
//! as the page's content: the model would conclude the answer does not
//! exist.

use scraper::Html;

use crate::dom;

/// Who asked the client to prove it is human.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BotCheck {
    /// DuckDuckGo's anomaly page ("Unfortunately, bots use DuckDuckGo too").
    DuckDuckGo,
    /// Cloudflare's challenge ("Just a moment...", Turnstile).
    Cloudflare,
    /// Some other CAPTCHA in place of the page.
    Captcha,
}

impl BotCheck {
    /// How the tools describe it to the model.
    pub fn describe(self) -> &'static str {
        match self {
            Self::DuckDuckGo => {
                "DuckDuckGo answered with its bot check (\"Unfortunately, bots use DuckDuckGo \
                 too\") instead of results: it is rate-limiting this address. This is not \"no \
                 results\". Try again later, or configure another search backend (web.backend: \
                 searxng, brave, tavily, firecrawl or exa)"
            }
            Self::Cloudflare => {
                "the site answered with a Cloudflare bot check (\"Just a moment...\") instead of \
                 the page: its content could not be read"
            }
            Self::Captcha => {
                "the site answered with a CAPTCHA (a bot check) instead of the page: its \
                 content could not be read"
            }
        }
    }
}

/// Markers of DuckDuckGo's anomaly page, as served (HTTP 202 or 200).
const DUCKDUCKGO: &str = ".anomaly-modal__mask, .anomaly-modal__modal, [data-testid=anomaly-modal], \
     form[action*=\"anomaly.js\"]";
/// Markers of Cloudflare's challenge pages.
const CLOUDFLARE: &str = "#cf-challenge-running, .cf-browser-verification, #challenge-error-text, \
     #challenge-body-text, .cf-turnstile, script[src*=\"/cdn-cgi/challenge-platform/\"], \
     form#challenge-form[action*=\"__cf_chl\"]";
/// CAPTCHA widgets; a page counts as a bot check only when they come with
/// little else (a blog's comment form may carry one under a whole article).
const CAPTCHA: &str = ".g-recaptcha, .h-captcha, iframe[src*=\"recaptcha\"], \
     iframe[src*=\"hcaptcha\"], form [id*=\"captcha\" i], form [class*=\"captcha\" i], \
     form[action*=\"captcha\" i]";
/// Visible text longer than this is a page of its own, CAPTCHA or not.
const SHORT_PAGE_CHARS: usize = 1500;

/// The bot check `doc` is, if it is one. `cf_mitigated` is the
/// `cf-mitigated` header, which Cloudflare sets to `challenge` on them.
pub fn detect(doc: &Html, cf_mitigated: Option<&str>) -> Option<BotCheck> {
    if dom::has(doc, DUCKDUCKGO) {
        return Some(BotCheck::DuckDuckGo);
    }
    let text = dom::text(doc.root_element());
    if text.contains("bots use DuckDuckGo too") {
        return Some(BotCheck::DuckDuckGo);
    }
    if cf_mitigated.is_some_and(|v| v.trim().eq_ignore_ascii_case("challenge")) {
        return Some(BotCheck::Cloudflare);
    }
    let title = dom::find(doc, "title").map(dom::text).unwrap_or_default();
    let cloudflare_title = title == "Just a moment..." || title.starts_with("Attention Required!");
    if cloudflare_title || dom::has(doc, CLOUDFLARE) {
        return Some(BotCheck::Cloudflare);
    }
    let body_text = dom::find(doc, "body").map(dom::text).unwrap_or_default();
    if body_text.chars().count() < SHORT_PAGE_CHARS && dom::has(doc, CAPTCHA) {
        return Some(BotCheck::Captcha);
    }
    None
}
