//! The plugin's settings: the `web:` section of config.yaml over the
//! manifest's `[config]` defaults, as the host's `config.get` gives them.

use talaria_plugin_sdk::{HostError, ToolError};

/// Where `web_search` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// DuckDuckGo's HTML page (no key).
    DuckDuckGo,
    /// A SearXNG instance's JSON API.
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

impl Backend {
    const ALL: [(&'static str, Self); 6] = [
        ("duckduckgo", Self::DuckDuckGo),
        ("searxng", Self::Searxng),
        ("brave", Self::Brave),
        ("tavily", Self::Tavily),
        ("firecrawl", Self::Firecrawl),
        ("exa", Self::Exa),
    ];

    /// The config name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, b)| *b == self)
            .map_or("?", |(n, _)| n)
    }
}

/// Who fetches pages for `web_extract`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtractBackend {
    /// The plugin itself (through the host, which checks every hop).
    Direct,
    /// Firecrawl's scrape API.
    Firecrawl,
    /// Tavily's extract API.
    Tavily,
    /// Exa's contents API.
    Exa,
}

impl ExtractBackend {
    const ALL: [(&'static str, Self); 4] = [
        ("direct", Self::Direct),
        ("firecrawl", Self::Firecrawl),
        ("tavily", Self::Tavily),
        ("exa", Self::Exa),
    ];

    /// The config name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, b)| *b == self)
            .map_or("?", |(n, _)| n)
    }
}

/// The vendors' API hosts, unless config.yaml names others.
pub const DEFAULT_DUCKDUCKGO_URL: &str = "https://html.duckduckgo.com/html/";
pub const DEFAULT_BRAVE_URL: &str = "https://api.search.brave.com";
pub const DEFAULT_TAVILY_URL: &str = "https://api.tavily.com";
pub const DEFAULT_FIRECRAWL_URL: &str = "https://api.firecrawl.dev";
pub const DEFAULT_EXA_URL: &str = "https://api.exa.ai";

/// The settings of one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub backend: Backend,
    pub extract_backend: ExtractBackend,
    /// The DuckDuckGo HTML endpoint, used as it is (it has its own path).
    pub duckduckgo_url: String,
    /// A SearXNG instance's base URL; no default.
    pub searxng_url: Option<String>,
    /// Base URLs without a trailing slash.
    pub brave_url: String,
    pub tavily_url: String,
    pub firecrawl_url: String,
    pub exa_url: String,
    /// Pages longer than this many characters are summarised by the
    /// auxiliary model; `None` (unset or 0): never.
    pub summarize_over_chars: Option<usize>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            backend: Backend::DuckDuckGo,
            extract_backend: ExtractBackend::Direct,
            duckduckgo_url: DEFAULT_DUCKDUCKGO_URL.into(),
            searxng_url: None,
            brave_url: DEFAULT_BRAVE_URL.into(),
            tavily_url: DEFAULT_TAVILY_URL.into(),
            firecrawl_url: DEFAULT_FIRECRAWL_URL.into(),
            exa_url: DEFAULT_EXA_URL.into(),
            summarize_over_chars: None,
        }
    }
}

fn choose<T: Copy>(key: &str, value: &str, all: &[(&str, T)]) -> Result<T, ToolError> {
    let wanted = value.trim().to_ascii_lowercase();
    all.iter()
        .find(|(name, _)| *name == wanted)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|(n, _)| *n).collect();
            ToolError::failed(format!(
                "config web.{key} is {value:?}; it must be one of: {}",
                names.join(", ")
            ))
        })
}

fn base_url(key: &str, value: &str) -> Result<String, ToolError> {
    let value = value.trim().trim_end_matches('/');
    match url::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
            Ok(value.to_owned())
        }
        _ => Err(ToolError::failed(format!(
            "config web.{key} is {value:?}, not an http(s) URL"
        ))),
    }
}

