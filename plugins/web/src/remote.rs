//! `web_extract` through a vendor that fetches and cleans pages itself:
//! - Firecrawl: `POST /v1/scrape {url,formats:["markdown"],onlyMainContent}`,
//!   one URL per request → `data.markdown`, `data.metadata.{title,sourceURL}`;
//! - Tavily: `POST /extract {urls,format:"markdown"}` → `results[].{url,
//!   raw_content}` and `failed_results[].{url,error}`;
//! - Exa: `POST /contents {urls,text:true}` → `results[].{url,title,text}`
//!   and `statuses[].{id,status,error.{tag,httpStatusCode}}`.

use serde_json::{Value, json};
use talaria_plugin_sdk::HostError;
use talaria_plugin_sdk::http::secret;

use crate::extract::{Extracted, Outcome};
use crate::net::{HttpCall, Transport};
use crate::search::api_error;
use crate::settings::{ExtractBackend, Settings};

/// Largest vendor answer read (Markdown of up to five pages).
const MAX_ANSWER_BYTES: usize = 16 << 20;

/// The requests that extract `urls` with `backend` (Firecrawl takes one URL
/// per request, the others all at once).
pub fn requests(backend: ExtractBackend, settings: &Settings, urls: &[String]) -> Vec<HttpCall> {
    match backend {
        ExtractBackend::Direct => Vec::new(),
        ExtractBackend::Firecrawl => urls
            .iter()
            .map(|url| {
                HttpCall::post_json(
                    format!("{}/v1/scrape", settings.firecrawl_url),
                    &json!({ "url": url, "formats": ["markdown"], "onlyMainContent": true }),
                )
                .header(
                    "authorization",
                    format!("Bearer {}", secret("FIRECRAWL_API_KEY")),
                )
            })
            .collect(),
        ExtractBackend::Tavily => vec![
            HttpCall::post_json(
                format!("{}/extract", settings.tavily_url),
                &json!({ "urls": urls, "format": "markdown" }),
            )
            .header(
                "authorization",
                format!("Bearer {}", secret("TAVILY_API_KEY")),
            ),
        ],
        ExtractBackend::Exa => vec![
            HttpCall::post_json(
                format!("{}/contents", settings.exa_url),
                &json!({ "urls": urls, "text": true }),
            )
            .header("x-api-key", secret("EXA_API_KEY")),
        ],
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn page(requested: &str, item: &Value, url: &str, title: &str, text: &str) -> Extracted {
    Extracted {
        requested: requested.to_owned(),
        outcome: Outcome::Page {
            title: str_at(item, title).map(str::to_owned),
            final_url: str_at(item, url).unwrap_or(requested).to_owned(),
            content: str_at(item, text).unwrap_or_default().to_owned(),
            notes: Vec::new(),
        },
    }
}

fn failed(requested: &str, why: String) -> Extracted {
    Extracted {
        requested: requested.to_owned(),
        outcome: Outcome::Failed(why),
    }
}

/// Reads Firecrawl's answer for one URL.
pub fn parse_firecrawl(requested: &str, status: u16, body: &str) -> Extracted {
    if !(200..300).contains(&status) {
        let err = api_error("Firecrawl", Some("FIRECRAWL_API_KEY"), status, body);
        return failed(requested, err.message().to_owned());
    }
    let answer: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    if answer.get("success").and_then(Value::as_bool) != Some(true) {
        let why = str_at(&answer, "/error").unwrap_or("it did not say why");
        return failed(requested, format!("Firecrawl could not scrape it: {why}"));
    }
    page(
        requested,
        &answer,
        "/data/metadata/sourceURL",
        "/data/metadata/title",
        "/data/markdown",
    )
}

/// The item of `list` whose `key` is `url` (vendors may normalise URLs,
/// e.g. add a trailing slash).
fn find_by_url<'a>(list: Option<&'a Vec<Value>>, key: &str, url: &str) -> Option<&'a Value> {
    let same = |a: &str| a.trim_end_matches('/') == url.trim_end_matches('/');
    list?
        .iter()
        .find(|item| item.get(key).and_then(Value::as_str).is_some_and(same))
}

