//! Errors in OpenAI's shape (`{"error": {"message", "type", "param", "code"}}`),
//! which the official SDKs parse into their own exception types.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

/// A request that gets an error reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for the client's user.
    pub message: String,
    /// OpenAI's error type (`invalid_request_error`, …).
    pub kind: &'static str,
    /// OpenAI's error code, when there is one.
    pub code: Option<&'static str>,
    /// Seconds to wait before trying again (429).
    pub retry_after: Option<u32>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            kind,
            code: None,
            retry_after: None,
        }
    }

    /// 400: the request cannot be served as sent.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// 401: no key or the wrong one.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self {
            code: Some("invalid_api_key"),
            ..Self::new(StatusCode::UNAUTHORIZED, "invalid_request_error", message)
        }
    }

    /// 404: no such thing.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "invalid_request_error", message)
    }

    /// 413: the body is over the limit.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("the request body is larger than this server's limit of {limit} bytes"),
        )
    }

    /// 408: the body did not arrive in time.
    pub fn timeout() -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request_error",
            "the request body did not arrive in time",
        )
    }

    /// 429: too many runs at once.
    pub fn busy(max: usize) -> Self {
        Self {
            code: Some("rate_limit_exceeded"),
            retry_after: Some(1),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                format!("this server runs at most {max} requests at once; try again shortly"),
            )
        }
    }

    /// 409: the conversation is busy with another request.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "invalid_request_error", message)
    }

    /// 500: the run failed.
    pub fn server(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message)
    }

    /// The `error` object (also sent inside a stream when a run fails mid-way).
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": null,
            "code": self.code,
        }})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
