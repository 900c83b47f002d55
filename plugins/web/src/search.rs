//! `web_search`: one request to the configured backend, its answer read into
//! [`Hit`]s, and those written as a numbered Markdown list.
//!
//! Request and answer shapes (each vendor's API reference):
//! - SearXNG: `GET /search?q=&format=json` → `results[].{title,url,content}`;
//!   403 when the instance does not enable the json format.
//! - Brave: `GET /res/v1/web/search?q=&count=` with `X-Subscription-Token`
//!   → `web.results[].{title,url,description}` (description has `<strong>`).
//! - Tavily: `POST /search {query,max_results}` with a Bearer key →
//!   `results[].{title,url,content}`.
//! - Firecrawl: `POST /v1/search {query,limit}` with a Bearer key →
//!   `data[].{title,url,description}` (v2 nests them in `data.web`).
//! - Exa: `POST /search {query,numResults,contents}` with `x-api-key` →
//!   `results[].{title,url,text,highlights}`.

use serde_json::{Value, json};
use talaria_plugin_sdk::http::secret;
use talaria_plugin_sdk::{HostError, ToolError};

use crate::ddg;
use crate::dom;
use crate::net::{HttpCall, Transport};
use crate::settings::{Backend, Settings};

/// Largest answer of a search backend read (a results page is ~40 KB).
const MAX_ANSWER_BYTES: usize = 4 << 20;
/// Snippets longer than this are cut (Exa may send a page's whole text).
const MAX_SNIPPET_CHARS: usize = 400;

/// One result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// The request that asks `backend` for `limit` results.
pub fn request(settings: &Settings, query: &str, limit: usize) -> Result<HttpCall, ToolError> {
    let with_query = |base: &str, pairs: &[(&str, &str)]| -> Result<String, ToolError> {
        let mut url = url::Url::parse(base)
            .map_err(|e| ToolError::failed(format!("bad backend URL {base:?}: {e}")))?;
        url.query_pairs_mut().extend_pairs(pairs);
        Ok(url.into())
    };
    let count = limit.to_string();
    Ok(match settings.backend {
        Backend::DuckDuckGo => {
            // A form POST like the page's own search box: DuckDuckGo
            // challenges plain GETs far more often.
            HttpCall::post_form(&settings.duckduckgo_url, &[("q", query), ("b", "")])
                .header("accept", "text/html")
        }
        Backend::Searxng => {
            let base = settings.searxng_url.as_deref().ok_or_else(|| {
                ToolError::failed(
                    "web.backend is searxng but web.searxng_url is not set: set it to your \
                     SearXNG instance (e.g. http://searx.lan:8080) in config.yaml",
                )
            })?;
            HttpCall::get(with_query(
                &format!("{base}/search"),
                &[("q", query), ("format", "json")],
            )?)
            .header("accept", "application/json")
        }
        Backend::Brave => HttpCall::get(with_query(
            &format!("{}/res/v1/web/search", settings.brave_url),
            &[("q", query), ("count", &count)],
        )?)
        .header("accept", "application/json")
        .header("x-subscription-token", secret("BRAVE_API_KEY")),
        Backend::Tavily => HttpCall::post_json(
            format!("{}/search", settings.tavily_url),
            &json!({ "query": query, "max_results": limit }),
        )
        .header(
            "authorization",
            format!("Bearer {}", secret("TAVILY_API_KEY")),
        ),
        Backend::Firecrawl => HttpCall::post_json(
            format!("{}/v1/search", settings.firecrawl_url),
            &json!({ "query": query, "limit": limit }),
        )
        .header(
            "authorization",
            format!("Bearer {}", secret("FIRECRAWL_API_KEY")),
        ),
        Backend::Exa => HttpCall::post_json(
            format!("{}/search", settings.exa_url),
            &json!({
                "query": query,
                "numResults": limit,
                "contents": { "text": { "maxCharacters": MAX_SNIPPET_CHARS } },
            }),
        )
        .header("x-api-key", secret("EXA_API_KEY")),
    })
}

/// The secret a keyed backend needs.
pub fn key_name(backend: Backend) -> Option<&'static str> {
    match backend {
        Backend::Brave => Some("BRAVE_API_KEY"),
        Backend::Tavily => Some("TAVILY_API_KEY"),
        Backend::Firecrawl => Some("FIRECRAWL_API_KEY"),
        Backend::Exa => Some("EXA_API_KEY"),
        Backend::DuckDuckGo | Backend::Searxng => None,
    }
}

/// An error answer of a JSON API, in words.
pub fn api_error(vendor: &str, key: Option<&str>, status: u16, body: &str) -> ToolError {
    let detail = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            ["error", "message", "detail"]
                .iter()
                .find_map(|k| v.get(k).map(message_of))
        })
        .unwrap_or_else(|| body.chars().take(300).collect::<String>());
    let hint = match (status, key) {
        (401 | 403, Some(key)) => format!(
            " — the API key was refused or missing: set {key} in the profile's .env (the host \
             passes it to {vendor} without the plugin seeing it)"
        ),
        (429, _) => " — rate-limited: try again later".to_owned(),
        _ => String::new(),
    };
    ToolError::failed(format!(
        "{vendor} answered HTTP {status}: {}{hint}",
        detail.trim()
    ))
}