impl Settings {
    /// Reads the settings through `get` (the host's `config.get`); unset
    /// keys keep their defaults.
    pub fn load(
        get: impl Fn(&str) -> Result<Option<String>, HostError>,
    ) -> Result<Self, ToolError> {
        let read = |key: &str| -> Result<Option<String>, ToolError> {
            Ok(get(key)
                .map_err(|e| ToolError::failed(format!("reading config web.{key}: {e}")))?
                .filter(|v| !v.trim().is_empty()))
        };
        let mut settings = Self::default();
        if let Some(v) = read("backend")? {
            settings.backend = choose("backend", &v, &Backend::ALL)?;
        }
        if let Some(v) = read("extract_backend")? {
            settings.extract_backend = choose("extract_backend", &v, &ExtractBackend::ALL)?;
        }
        if let Some(v) = read("duckduckgo_url")? {
            // Kept with its path (and trailing slash): it is the endpoint.
            base_url("duckduckgo_url", &v)?;
            settings.duckduckgo_url = v.trim().to_owned();
        }
        if let Some(v) = read("searxng_url")? {
            settings.searxng_url = Some(base_url("searxng_url", &v)?);
        }
        for (key, slot) in [
            ("brave_url", &mut settings.brave_url),
            ("tavily_url", &mut settings.tavily_url),
            ("firecrawl_url", &mut settings.firecrawl_url),
            ("exa_url", &mut settings.exa_url),
        ] {
            if let Some(v) = read(key)? {
                *slot = base_url(key, &v)?;
            }
        }
        if let Some(v) = read("summarize_over_chars")? {
            let chars: usize = v.trim().parse().map_err(|_| {
                ToolError::failed(format!(
                    "config web.summarize_over_chars is {v:?}, not a number of characters"
                ))
            })?;
            settings.summarize_over_chars = (chars > 0).then_some(chars);
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn load(pairs: &[(&str, &str)]) -> Result<Settings, ToolError> {
        Settings::load(|key| {
            Ok(pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v).to_owned()))
        })
    }

    #[test]
    fn defaults_are_keyless_duckduckgo_and_direct_fetching() {
        let settings = load(&[]).unwrap();
        assert_eq!(settings, Settings::default());
        // The manifest's empty `searxng_url` default means unset.
        assert_eq!(load(&[("searxng_url", "")]).unwrap(), Settings::default());
        assert_eq!(settings.backend, Backend::DuckDuckGo);
        assert_eq!(settings.extract_backend, ExtractBackend::Direct);
        assert_eq!(settings.searxng_url, None);
    }

    #[test]
    fn config_picks_backends_and_urls() {
        let settings = load(&[
            ("backend", " SearXNG "),
            ("extract_backend", "firecrawl"),
            ("searxng_url", "http://127.0.0.1:8888/"),
            ("brave_url", "http://127.0.0.1:9999/"),
        ])
        .unwrap();
        assert_eq!(settings.backend, Backend::Searxng);
        assert_eq!(settings.extract_backend, ExtractBackend::Firecrawl);
        assert_eq!(
            settings.searxng_url.as_deref(),
            Some("http://127.0.0.1:8888")
        );
        assert_eq!(settings.brave_url, "http://127.0.0.1:9999");
        assert_eq!(settings.exa_url, DEFAULT_EXA_URL);
    }

    #[test]
    fn bad_values_are_named() {
        let err = load(&[("backend", "google")]).unwrap_err();
        assert!(err.message().contains("web.backend"), "{err}");
        assert!(
            err.message().contains("duckduckgo, searxng, brave"),
            "{err}"
        );
        let err = load(&[("searxng_url", "searx.lan")]).unwrap_err();
        assert!(err.message().contains("not an http(s) URL"), "{err}");
        let err = Settings::load(|_| Err(HostError::Denied("no".into()))).unwrap_err();
        assert!(err.message().contains("reading config"), "{err}");
    }
}