/// Reads Tavily's answer for `urls`.
pub fn parse_tavily(urls: &[String], status: u16, body: &str) -> Vec<Extracted> {
    if !(200..300).contains(&status) {
        let err = api_error("Tavily", Some("TAVILY_API_KEY"), status, body);
        return urls
            .iter()
            .map(|u| failed(u, err.message().to_owned()))
            .collect();
    }
    let answer: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let results = answer.get("results").and_then(Value::as_array);
    let failures = answer.get("failed_results").and_then(Value::as_array);
    urls.iter()
        .map(|url| {
            if let Some(item) = find_by_url(results, "url", url) {
                return page(url, item, "/url", "/title", "/raw_content");
            }
            let why = find_by_url(failures, "url", url)
                .and_then(|f| str_at(f, "/error"))
                .unwrap_or("Tavily returned nothing for it");
            failed(url, format!("Tavily could not extract it: {why}"))
        })
        .collect()
}

/// Reads Exa's answer for `urls`.
pub fn parse_exa(urls: &[String], status: u16, body: &str) -> Vec<Extracted> {
    if !(200..300).contains(&status) {
        let err = api_error("Exa", Some("EXA_API_KEY"), status, body);
        return urls
            .iter()
            .map(|u| failed(u, err.message().to_owned()))
            .collect();
    }
    let answer: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let results = answer.get("results").and_then(Value::as_array);
    let statuses = answer.get("statuses").and_then(Value::as_array);
    urls.iter()
        .map(|url| {
            let status = find_by_url(statuses, "id", url);
            let errored = status.and_then(|s| str_at(s, "/status")) == Some("error");
            if !errored
                && let Some(item) =
                    find_by_url(results, "url", url).or_else(|| find_by_url(results, "id", url))
            {
                return page(url, item, "/url", "/title", "/text");
            }
            let why = match status {
                Some(s) if errored => format!(
                    "{} (HTTP {})",
                    str_at(s, "/error/tag").unwrap_or("error"),
                    s.pointer("/error/httpStatusCode")
                        .and_then(Value::as_u64)
                        .unwrap_or_default()
                ),
                _ => "Exa returned nothing for it".to_owned(),
            };
            failed(url, format!("Exa could not read it: {why}"))
        })
        .collect()
}

/// Extracts `urls` (already checked to be http(s)) with `backend`.
pub fn extract(
    transport: &dyn Transport,
    backend: ExtractBackend,
    settings: &Settings,
    urls: &[String],
) -> Vec<Extracted> {
    let send = |call: &HttpCall| transport.send(call, MAX_ANSWER_BYTES);
    let refused = |e: HostError| match e {
        HostError::Denied(m) => Outcome::Refused(format!("the host refused the request: {m}")),
        other => Outcome::Failed(other.message().to_owned()),
    };
    let calls = requests(backend, settings, urls);
    match backend {
        ExtractBackend::Direct => Vec::new(),
        ExtractBackend::Firecrawl => urls
            .iter()
            .zip(&calls)
            .map(|(url, call)| match send(call) {
                Ok(answer) => parse_firecrawl(url, answer.status, &answer.text()),
                Err(e) => Extracted {
                    requested: url.clone(),
                    outcome: refused(e),
                },
            })
            .collect(),
        ExtractBackend::Tavily | ExtractBackend::Exa => {
            let Some(call) = calls.first() else {
                return Vec::new();
            };
            match send(call) {
                Ok(answer) if backend == ExtractBackend::Tavily => {
                    parse_tavily(urls, answer.status, &answer.text())
                }
                Ok(answer) => parse_exa(urls, answer.status, &answer.text()),
                Err(e) => {
                    let outcome = refused(e);
                    urls.iter()
                        .map(|url| Extracted {
                            requested: url.clone(),
                            outcome: outcome.clone(),
                        })
                        .collect()
                }
            }
        }
    }
}
