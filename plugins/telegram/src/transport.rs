//! Bot API calls over `wasi:http`'s outgoing handler, used directly (not
//! through the SDK's blocking `http`) so a long-poll stays in flight as a
//! pollable that `next-events` waits on together with the host's work.

use serde_json::Value;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, FutureIncomingResponse, IncomingBody, Method, OutgoingBody, OutgoingRequest,
    RequestOptions, Scheme,
};
use wasip2::io::poll::Pollable;
use wasip2::io::streams::StreamError;

use crate::api::{ApiFailure, parse_reply};
use crate::settings::{Settings, split_url};

/// Largest Bot API answer read (an answer of 100 updates is far smaller).
const MAX_REPLY_BYTES: u64 = 8 << 20;

/// A request sent whose answer may not have arrived yet.
pub struct PendingReply {
    response: FutureIncomingResponse,
    /// The host name and port, for errors (never the path: it holds the token).
    authority: String,
}

impl std::fmt::Debug for PendingReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingReply")
            .field("authority", &self.authority)
            .finish_non_exhaustive()
    }
}

fn describe(code: &ErrorCode, authority: &str) -> String {
    match code {
        ErrorCode::HttpRequestDenied => format!(
            "the request to {authority} is not in the plugin's network grants \
             (grant it: talaria plugin grant telegram network:{authority})"
        ),
        // The host's refusals carry their reason and the grant that is missing.
        ErrorCode::InternalError(Some(text)) if text.starts_with("denied: ") => {
            text["denied: ".len()..].to_owned()
        }
        other => format!("the request to {authority} failed: {other:?}"),
    }
}

/// Starts a request: `POST url` with a JSON body, or `GET url` without one.
/// `timeout_ms` bounds the connection and the wait for the first byte.
pub fn start(url: &str, body: Option<&Value>, timeout_ms: u64) -> Result<PendingReply, ApiFailure> {
    let failed = |what: &str| ApiFailure::transport(format!("HTTP {what} failed"));
    let (https, authority, path) =
        split_url(url).ok_or_else(|| ApiFailure::transport("api_base is not an http(s) URL"))?;
    let headers = Fields::new();
    if body.is_some() {
        headers
            .append("content-type", b"application/json")
            .map_err(|_| failed("header"))?;
    }
    let request = OutgoingRequest::new(headers);
    let method = if body.is_some() {
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
        .set_authority(Some(authority))
        .map_err(|()| failed("authority"))?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| failed("path"))?;
    let outgoing_body = request.body().map_err(|()| failed("request body"))?;
    let options = RequestOptions::new();
    let nanos = timeout_ms.saturating_mul(1_000_000);
    // Not every host supports both; the defaults then apply.
    let _ = options.set_connect_timeout(Some(nanos.min(30_000_000_000)));
    let _ = options.set_first_byte_timeout(Some(nanos));
    let response = outgoing_handler::handle(request, Some(options))
        .map_err(|code| ApiFailure::transport(describe(&code, authority)))?;
    if let Some(body) = body {
        let bytes = body.to_string().into_bytes();
        let stream = outgoing_body.write().map_err(|()| failed("request body"))?;
        for chunk in bytes.chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|_| failed("writing the request body"))?;
        }
    }
    OutgoingBody::finish(outgoing_body, None)
        .map_err(|code| ApiFailure::transport(describe(&code, authority)))?;
    Ok(PendingReply {
        response,
        authority: authority.to_owned(),
    })
}

impl PendingReply {
    /// Ready once the answer's head arrived (or the request failed).
    pub fn subscribe(&self) -> Pollable {
        self.response.subscribe()
    }

    /// The status and body, waiting for them; a body over `max_bytes` is an
    /// error.
    pub fn finish(self, max_bytes: u64) -> Result<(u16, Vec<u8>), ApiFailure> {
        let failed = |what: &str| {
            ApiFailure::transport(format!(
                "reading the answer of {} failed: {what}",
                self.authority
            ))
        };
        self.response.subscribe().block();
        let incoming = match self.response.get() {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(code))) => {
                return Err(ApiFailure::transport(describe(&code, &self.authority)));
            }
            Some(Err(())) | None => return Err(failed("no response")),
        };
        let status = incoming.status();
        let declared = incoming
            .headers()
            .get("content-length")
            .first()
            .and_then(|value| String::from_utf8_lossy(value).trim().parse::<u64>().ok());
        if declared.is_some_and(|length| length > max_bytes) {
            return Err(failed(&format!(
                "the body is larger than {max_bytes} bytes"
            )));
        }
        let incoming_body = incoming.consume().map_err(|()| failed("no body"))?;
        let stream = incoming_body.stream().map_err(|()| failed("no body"))?;
        let mut body = Vec::new();
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => {
                    body.extend_from_slice(&chunk);
                    if body.len() as u64 > max_bytes {
                        return Err(failed(&format!(
                            "the body is larger than {max_bytes} bytes"
                        )));
                    }
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(failed(&e.to_debug_string()));
                }
            }
        }
        drop(stream);
        let _ = IncomingBody::finish(incoming_body);
        Ok((status, body))
    }

    /// The Bot API `result` of the answer.
    pub fn result(self) -> Result<Value, ApiFailure> {
        let (status, body) = self.finish(MAX_REPLY_BYTES)?;
        parse_reply(status, &body)
    }
}

/// Calls a Bot API method and waits for its `result`; the token is redacted
/// from any error.
pub fn call(
    settings: &Settings,
    method: &str,
    body: &Value,
    timeout_ms: u64,
) -> Result<Value, ApiFailure> {
    start(&settings.method_url(method), Some(body), timeout_ms)
        .and_then(PendingReply::result)
        .map_err(|failure| ApiFailure {
            description: settings.redact(&failure.description),
            ..failure
        })
}
