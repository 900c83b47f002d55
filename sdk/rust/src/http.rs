//! Outgoing HTTP through `wasi:http`. The host lets a request through only
//! when its host and port match the manifest's `network` grants (names,
//! `*.domain` suffixes or addresses); otherwise [`HostError::Denied`].
//!
//! ```ignore
//! let response = http::Request::get("https://api.example.org/v1/items?q=rust")
//!     .header("accept", "application/json")
//!     .timeout_ms(10_000)
//!     .send()?;
//! let items: serde_json::Value = response.json()?;
//! ```

use crate::HostError;

/// Largest response body read, in bytes; larger bodies are an error.
pub const MAX_BODY_BYTES: usize = 32 << 20;

/// The placeholder for the secret `name` in a header value:
/// `{{secret:NAME}}`. A plugin never sees a secret's value; the host replaces
/// the placeholder with it in outgoing requests to the hosts the manifest
/// lists for that secret (`secrets = [{ name, hosts }]` in `[capabilities]`),
/// and leaves requests to any other host as they are.
///
/// ```
/// use talaria_plugin_sdk::http;
/// let request = http::Request::get("https://api.example.org/v1/search?q=rust")
///     .header("authorization", format!("Bearer {}", http::secret("EXAMPLE_API_KEY")));
/// # let _ = request;
/// assert_eq!(http::secret("EXAMPLE_API_KEY"), "{{secret:EXAMPLE_API_KEY}}");
/// ```
pub fn secret(name: &str) -> String {
    format!("{{{{secret:{name}}}}}")
}

/// An HTTP request being built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    timeout_ms: Option<u64>,
    max_body_bytes: Option<usize>,
}

/// A response with its whole body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The body went on past [`Request::max_body_bytes`] and was cut there.
    pub truncated: bool,
}

impl Response {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, HostError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| HostError::Failed(format!("the response is not the expected JSON: {e}")))
    }

    /// The first value of a header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Request {
    /// A request with any method (`GET`, `POST`, …).
    pub fn new(method: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            method: method.into(),
            url: url.into(),
            headers: Vec::new(),
            body: None,
            timeout_ms: None,
            max_body_bytes: None,
        }
    }

    /// A `GET` request.
    pub fn get(url: impl Into<String>) -> Self {
        Self::new("GET", url)
    }

    /// A `POST` request.
    pub fn post(url: impl Into<String>) -> Self {
        Self::new("POST", url)
    }

    /// Adds a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Sets a JSON body and its content type.
    pub fn json(self, value: &serde_json::Value) -> Self {
        self.header("content-type", "application/json")
            .body(value.to_string())
    }

    /// Limits the wait for the connection, for the first response byte and
    /// between two bytes of the answer.
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = Some(ms);
        self
    }

    /// Reads at most `bytes` of the body and cuts it there
    /// ([`Response::truncated`]) instead of failing past [`MAX_BODY_BYTES`]:
    /// for pages whose beginning is what matters.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = Some(bytes);
        self
    }

    /// Sends the request and reads the whole response.
    pub fn send(&self) -> Result<Response, HostError> {
        let url = Url::parse(&self.url)?;
        send(self, &url)
    }
}

/// The parts of an `http(s)://authority/path?query` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Url<'a> {
    https: bool,
    authority: &'a str,
    path_with_query: &'a str,
}

impl<'a> Url<'a> {
    fn parse(url: &'a str) -> Result<Self, HostError> {
        let bad = |why: &str| HostError::Failed(format!("invalid URL {url:?}: {why}"));
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("no scheme"))?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            _ => return Err(bad("only http and https are supported")),
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..end];
        if authority.is_empty() || authority.contains('@') {
            return Err(bad("no host (or credentials in the URL)"));
        }
        let path_with_query = rest[end..].split('#').next().unwrap_or_default();
        Ok(Self {
            https,
            authority,
            path_with_query: if path_with_query.is_empty() {
                "/"
            } else {
                path_with_query
            },
        })
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn send(_request: &Request, _url: &Url<'_>) -> Result<Response, HostError> {
    Err(HostError::Failed(
        "no plugin host: HTTP only works inside a wasm component".into(),
    ))
}

