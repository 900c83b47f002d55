//! The web tools' settings (`web:` in config.yaml): which search engine
//! `web_search` asks and how `web_extract` fetches pages. The first-party
//! `web` plugin reads them as its config; API keys are not settings here —
//! they stay in the environment or `.env`, and the plugin host writes them
//! into requests to the backend's host without the plugin ever seeing them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A search backend of `web_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchBackend {
    /// DuckDuckGo's HTML page: no key.
    Duckduckgo,
    /// A SearXNG instance's JSON API at `web.searxng_url`.
    Searxng,
    /// Brave Search API (`BRAVE_API_KEY`).
    Brave,
    /// Tavily (`TAVILY_API_KEY`).
    Tavily,
    /// Firecrawl (`FIRECRAWL_API_KEY`).
    Firecrawl,
    /// Exa (`EXA_API_KEY`).
    Exa,
}

impl SearchBackend {
    /// The name config.yaml and the plugin use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Duckduckgo => "duckduckgo",
            Self::Searxng => "searxng",
            Self::Brave => "brave",
            Self::Tavily => "tavily",
            Self::Firecrawl => "firecrawl",
            Self::Exa => "exa",
        }
    }

    /// The environment variable holding the backend's API key, if it has one.
    pub fn key_variable(self) -> Option<&'static str> {
        match self {
            Self::Duckduckgo | Self::Searxng => None,
            Self::Brave => Some("BRAVE_API_KEY"),
            Self::Tavily => Some("TAVILY_API_KEY"),
            Self::Firecrawl => Some("FIRECRAWL_API_KEY"),
            Self::Exa => Some("EXA_API_KEY"),
        }
    }
}

/// How `web_extract` gets a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExtractBackend {
    /// The plugin fetches the page and turns its HTML into Markdown.
    Direct,
    /// Firecrawl's scrape API.
    Firecrawl,
    /// Tavily's extract API.
    Tavily,
    /// Exa's contents API.
    Exa,
}

impl ExtractBackend {
    fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Firecrawl => "firecrawl",
            Self::Tavily => "tavily",
            Self::Exa => "exa",
        }
    }
}

/// `web:` in config.yaml. Unknown keys land in `endpoints` and are refused
/// by [`WebConfig::validate`] (serde cannot deny them next to a flattened map).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebConfig {
    /// The search backend; unset: the first keyed backend whose key is set
    /// (Firecrawl, Tavily, Exa, Brave), else SearXNG when `searxng_url` is
    /// set, else DuckDuckGo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<SearchBackend>,
    /// How pages are fetched (`direct` by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extract_backend: Option<ExtractBackend>,
    /// The SearXNG instance (`http://127.0.0.1:8888`): reachable even at a
    /// private address, since the user named it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub searxng_url: Option<String>,
    /// Pages `web_extract` reads that are longer than this many characters
    /// are summarised by the auxiliary model (unset or 0: never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarize_over_chars: Option<u32>,
    /// Other endpoints, for proxies and self-hosted gateways (the vendors'
    /// own by default): `duckduckgo_url`, `brave_url`, `tavily_url`,
    /// `firecrawl_url`, `exa_url`.
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, String>,
}

/// The endpoint settings besides `searxng_url`.
const ENDPOINT_KEYS: [&str; 5] = [
    "duckduckgo_url",
    "brave_url",
    "tavily_url",
    "firecrawl_url",
    "exa_url",
];

impl WebConfig {
    /// The search backend in force, given which environment variables are
    /// set.
    pub fn search_backend(&self, is_set: impl Fn(&str) -> bool) -> SearchBackend {
        if let Some(backend) = self.backend {
            return backend;
        }
        let keyed = [
            SearchBackend::Firecrawl,
            SearchBackend::Tavily,
            SearchBackend::Exa,
            SearchBackend::Brave,
        ];
        keyed
            .into_iter()
            .find(|b| b.key_variable().is_some_and(&is_set))
            .unwrap_or(if self.searxng_url.is_some() {
                SearchBackend::Searxng
            } else {
                SearchBackend::Duckduckgo
            })
    }

