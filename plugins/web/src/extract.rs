//! `web_extract` fetching pages itself: `GET` each URL and follow redirects
//! one hop at a time (each hop is a request the host checks, private
//! addresses included), read at most [`MAX_PAGE_BYTES`], decode the charset,
//! and turn HTML into Markdown; text and JSON are kept as they are, PDFs and
//! other binary types refused. Bot checks are reported as such.

use scraper::Html;
use talaria_plugin_sdk::HostError;
use url::Url;

use crate::botcheck::{self, BotCheck};
use crate::charset;
use crate::net::{Fetched, HttpCall, Transport};
use crate::page;

/// Most bytes of one page read; the rest is cut (and the result says so).
pub const MAX_PAGE_BYTES: usize = 10 << 20;
/// Most redirects followed for one URL.
pub const MAX_REDIRECTS: usize = 10;

/// What became of one URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The page's content.
    Page {
        title: Option<String>,
        /// After redirects.
        final_url: String,
        /// Markdown (HTML pages) or the text as it came.
        content: String,
        /// Things the model should know (a cut body, an empty page).
        notes: Vec<String>,
    },
    /// Not fetched or not read on purpose: the host refused it, a scheme
    /// other than http(s), a binary type.
    Refused(String),
    /// A bot check instead of the page.
    BotCheck { final_url: String, check: BotCheck },
    /// It went wrong (network, HTTP error status, redirect loop).
    Failed(String),
}

/// One URL asked for and its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extracted {
    pub requested: String,
    pub outcome: Outcome,
}

/// `raw` if it is an absolute http(s) URL; otherwise why not.
pub fn check_url(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw.trim()).map_err(|e| format!("{raw:?} is not a valid URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs can be fetched; {raw:?} is a {}: URL",
            url.scheme()
        ));
    }
    if url.host().is_none() {
        return Err(format!("{raw:?} has no host"));
    }
    Ok(url)
}

/// Where a redirect from `current` to `location` leads (a relative
/// `Location` is resolved against `current`).
pub fn next_hop(current: &Url, location: &str) -> Result<Url, String> {
    let next = current
        .join(location.trim())
        .map_err(|e| format!("the redirect to {location:?} is not a valid URL ({e})"))?;
    check_url(next.as_str()).map_err(|why| format!("the page redirected elsewhere: {why}"))
}

fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Fetches and reads one URL.
pub fn fetch(transport: &dyn Transport, raw: &str) -> Outcome {
    let mut url = match check_url(raw) {
        Ok(url) => url,
        Err(why) => return Outcome::Refused(why),
    };
    for hop in 0..=MAX_REDIRECTS {
        let call = HttpCall::get(url.as_str()).header(
            "accept",
            "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,\
             application/json;q=0.8,*/*;q=0.5",
        );
        let answer = match transport.send(&call, MAX_PAGE_BYTES) {
            Ok(answer) => answer,
            Err(HostError::Denied(why)) => {
                return Outcome::Refused(format!("the host refused to fetch {url}: {why}"));
            }
            Err(e) => return Outcome::Failed(format!("fetching {url}: {}", e.message())),
        };
        if !is_redirect(answer.status) {
            return read(url, &answer);
        }
        let Some(location) = answer.header("location") else {
            return Outcome::Failed(format!(
                "{url} answered HTTP {} without a Location to go to",
                answer.status
            ));
        };
        if hop == MAX_REDIRECTS {
            break;
        }
        url = match next_hop(&url, location) {
            Ok(next) => next,
            Err(why) => return Outcome::Refused(why),
        };
    }
    Outcome::Failed(format!(
        "more than {MAX_REDIRECTS} redirects (the last to {url}); not followed further"
    ))
}

/// What kind of body an answer has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Html,
    /// Plain text, Markdown, JSON, XML, CSV…: returned as it is.
    Text,
    Pdf,
    /// Anything else, by its media type.
    Binary(String),
}

/// The kind of a body from its Content-Type, or from its first bytes when
/// the type is missing or says nothing.
pub fn classify(content_type: Option<&str>, body: &[u8]) -> Kind {
    let mime = content_type
        .and_then(|t| t.split(';').next())
        .map(|t| t.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "application/pdf" | "application/x-pdf" => Kind::Pdf,
        "" | "application/octet-stream" | "binary/octet-stream" => sniff(body),
        m if m.starts_with("text/")
            || m.ends_with("+json")
            || m.ends_with("+xml")
            || matches!(
                m,
                "application/json"
                    | "application/xml"
                    | "application/javascript"
                    | "application/x-ndjson"
                    | "application/yaml"
                    | "application/x-yaml"
                    | "application/toml"
            ) =>
        {
            Kind::Text
        }
        m => Kind::Binary(m.to_owned()),
    }
}

fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(1024)];
    if head.starts_with(b"%PDF-") {
        return Kind::Pdf;
    }
    let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
    let start = lower.trim_start_matches('\u{feff}').trim_start();
    if start.starts_with("<!doctype html") || start.starts_with("<html") || lower.contains("<body")
    {
        return Kind::Html;
    }
    let sample = &body[..body.len().min(8192)];
    if sample.contains(&0) {
        Kind::Binary("an unnamed binary type".into())
    } else {
        Kind::Text
    }
}

/// Reads an answer that is not a redirect.
fn read(url: Url, answer: &Fetched) -> Outcome {
    let content_type = answer.header("content-type");
    let mut notes = Vec::new();
    if answer.truncated {
        notes.push(format!(
            "The page is larger than {} MB; only its first {} MB were read.",
            MAX_PAGE_BYTES >> 20,
            MAX_PAGE_BYTES >> 20
        ));
    }
    let status_error = || {
        Outcome::Failed(format!(
            "{url} answered HTTP {}{}",
            answer.status,
            reason(answer.status)
        ))
    };
    match classify(content_type, &answer.body) {
        Kind::Html => {
            let (text, _) = charset::decode(&answer.body, content_type, true);
            let doc = Html::parse_document(&text);
            if let Some(check) = botcheck::detect(&doc, answer.header("cf-mitigated")) {
                return Outcome::BotCheck {
                    final_url: url.into(),
                    check,
                };
            }
            if answer.status >= 400 {
                return status_error();
            }
            let converted = page::convert(doc, &url);
            if converted.markdown.is_empty() {
                notes.push(
                    "The page has no readable text in its HTML (it may build its content with \
                     JavaScript)."
                        .into(),
                );
            }
            Outcome::Page {
                title: converted.title,
                final_url: url.into(),
                content: converted.markdown,
                notes,
            }
        }
        Kind::Text => {
            if answer.status >= 400 {
                return status_error();
            }
            let (text, _) = charset::decode(&answer.body, content_type, false);
            Outcome::Page {
                title: None,
                final_url: url.into(),
                content: text,
                notes,
            }
        }
        Kind::Pdf => Outcome::Refused(format!(
            "{url} is a PDF document: web_extract reads HTML and text pages only"
        )),
        Kind::Binary(mime) => Outcome::Refused(format!(
            "{url} is binary content ({mime}): web_extract reads HTML and text pages only"
        )),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        401 => " (Unauthorized: the page needs a login)",
        403 => " (Forbidden)",
        404 => " (Not Found)",
        410 => " (Gone)",
        429 => " (Too Many Requests: rate-limited, try later)",
        500..=599 => " (a server error)",
        _ => "",
    }
}

/// `text` cut at `limit` characters, with a note when it was.
fn cut(text: &str, limit: Option<usize>) -> String {
    let Some(limit) = limit else {
        return text.to_owned();
    };
    match text.char_indices().nth(limit) {
        None => text.to_owned(),
        Some((at, _)) => format!(
            "{}\n\n[Cut at char_limit = {limit} characters of {}; call web_extract with a larger \
             char_limit to read more.]",
            &text[..at],
            text.chars().count()
        ),
    }
}

/// The outcomes as the model reads them: one section per URL.
pub fn render(items: &[Extracted], char_limit: Option<usize>) -> String {
    let sections: Vec<String> = items
        .iter()
        .map(|item| match &item.outcome {
            Outcome::Page {
                title,
                final_url,
                content,
                notes,
            } => {
                let mut out = format!(
                    "# {}\nURL: {final_url}\n",
                    title.as_deref().unwrap_or(final_url)
                );
                if final_url != &item.requested {
                    out.push_str(&format!("Redirected from: {}\n", item.requested));
                }
                for note in notes {
                    out.push_str(&format!("Note: {note}\n"));
                }
                out.push('\n');
                out.push_str(&cut(content, char_limit));
                out
            }
            Outcome::Refused(why) => format!("# {}\nRefused: {why}", item.requested),
            Outcome::BotCheck { final_url, check } => format!(
                "# {}\nURL: {final_url}\nBot check: {}.",
                item.requested,
                check.describe()
            ),
            Outcome::Failed(why) => format!("# {}\nError: {why}", item.requested),
        })
        .collect();
    sections.join("\n\n---\n\n")
}