#[cfg(target_arch = "wasm32")]
fn send(request: &Request, url: &Url<'_>) -> Result<Response, HostError> {
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{
        ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions,
        Scheme,
    };
    use wasip2::io::streams::StreamError;

    let failed = |what: &str| HostError::Failed(format!("HTTP {what} failed"));
    let from_code = |code: ErrorCode| match code {
        ErrorCode::HttpRequestDenied => HostError::Denied(format!(
            "HTTP request to {} is not in the plugin's network grants",
            url.authority
        )),
        // The host's refusals with a reason (a private address, a secret
        // the request may not carry) arrive as `internal-error("denied: …")`.
        ErrorCode::InternalError(Some(message)) if message.starts_with("denied: ") => {
            HostError::Denied(message["denied: ".len()..].to_owned())
        }
        other => HostError::Failed(format!("HTTP request to {}: {other:?}", url.authority)),
    };

    let headers = Fields::new();
    for (name, value) in &request.headers {
        headers
            .append(name, value.as_bytes())
            .map_err(|e| HostError::Failed(format!("header {name}: {e:?}")))?;
    }
    // A known body goes with its length rather than chunked: some servers
    // (and form endpoints) refuse chunked requests.
    let has_length = request
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-length"));
    if let (Some(body), false) = (&request.body, has_length) {
        headers
            .append("content-length", body.len().to_string().as_bytes())
            .map_err(|e| HostError::Failed(format!("header content-length: {e:?}")))?;
    }
    let outgoing = OutgoingRequest::new(headers);
    let method = match request.method.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        "OPTIONS" => Method::Options,
        other => Method::Other(other.to_owned()),
    };
    outgoing
        .set_method(&method)
        .map_err(|()| failed("method"))?;
    let scheme = if url.https {
        Scheme::Https
    } else {
        Scheme::Http
    };
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| failed("scheme"))?;
    outgoing
        .set_authority(Some(url.authority))
        .map_err(|()| failed("authority"))?;
    outgoing
        .set_path_with_query(Some(url.path_with_query))
        .map_err(|()| failed("path"))?;
    let body = outgoing.body().map_err(|()| failed("request body"))?;
    let options = request.timeout_ms.map(|ms| {
        let options = RequestOptions::new();
        let nanos = ms.saturating_mul(1_000_000);
        // Not every host supports each of them; its defaults then apply.
        let _ = options.set_connect_timeout(Some(nanos));
        let _ = options.set_first_byte_timeout(Some(nanos));
        let _ = options.set_between_bytes_timeout(Some(nanos));
        options
    });
    let pending = outgoing_handler::handle(outgoing, options).map_err(from_code)?;
    if let Some(bytes) = &request.body {
        let stream = body.write().map_err(|()| failed("request body"))?;
        for chunk in bytes.chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|_| failed("writing the request body"))?;
        }
        drop(stream);
    }
    OutgoingBody::finish(body, None).map_err(from_code)?;

    pending.subscribe().block();
    let incoming = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(from_code(code)),
        Some(Err(())) | None => return Err(failed("response")),
    };
    let status = incoming.status();
    let headers = incoming
        .headers()
        .entries()
        .into_iter()
        .map(|(name, value)| (name, String::from_utf8_lossy(&value).into_owned()))
        .collect();
    let incoming_body = incoming.consume().map_err(|()| failed("response body"))?;
    let stream = incoming_body
        .stream()
        .map_err(|()| failed("response body"))?;
    let mut body = Vec::new();
    let mut truncated = false;
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                body.extend_from_slice(&chunk);
                if let Some(cap) = request.max_body_bytes.filter(|cap| body.len() > *cap) {
                    // The rest is not wanted: stop reading.
                    body.truncate(cap);
                    truncated = true;
                    break;
                }
                if body.len() > MAX_BODY_BYTES {
                    return Err(HostError::Failed(format!(
                        "the response body is larger than {MAX_BODY_BYTES} bytes"
                    )));
                }
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(HostError::Failed(format!(
                    "reading the response: {}",
                    e.to_debug_string()
                )));
            }
        }
    }
    drop(stream);
    if !truncated {
        let _ = IncomingBody::finish(incoming_body);
    }
    Ok(Response {
        status,
        headers,
        truncated,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_scheme_authority_and_path() {
        let url = Url::parse("https://api.example.org:8443/v1/x?q=1#frag").unwrap();
        assert!(url.https);
        assert_eq!(url.authority, "api.example.org:8443");
        assert_eq!(url.path_with_query, "/v1/x?q=1");
        let bare = Url::parse("http://localhost").unwrap();
        assert_eq!((bare.https, bare.path_with_query), (false, "/"));
        assert!(Url::parse("ftp://x/").is_err());
        assert!(Url::parse("example.org/x").is_err());
        assert!(Url::parse("http://user:pw@example.org/").is_err());
    }

    #[test]
    fn secrets_are_named_by_a_placeholder() {
        assert_eq!(secret("BRAVE_API_KEY"), "{{secret:BRAVE_API_KEY}}");
        assert_eq!(
            format!("Bearer {}", secret("TAVILY_API_KEY")),
            "Bearer {{secret:TAVILY_API_KEY}}"
        );
    }

    #[test]
    fn natively_there_is_no_host() {
        assert!(matches!(
            Request::get("http://127.0.0.1:1/").send(),
            Err(HostError::Failed(_))
        ));
    }
}