    /// The `web` plugin's config: the backends in force and the endpoints set.
    pub fn plugin_config(&self, is_set: impl Fn(&str) -> bool) -> BTreeMap<String, String> {
        let mut config = self.endpoints.clone();
        config.insert(
            "backend".into(),
            self.search_backend(is_set).as_str().into(),
        );
        if let Some(extract) = self.extract_backend {
            config.insert("extract_backend".into(), extract.as_str().into());
        }
        if let Some(url) = &self.searxng_url {
            config.insert("searxng_url".into(), url.clone());
        }
        if let Some(chars) = self.summarize_over_chars {
            config.insert("summarize_over_chars".into(), chars.to_string());
        }
        config
    }

    /// What is wrong with the settings: an unknown key, an endpoint that is
    /// not an http(s) URL, SearXNG chosen without its URL.
    pub(crate) fn validate(&self) -> Result<(), (String, String)> {
        for (key, value) in &self.endpoints {
            if !ENDPOINT_KEYS.contains(&key.as_str()) {
                return Err((
                    key.clone(),
                    format!(
                        "web.{key} is not a web setting: use backend, extract_backend, \
                         searxng_url, summarize_over_chars, {}",
                        ENDPOINT_KEYS.join(", ")
                    ),
                ));
            }
            check_url(key, value)?;
        }
        if let Some(url) = &self.searxng_url {
            check_url("searxng_url", url)?;
        }
        if self.backend == Some(SearchBackend::Searxng) && self.searxng_url.is_none() {
            return Err((
                "backend".into(),
                "web.backend is searxng but web.searxng_url is not set".into(),
            ));
        }
        Ok(())
    }
}

fn check_url(key: &str, value: &str) -> Result<(), (String, String)> {
    let lower = value.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        Ok(())
    } else {
        Err((
            key.to_owned(),
            format!("web.{key} must be an http:// or https:// URL, not {value:?}"),
        ))
    }
}

/// Checks `web:` of the parsed `text` (the file at `path`).
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use super::*;
    use crate::{ConfigFile, EnvLayer};

    fn parse(text: &str) -> Result<ConfigFile, String> {
        ConfigFile::parse(text, Path::new("config.yaml"), &EnvLayer::default())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_backend_follows_the_setting_then_the_keys_set() {
        let none = |_: &str| false;
        let web = parse("model:\n  name: x\n").unwrap().web;
        assert_eq!(web.search_backend(none), SearchBackend::Duckduckgo);
        assert_eq!(
            web.search_backend(|name| name == "BRAVE_API_KEY" || name == "EXA_API_KEY"),
            SearchBackend::Exa
        );
        let searx = parse("web:\n  searxng_url: http://127.0.0.1:8888\n")
            .unwrap()
            .web;
        assert_eq!(searx.search_backend(none), SearchBackend::Searxng);
        let config = searx.plugin_config(none);
        assert_eq!(config["backend"], "searxng");
        assert_eq!(config["searxng_url"], "http://127.0.0.1:8888");
        let chosen = parse("web:\n  backend: brave\n  brave_url: http://127.0.0.1:9\n")
            .unwrap()
            .web;
        let config = chosen.plugin_config(|_| true);
        assert_eq!(config["backend"], "brave");
        assert_eq!(config["brave_url"], "http://127.0.0.1:9");
        assert!(!config.contains_key("extract_backend"));
        let summaries = parse("web:\n  summarize_over_chars: 20000\n").unwrap().web;
        assert_eq!(
            summaries.plugin_config(none)["summarize_over_chars"],
            "20000"
        );
    }

    #[test]
    fn bad_settings_are_refused_where_they_are() {
        let error = parse("web:\n  backend: altavista\n").unwrap_err();
        assert!(error.contains("altavista"), "{error}");
        let error = parse("web:\n  backend: searxng\n").unwrap_err();
        assert!(error.contains("web.searxng_url is not set"), "{error}");
        let error = parse("web:\n  bing_url: https://bing.example\n").unwrap_err();
        assert!(
            error.contains("web.bing_url is not a web setting"),
            "{error}"
        );
        let error = parse("model:\n  name: x\nweb:\n  exa_url: ftp://x\n").unwrap_err();
        assert!(error.starts_with("config.yaml:4:"), "{error}");
        assert!(
            error.contains("must be an http:// or https:// URL"),
            "{error}"
        );
    }
}
