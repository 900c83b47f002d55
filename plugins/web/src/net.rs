//! One HTTP request at a time over a [`Transport`]: the real one is the
//! host's `wasi:http` (wasm only); tests use a scripted one. Redirects are
//! never followed here: callers follow them hop by hop, so the host checks
//! every hop's address like any other request.

use talaria_plugin_sdk::{HostError, http};

/// What the plugin says it is. Some sites refuse clients without a name.
pub const USER_AGENT: &str = "Mozilla/5.0 (compatible; talaria-web/0.1)";

/// Connect, first-byte and between-bytes timeout of one request. The whole
/// call has the manifest's 60 s; a stuck server must not take all of it.
pub const REQUEST_TIMEOUT_MS: u64 = 20_000;

/// A request to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpCall {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// Absolute `http(s)` URL.
    pub url: String,
    /// Header names and values (values may hold `{{secret:NAME}}`).
    pub headers: Vec<(String, String)>,
    /// The body of a `POST`.
    pub body: Option<Vec<u8>>,
}

impl HttpCall {
    /// A `GET` with the plugin's user agent.
    pub fn get(url: impl Into<String>) -> Self {
        Self {
            method: "GET",
            url: url.into(),
            headers: vec![("user-agent".into(), USER_AGENT.into())],
            body: None,
        }
    }

    /// A `POST` of a JSON body.
    pub fn post_json(url: impl Into<String>, body: &serde_json::Value) -> Self {
        Self {
            method: "POST",
            body: Some(body.to_string().into_bytes()),
            ..Self::get(url)
        }
        .header("content-type", "application/json")
        .header("accept", "application/json")
    }

    /// A `POST` of an `application/x-www-form-urlencoded` body.
    pub fn post_form(url: impl Into<String>, pairs: &[(&str, &str)]) -> Self {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        Self {
            method: "POST",
            body: Some(body.into_bytes()),
            ..Self::get(url)
        }
        .header("content-type", "application/x-www-form-urlencoded")
    }

    /// Adds a header.
    #[must_use]
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// The value of a header (tests look at what was sent).
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An answer, its body read up to a cap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fetched {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body, at most the cap the request was sent with.
    pub body: Vec<u8>,
    /// The body went on past the cap and was cut there.
    pub truncated: bool,
}

impl Fetched {
    /// The first value of a header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (invalid UTF-8 replaced): API answers are UTF-8.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends one request and reads the answer, cutting the body at `max_bytes`.
/// A request the host refuses (network grants, private addresses) is
/// [`HostError::Denied`].
pub trait Transport {
    /// Sends `call`.
    fn send(&self, call: &HttpCall, max_bytes: usize) -> Result<Fetched, HostError>;
}

/// The host's `wasi:http`, through the SDK.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostHttp;

impl Transport for HostHttp {
    fn send(&self, call: &HttpCall, max_bytes: usize) -> Result<Fetched, HostError> {
        let url = checked_url(&call.url)?;
        let mut request = call
            .headers
            .iter()
            .fold(http::Request::new(call.method, url), |r, (name, value)| {
                r.header(name, value)
            })
            .timeout_ms(REQUEST_TIMEOUT_MS)
            .max_body_bytes(max_bytes);
        if let Some(body) = &call.body {
            request = request.body(body.clone());
        }
        let response = request.send()?;
        Ok(Fetched {
            status: response.status,
            headers: response
                .headers
                .into_iter()
                .map(|(name, value)| (name.to_ascii_lowercase(), value))
                .collect(),
            body: response.body,
            truncated: response.truncated,
        })
    }
}

/// `raw` as an http(s) URL without credentials, normalised (IDNA host,
/// percent-encoded path) so the host sees what the page meant.
pub fn checked_url(raw: &str) -> Result<String, HostError> {
    let bad = |why: &str| HostError::Failed(format!("invalid URL {raw:?}: {why}"));
    let url = url::Url::parse(raw).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("only http and https are supported"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("credentials in URLs are not supported"));
    }
    if url.host_str().is_none() {
        return Err(bad("no host"));
    }
    let mut url = url;
    url.set_fragment(None);
    Ok(url.into())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn urls_are_checked_and_normalised() {
        assert_eq!(
            checked_url("https://example.org:8443/a b?q=1#x").unwrap(),
            "https://example.org:8443/a%20b?q=1"
        );
        assert_eq!(checked_url("http://[::1]").unwrap(), "http://[::1]/");
        assert!(checked_url("ftp://example.org/").is_err());
        assert!(checked_url("http://user:pw@example.org/").is_err());
    }

    #[test]
    fn form_posts_encode_their_fields() {
        let call = HttpCall::post_form("https://x.test/html/", &[("q", "rust & wasm")]);
        assert_eq!(call.body.as_deref(), Some(&b"q=rust+%26+wasm"[..]));
        assert_eq!(
            call.header_value("Content-Type"),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(call.header_value("user-agent"), Some(USER_AGENT));
    }

    #[test]
    fn natively_there_is_no_host() {
        assert!(matches!(
            HostHttp.send(&HttpCall::get("http://127.0.0.1:1/"), 10),
            Err(HostError::Failed(_))
        ));
    }
}
