//! Endpoint configuration shared by both providers, and construction errors.

use std::fmt;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// How to reach one model endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// API root, e.g. `https://api.openai.com/v1` or `https://api.anthropic.com`.
    pub base_url: String,
    /// Secret key; sent as `Authorization: Bearer` (OpenAI) or `x-api-key` (Anthropic).
    pub api_key: Option<String>,
    /// Request a streamed (SSE) response.
    pub stream: bool,
    /// Longest silence tolerated while waiting for the response head or any
    /// chunk. Without streaming the head comes only after the whole answer is
    /// generated, so this must then cover a full generation.
    pub idle_timeout: Duration,
    /// Extra headers sent with every request (e.g. OpenRouter's `HTTP-Referer`).
    pub headers: Vec<(String, String)>,
    /// Anthropic only: send the key as `Authorization: Bearer` instead of `x-api-key`.
    pub bearer_auth: bool,
    /// Output cap used when a request sets none (Anthropic requires one and
    /// falls back to 8192; OpenAI omits `max_tokens` when this is `None`).
    pub default_max_tokens: Option<u32>,
    /// Largest reply body read, streamed or not (`model.max_reply_bytes`): a
    /// runaway or hostile endpoint cannot fill memory.
    pub max_reply_bytes: usize,
    /// Largest request body sent (`model.max_prompt_bytes`), checked before sending.
    pub max_prompt_bytes: usize,
    /// OpenAI wire only: mark the request's prompt-cache breakpoints with `cache_control`
    /// content parts (OpenRouter passes them to Claude models; the Anthropic wire always marks).
    pub cache_control: bool,
}

impl ProviderConfig {
    /// Default idle timeout: generous, since reasoning models can think silently.
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
    /// Default reply cap: 16 MiB, far above any real reply.
    pub const DEFAULT_MAX_REPLY_BYTES: usize = 16 << 20;
    /// Default prompt cap: 32 MiB, the largest request hosted APIs accept
    /// (Anthropic's limit); a million tokens of text is about 4 MiB, so only
    /// runaway content (many images, a huge paste) comes near it.
    pub const DEFAULT_MAX_PROMPT_BYTES: usize = 32 << 20;

    /// A streaming configuration for `base_url` with no key and default timeouts.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            stream: true,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            headers: Vec::new(),
            bearer_auth: false,
            default_max_tokens: None,
            max_reply_bytes: Self::DEFAULT_MAX_REPLY_BYTES,
            max_prompt_bytes: Self::DEFAULT_MAX_PROMPT_BYTES,
            cache_control: false,
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Chooses streamed or whole responses.
    pub fn with_stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Sets the idle timeout.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets the reply size cap.
    pub fn with_max_reply_bytes(mut self, bytes: usize) -> Self {
        self.max_reply_bytes = bytes;
        self
    }

    /// Sets the prompt size cap.
    pub fn with_max_prompt_bytes(mut self, bytes: usize) -> Self {
        self.max_prompt_bytes = bytes;
        self
    }

    /// Adds an extra header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("stream", &self.stream)
            .field("idle_timeout", &self.idle_timeout)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .field("bearer_auth", &self.bearer_auth)
            .field("default_max_tokens", &self.default_max_tokens)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("max_prompt_bytes", &self.max_prompt_bytes)
            .field("cache_control", &self.cache_control)
            .finish()
    }
}

/// Why a provider could not be constructed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The base URL is not an absolute http(s) URL.
    #[error("invalid base URL {url:?}: {reason}")]
    InvalidBaseUrl {
        /// The URL as configured.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A header name or value (including the API key) cannot be sent.
    #[error("invalid header {name:?}: {reason}")]
    InvalidHeader {
        /// The header name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built (e.g. TLS setup failed).
    #[error("cannot build HTTP client: {0}")]
    Client(String),
    /// An unknown provider kind was named.
    #[error("unknown provider {0:?} (expected {names})", names = crate::ProviderKind::names())]
    UnknownProvider(String),
}

/// Joins `base_url` and `path` (which starts with `/`), validating the result.
/// A trailing slash on the base is tolerated; if the base already ends with the
/// first segment of `path` (e.g. `/v1`), that segment is not doubled.
pub(crate) fn endpoint_url(base_url: &str, path: &str) -> Result<Url, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidBaseUrl {
        url: base_url.to_owned(),
        reason,
    };
    let base = base_url.trim().trim_end_matches('/');
    let parsed = Url::parse(base).map_err(|e| invalid(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid(format!("unsupported scheme {:?}", parsed.scheme())));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(invalid("missing host".to_owned()));
    }
    let mut joined = base.to_owned();
    match path.strip_prefix('/').and_then(|p| p.split_once('/')) {
        Some((first, rest)) if base.ends_with(&format!("/{first}")) => {
            joined.push('/');
            joined.push_str(rest);
        }
        _ => joined.push_str(path),
    }
    Url::parse(&joined).map_err(|e| invalid(e.to_string()))
}

/// Converts configured `(name, value)` pairs into a header map.
pub(crate) fn header_map<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str, bool)>,
) -> Result<HeaderMap, ConfigError> {
    let mut map = HeaderMap::new();
    for (name, value, sensitive) in pairs {
        let invalid = |reason: String| ConfigError::InvalidHeader {
            name: name.to_owned(),
            reason,
        };
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|e| invalid(e.to_string()))?;
        let mut value = HeaderValue::from_str(value).map_err(|e| invalid(e.to_string()))?;
        value.set_sensitive(sensitive);
        map.insert(header, value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_paths_tolerating_slashes_and_v1() {
        let url = |base, path| endpoint_url(base, path).map(|u| u.to_string()).unwrap();
        assert_eq!(
            url("https://api.openai.com/v1/", "/chat/completions"),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            url("https://api.anthropic.com", "/v1/messages"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            url("https://api.anthropic.com/v1/", "/v1/messages"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            url("http://127.0.0.1:8080", "/chat/completions"),
            "http://127.0.0.1:8080/chat/completions"
        );
    }

    #[test]
    fn rejects_bad_base_urls_naming_them() {
        for bad in ["", "api.openai.com/v1", "ftp://example.com", "http://"] {
            let err = endpoint_url(bad, "/chat/completions").unwrap_err();
            assert!(
                matches!(&err, ConfigError::InvalidBaseUrl { url, .. } if url == bad),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains(&format!("{bad:?}")));
        }
    }

    #[test]
    fn rejects_unsendable_headers() {
        let err = header_map([("x-key", "bad\nvalue", true)]).unwrap_err();
        assert!(matches!(err, ConfigError::InvalidHeader { name, .. } if name == "x-key"));
        let map = header_map([("X-Title", "talaria", false)]).unwrap();
        assert_eq!(map["x-title"], "talaria");
    }

    #[test]
    fn debug_redacts_the_key() {
        let config = ProviderConfig::new("http://x").with_api_key("sk-secret");
        assert!(!format!("{config:?}").contains("sk-secret"));
    }
}