fn message_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("message")
            .or_else(|| o.get("detail"))
            .map_or_else(|| v.to_string(), message_of),
        other => other.to_string(),
    }
}

/// Reads `backend`'s answer.
pub fn parse(backend: Backend, status: u16, body: &str) -> Result<Vec<Hit>, ToolError> {
    if backend == Backend::DuckDuckGo {
        return match ddg::parse(status, body)? {
            ddg::Page::Results(hits) => Ok(hits),
            ddg::Page::BotCheck => Err(ToolError::failed(
                crate::botcheck::BotCheck::DuckDuckGo.describe(),
            )),
        };
    }
    let vendor = vendor_name(backend);
    if backend == Backend::Searxng && status == 403 {
        return Err(ToolError::failed(
            "SearXNG answered HTTP 403: the instance does not allow the JSON format. Enable it \
             in its settings.yml (search: formats: [html, json]) and restart it",
        ));
    }
    if !(200..300).contains(&status) {
        return Err(api_error(vendor, key_name(backend), status, body));
    }
    let answer: Value = serde_json::from_str(body).map_err(|e| {
        ToolError::failed(format!("{vendor} answered something that is not JSON: {e}"))
    })?;
    let (items, title, url, snippets): (Option<&Vec<Value>>, _, _, &[&str]) = match backend {
        Backend::Searxng => (
            answer.get("results").and_then(Value::as_array),
            "title",
            "url",
            &["content"],
        ),
        Backend::Brave => (
            answer.pointer("/web/results").and_then(Value::as_array),
            "title",
            "url",
            &["description"],
        ),
        Backend::Tavily => (
            answer.get("results").and_then(Value::as_array),
            "title",
            "url",
            &["content"],
        ),
        Backend::Firecrawl => (
            answer
                .get("data")
                .and_then(|d| d.as_array().or_else(|| d.get("web")?.as_array())),
            "title",
            "url",
            &["description", "markdown"],
        ),
        Backend::Exa => (
            answer.get("results").and_then(Value::as_array),
            "title",
            "url",
            &["highlights", "summary", "text"],
        ),
        Backend::DuckDuckGo => (None, "", "", &[]),
    };
    let Some(items) = items else {
        // Brave leaves `web` out when nothing was found; the others send [].
        if backend == Backend::Brave && answer.get("web").is_none() && answer.is_object() {
            return Ok(Vec::new());
        }
        return Err(ToolError::failed(format!(
            "{vendor}'s answer has no result list where its API puts one"
        )));
    };
    Ok(items
        .iter()
        .filter_map(|item| {
            let url = item.get(url)?.as_str()?.trim().to_owned();
            let title = item
                .get(title)
                .and_then(Value::as_str)
                .map(dom::fragment_text)
                .unwrap_or_default();
            let snippet = snippets
                .iter()
                .find_map(|k| snippet_of(item.get(*k)?))
                .unwrap_or_default();
            Some(Hit {
                title,
                url,
                snippet,
            })
        })
        .collect())
}

fn snippet_of(v: &Value) -> Option<String> {
    let text = match v {
        Value::String(s) => dom::fragment_text(s),
        Value::Array(parts) => dom::collapse(
            &parts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" … "),
        ),
        _ => return None,
    };
    if text.is_empty() {
        return None;
    }
    Some(cut(&text, MAX_SNIPPET_CHARS))
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", text[..at].trim_end()),
        None => text.to_owned(),
    }
}

fn vendor_name(backend: Backend) -> &'static str {
    match backend {
        Backend::DuckDuckGo => "DuckDuckGo",
        Backend::Searxng => "SearXNG",
        Backend::Brave => "Brave Search",
        Backend::Tavily => "Tavily",
        Backend::Firecrawl => "Firecrawl",
        Backend::Exa => "Exa",
    }
}

/// The hits as the model reads them: a numbered Markdown list of title, URL
/// and snippet; "No results" only for an engine's real empty answer.
pub fn render(query: &str, backend: Backend, hits: &[Hit], limit: usize) -> String {
    let vendor = vendor_name(backend);
    if hits.is_empty() {
        return format!("No results for \"{query}\" ({vendor} found nothing).");
    }
    let mut out = format!("Search results for \"{query}\" ({vendor}):\n");
    for (n, hit) in hits.iter().take(limit).enumerate() {
        let title = if hit.title.is_empty() {
            hit.url.as_str()
        } else {
            hit.title.as_str()
        };
        out.push_str(&format!("\n{}. **{title}**\n   {}\n", n + 1, hit.url));
        if !hit.snippet.is_empty() {
            out.push_str(&format!("   {}\n", hit.snippet));
        }
    }
    out.push_str("\nUse web_extract on a URL to read the page.");
    out
}

/// Runs a search with `settings` over `transport`.
pub fn run(
    transport: &dyn Transport,
    settings: &Settings,
    query: &str,
    limit: usize,
) -> Result<String, ToolError> {
    let call = request(settings, query, limit)?;
    let answer = transport
        .send(&call, MAX_ANSWER_BYTES)
        .map_err(|e| match e {
            HostError::Denied(m) => ToolError::Denied(m),
            other => ToolError::failed(format!(
                "{} search failed: {}",
                vendor_name(settings.backend),
                other.message()
            )),
        })?;
    let hits = parse(settings.backend, answer.status, &answer.text())?;
    Ok(render(query, settings.backend, &hits, limit))
}
