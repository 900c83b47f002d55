//! Talaria plugin `web`: the tools `web_search` and `web_extract` (names
//! and arguments as in Hermes Agent, so skills written for it work).
//!
//! Settings (`web:` in config.yaml, see `plugin.toml`): `backend` for
//! searching (`duckduckgo` by default, keyless; `searxng`; keyed `brave`,
//! `tavily`, `firecrawl`, `exa`) and `extract_backend` for reading pages
//! (`direct` by default; `firecrawl`, `tavily`, `exa`). API keys never enter
//! the plugin: requests carry `{{secret:NAME}}` and the host fills it in.
//!
//! The logic is plain Rust over a [`net::Transport`], unit-tested natively
//! with recorded answers (`cargo test --manifest-path plugins/Cargo.toml -p
//! talaria-plugin-web`); only [`net::HostHttp`] needs the component.

pub mod botcheck;
pub mod charset;
pub mod ddg;
mod dom;
pub mod extract;
#[cfg(test)]
mod fixture_tests;
pub mod net;
pub mod page;
pub mod remote;
pub mod search;
pub mod settings;
pub mod summary;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use talaria_plugin_sdk::{CallContext, Tool, ToolError, ToolFlags, config};

use crate::extract::{Extracted, Outcome};
use crate::net::{HostHttp, Transport};
use crate::settings::{ExtractBackend, Settings};

/// Default and largest `limit` of `web_search`.
pub const SEARCH_DEFAULT_LIMIT: u64 = 5;
pub const SEARCH_MAX_LIMIT: u64 = 20;
/// Most URLs one `web_extract` call reads.
pub const EXTRACT_MAX_URLS: usize = 5;

// --------------------------------------------------------------- web_search

#[derive(Deserialize, JsonSchema)]
pub struct WebSearchArgs {
    /// What to search for, as you would type it into a search engine.
    pub query: String,
    /// How many results to return (default 5, at most 20).
    pub limit: Option<u64>,
}

/// `web_search`.
#[derive(Default)]
pub struct WebSearch;

impl Tool for WebSearch {
    const NAME: &'static str = "web_search";
    const DESCRIPTION: &'static str = "Search the web. Returns a numbered list of results, each \
        with its title, URL and a snippet, from the configured search engine. Snippets are \
        short: call web_extract on the URLs worth reading. An engine that blocks the search \
        (a bot check) is reported as an error, never as \"no results\".";
    type Args = WebSearchArgs;

    fn flags() -> ToolFlags {
        ToolFlags::read_only()
    }

    fn call(&self, args: WebSearchArgs, _ctx: &CallContext) -> Result<Value, ToolError> {
        let settings = Settings::load(config::get)?;
        web_search(&HostHttp, &settings, &args.query, args.limit).map(Value::String)
    }
}

/// `web_search` over `transport`.
pub fn web_search(
    transport: &dyn Transport,
    settings: &Settings,
    query: &str,
    limit: Option<u64>,
) -> Result<String, ToolError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(ToolError::invalid("query is empty"));
    }
    let limit = limit.unwrap_or(SEARCH_DEFAULT_LIMIT);
    if limit == 0 {
        return Err(ToolError::invalid("limit must be at least 1"));
    }
    let limit = usize::try_from(limit.min(SEARCH_MAX_LIMIT)).unwrap_or(5);
    search::run(transport, settings, query, limit)
}

// -------------------------------------------------------------- web_extract

#[derive(Deserialize, JsonSchema)]
pub struct WebExtractArgs {
    /// The pages to read: absolute http(s) URLs, at most 5 per call.
    pub urls: Vec<String>,
    /// Keep at most this many characters of each page's content (default:
    /// all of it).
    pub char_limit: Option<u64>,
}

/// `web_extract`.
#[derive(Default)]
pub struct WebExtract;

impl Tool for WebExtract {
    const NAME: &'static str = "web_extract";
    const DESCRIPTION: &'static str = "Read web pages. Fetches each URL (http or https, at most \
        5 per call) and returns, per page, its title, its final URL after redirects and its \
        main content as Markdown (headings, lists, links, code blocks and tables kept; \
        navigation, scripts and page chrome dropped). Plain text, Markdown and JSON come back \
        as they are; PDFs and other binary files are refused. A page that fails, is refused or \
        shows a bot check is reported in its own section without failing the others. Use \
        char_limit to keep long pages short.";
    type Args = WebExtractArgs;

    fn flags() -> ToolFlags {
        ToolFlags::read_only()
    }

    fn call(&self, args: WebExtractArgs, _ctx: &CallContext) -> Result<Value, ToolError> {
        let settings = Settings::load(config::get)?;
        web_extract(
            &HostHttp,
            &summary::HostModel,
            &settings,
            &args.urls,
            args.char_limit,
        )
        .map(Value::String)
    }
}

/// `web_extract` over `transport`.
pub fn web_extract(
    transport: &dyn Transport,
    model: &dyn summary::Summarizer,
    settings: &Settings,
    urls: &[String],
    char_limit: Option<u64>,
) -> Result<String, ToolError> {
    if urls.is_empty() {
        return Err(ToolError::invalid("urls is empty: give at least one URL"));
    }
    if urls.len() > EXTRACT_MAX_URLS {
        return Err(ToolError::invalid(format!(
            "{} URLs given; at most {EXTRACT_MAX_URLS} per call: split them over several calls",
            urls.len()
        )));
    }
    if char_limit == Some(0) {
        return Err(ToolError::invalid("char_limit must be at least 1"));
    }
    let char_limit = char_limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut items: Vec<Option<Extracted>> = vec![None; urls.len()];
    let mut remote_urls = Vec::new();
    for (slot, raw) in items.iter_mut().zip(urls) {
        match extract::check_url(raw) {
            Err(why) => {
                *slot = Some(Extracted {
                    requested: raw.clone(),
                    outcome: Outcome::Refused(why),
                });
            }
            Ok(_) if settings.extract_backend == ExtractBackend::Direct => {
                *slot = Some(Extracted {
                    requested: raw.clone(),
                    outcome: extract::fetch(transport, raw),
                });
            }
            Ok(_) => remote_urls.push(raw.trim().to_owned()),
        }
    }
    let mut remote =
        remote::extract(transport, settings.extract_backend, settings, &remote_urls).into_iter();
    let mut items: Vec<Extracted> = items
        .into_iter()
        .zip(urls)
        .map(|(item, raw)| {
            item.or_else(|| remote.next()).unwrap_or_else(|| Extracted {
                requested: raw.clone(),
                outcome: Outcome::Failed("no answer for this URL".into()),
            })
        })
        .collect();
    if let Some(over_chars) = settings.summarize_over_chars {
        summary::summarize_long_pages(&mut items, over_chars, model);
    }
    Ok(extract::render(&items, char_limit))
}

talaria_plugin_sdk::export_tools!(WebSearch, WebExtract);
