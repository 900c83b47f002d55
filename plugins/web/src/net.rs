//! One HTTP request at a time over a [`Transport`]: the real one is the
//! host's `wasi:http` (wasm only); tests use a scripted one. Redirects are
//! never followed here: callers follow them hop by hop, so the host checks
//! every hop's address like any other request.

use talaria_plugin_sdk::HostError;

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

/// The host's `wasi:http`.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostHttp;

impl Transport for HostHttp {
    #[cfg(target_arch = "wasm32")]
    fn send(&self, call: &HttpCall, max_bytes: usize) -> Result<Fetched, HostError> {
        wasi::send(call, max_bytes)
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn send(&self, _call: &HttpCall, _max_bytes: usize) -> Result<Fetched, HostError> {
        Err(HostError::Failed(
            "no plugin host: HTTP only works inside a wasm component".into(),
        ))
    }
}

/// The parts `wasi:http` wants: scheme, authority and path with query.
pub fn split_url(raw: &str) -> Result<(bool, String, String), HostError> {
    let bad = |why: &str| HostError::Failed(format!("invalid URL {raw:?}: {why}"));
    let url = url::Url::parse(raw).map_err(|e| bad(&e.to_string()))?;
    let https = match url.scheme() {
        "https" => true,
        "http" => false,
        _ => return Err(bad("only http and https are supported")),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("credentials in URLs are not supported"));
    }
    let host = url.host_str().ok_or_else(|| bad("no host"))?;
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let mut path = url.path().to_owned();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    Ok((https, authority, path))
}

#[cfg(target_arch = "wasm32")]
mod wasi {
    use talaria_plugin_sdk::HostError;
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{
        ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions,
        Scheme,
    };
    use wasip2::io::streams::StreamError;

    use super::{Fetched, HttpCall, REQUEST_TIMEOUT_MS, split_url};

    fn from_code(code: ErrorCode, authority: &str) -> HostError {
        match code {
            ErrorCode::HttpRequestDenied | ErrorCode::DestinationIpProhibited => {
                HostError::Denied(format!(
                    "the host refused the request to {authority}: it is not in the plugin's \
                     network grants, or it is a private or loopback address (allowed only for \
                     hosts named in the grants, or with security.allow_private_urls)"
                ))
            }
            ErrorCode::InternalError(Some(message)) if message.contains("denied") => {
                HostError::Denied(format!(
                    "the host refused the request to {authority}: {message}"
                ))
            }
            other => HostError::Failed(format!("the request to {authority} failed: {other:?}")),
        }
    }

    pub(super) fn send(call: &HttpCall, max_bytes: usize) -> Result<Fetched, HostError> {
        let (https, authority, path) = split_url(&call.url)?;
        let failed = |what: &str| HostError::Failed(format!("HTTP {what} to {authority} failed"));
        let headers = Fields::new();
        for (name, value) in &call.headers {
            headers
                .append(name, value.as_bytes())
                .map_err(|e| HostError::Failed(format!("header {name}: {e:?}")))?;
        }
        let request = OutgoingRequest::new(headers);
        let method = if call.method == "POST" {
            Method::Post
        } else {
            Method::Get
        };
        request.set_method(&method).map_err(|()| failed("method"))?;
        let scheme = if https { Scheme::Https } else { Scheme::Http };
        request
            .set_scheme(Some(&scheme))
            .map_err(|()| failed("scheme"))?;
        request
            .set_authority(Some(&authority))
            .map_err(|()| failed("authority"))?;
        request
            .set_path_with_query(Some(&path))
            .map_err(|()| failed("path"))?;
        let body = request.body().map_err(|()| failed("request body"))?;
        let options = RequestOptions::new();
        let nanos = REQUEST_TIMEOUT_MS * 1_000_000;
        // Not every host supports each of them; its defaults then apply.
        let _ = options.set_connect_timeout(Some(nanos));
        let _ = options.set_first_byte_timeout(Some(nanos));
        let _ = options.set_between_bytes_timeout(Some(nanos));
        let pending = outgoing_handler::handle(request, Some(options))
            .map_err(|code| from_code(code, &authority))?;
        if let Some(bytes) = &call.body {
            let stream = body.write().map_err(|()| failed("request body"))?;
            for chunk in bytes.chunks(4096) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(|_| failed("writing the request body"))?;
            }
            drop(stream);
        }
        OutgoingBody::finish(body, None).map_err(|code| from_code(code, &authority))?;

        pending.subscribe().block();
        let incoming = match pending.get() {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(code))) => return Err(from_code(code, &authority)),
            Some(Err(())) | None => return Err(failed("response")),
        };
        let status = incoming.status();
        let headers = incoming
            .headers()
            .entries()
            .into_iter()
            .map(|(name, value)| {
                (
                    name.to_ascii_lowercase(),
                    String::from_utf8_lossy(&value).into_owned(),
                )
            })
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
                    if body.len() > max_bytes {
                        // Stop reading: the rest is not wanted.
                        body.truncate(max_bytes);
                        truncated = true;
                        break;
                    }
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(HostError::Failed(format!(
                        "reading the answer of {authority}: {}",
                        e.to_debug_string()
                    )));
                }
            }
        }
        drop(stream);
        if !truncated {
            let _ = IncomingBody::finish(incoming_body);
        }
        Ok(Fetched {
            status,
            headers,
            body,
            truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn urls_split_for_wasi_http() {
        let (https, authority, path) = split_url("https://example.org:8443/a/b?q=1#x").unwrap();
        assert!(https);
        assert_eq!(authority, "example.org:8443");
        assert_eq!(path, "/a/b?q=1");
        let (https, authority, path) = split_url("http://[::1]/").unwrap();
        assert!(!https);
        assert_eq!((authority.as_str(), path.as_str()), ("[::1]", "/"));
        assert!(split_url("ftp://example.org/").is_err());
        assert!(split_url("http://user:pw@example.org/").is_err());
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
