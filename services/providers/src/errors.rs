//! Classifying provider failures into [`ModelError`]s: HTTP statuses, error
//! bodies in the OpenAI and Anthropic shapes, in-stream error events and
//! transport errors.

use std::error::Error as _;
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;
use talaria_kernel::ModelError;

use crate::retry_after;

/// Longest provider text quoted in an error message.
const MAX_MESSAGE_CHARS: usize = 500;

/// Phrasings servers use for "the prompt does not fit the context window"
/// (OpenAI, Anthropic, OpenRouter, vLLM, llama.cpp, Ollama, ...), lowercase.
const OVERFLOW_HINTS: &[&str] = &[
    "context_length_exceeded",
    "exceed context limit",
    "context length",
    "context window",
    "context size",
    "exceed_context_size",
    "maximum context",
    "max context",
    "prompt is too long",
    "prompt too long",
    "too many tokens",
    "input is too long",
    "reduce the length of the messages",
    "request_too_large",
];

/// Phrasings of "this key's credit or quota is used up" (OpenAI, Anthropic, OpenRouter),
/// lowercase.
const QUOTA_HINTS: &[&str] = &[
    "insufficient_quota",
    "exceeded your current quota",
    "credit balance is too low",
    "insufficient credits",
    "reached your specified api usage limits",
    "spend limit",
];

/// Phrasings of a content filter or moderation refusal, lowercase.
const FILTER_HINTS: &[&str] = &[
    "content management policy",
    "content_filter",
    "content_policy_violation",
    "rejected as a result of our safety system",
    "requires moderation",
    "input was flagged",
];

/// Error `code`/`type` strings that name a class whatever the status.
fn class_for_code(code: &str) -> Option<Class> {
    Some(match code {
        "insufficient_quota" | "billing_error" | "enforced_spend_limit_reached" => Class::Quota,
        "content_filter" | "content_policy_violation" | "moderation_error" => Class::Filtered,
        "model_not_found" => Class::ModelNotFound,
        _ => return None,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Quota,
    Filtered,
    ModelNotFound,
}

/// One failure as the provider described it.
struct Failure<'a> {
    status: u16,
    message: String,
    /// The whole body (or event), searched for phrasings.
    haystack: &'a str,
    /// Every `code`/`type` string the body holds, lowercase.
    codes: Vec<String>,
    /// OpenRouter's moderation details (`metadata.reasons`, `metadata.flagged_input`).
    flagged: bool,
    retry_after: Option<Duration>,
}

/// Classifies an unsuccessful HTTP response.
pub(crate) fn from_http(status: u16, headers: &HeaderMap, body: &[u8]) -> ModelError {
    let text = String::from_utf8_lossy(body);
    let json = serde_json::from_str::<Value>(&text).ok();
    let message = json
        .as_ref()
        .and_then(message_from_json)
        .unwrap_or_else(|| fallback_message(status, &text));
    classify(Failure {
        status,
        message,
        haystack: &text,
        codes: json.as_ref().map(error_codes).unwrap_or_default(),
        flagged: json.as_ref().is_some_and(is_flagged),
        retry_after: retry_after::from_headers(headers),
    })
}

/// Classifies an error object that arrived inside a 200 response (an SSE
/// `error` event or an `{"error": ...}` chunk), given the whole event JSON.
pub(crate) fn from_error_event(event: &Value) -> ModelError {
    let error = event.get("error").unwrap_or(event);
    let numeric_code = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok());
    let status = numeric_code
        .filter(|code| (400..=599).contains(code))
        .or_else(|| {
            [error.get("type"), error.get("code")]
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .find_map(status_for_error_type)
        })
        .unwrap_or(500);
    let message = message_from_json(event).unwrap_or_else(|| truncate(&event.to_string()));
    let text = event.to_string();
    classify(Failure {
        status,
        message,
        haystack: &text,
        codes: error_codes(event),
        flagged: is_flagged(event),
        retry_after: None,
    })
}

/// Maps a failure to an error class: the codes and phrasings that name a class first
/// (a quota error arrives as 429 from OpenAI, 402 from OpenRouter, 400 from Anthropic),
/// then the status.
fn classify(failure: Failure<'_>) -> ModelError {
    let Failure {
        status,
        message,
        haystack,
        codes,
        flagged,
        retry_after,
    } = failure;
    let lower = haystack.to_lowercase();
    let by_code = codes.iter().find_map(|code| class_for_code(code));
    let quota = by_code == Some(Class::Quota)
        || status == 402
        || QUOTA_HINTS.iter().any(|hint| lower.contains(hint));
    if quota && status != 401 {
        return ModelError::QuotaExhausted {
            message,
            retry_after,
        };
    }
    let filtered = by_code == Some(Class::Filtered)
        || flagged
        || FILTER_HINTS.iter().any(|hint| lower.contains(hint));
    if filtered && matches!(status, 400 | 403 | 422) {
        return ModelError::ContentFiltered { message };
    }
    if by_code == Some(Class::ModelNotFound) || names_a_missing_model(status, &codes, &lower) {
        return ModelError::ModelNotFound { message };
    }
    match status {
        401 | 403 => ModelError::Auth { message },
        429 => ModelError::RateLimited {
            message,
            retry_after,
        },
        400 => match output_room(haystack) {
            Some(available) => ModelError::OutputBudgetTooLarge { available, message },
            None if mentions_overflow(&lower) => ModelError::ContextOverflow { message },
            None => ModelError::InvalidRequest { status, message },
        },
        413 | 422 if mentions_overflow(&lower) => ModelError::ContextOverflow { message },
        408 => ModelError::Timeout { message },
        503 | 529 => ModelError::Overloaded {
            status,
            message,
            retry_after,
        },
        500..=599 => ModelError::Server {
            status,
            message,
            retry_after,
        },
        _ => ModelError::InvalidRequest { status, message },
    }
}

/// Whether a 404 (or OpenRouter's 400) says the model itself is unknown, as opposed to
/// a wrong URL: the body must speak of a model.
fn names_a_missing_model(status: u16, codes: &[String], lower: &str) -> bool {
    let not_found = codes
        .iter()
        .any(|code| matches!(code.as_str(), "not_found_error" | "notfounderror"));
    let speaks_of_model = lower.contains("model");
    match status {
        404 => speaks_of_model || not_found,
        400 => {
            lower.contains("is not a valid model id")
                || (speaks_of_model
                    && (lower.contains("does not exist") || lower.contains("not found")))
        }
        _ => false,
    }
}

/// Classifies a transport failure before or while sending the request.
pub(crate) fn from_send_error(provider: &str, error: &reqwest::Error) -> ModelError {
    let message = format!("{provider}: {}", describe(error));
    if error.is_timeout() {
        ModelError::Timeout { message }
    } else {
        ModelError::Connect { message }
    }
}

/// A transport error with its sources, e.g. "error sending request: connection refused".
pub(crate) fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A `Malformed` error.
pub(crate) fn malformed(message: impl Into<String>) -> ModelError {
    ModelError::Malformed {
        message: message.into(),
    }
}

/// Room left for output when a 400 says the prompt plus `max_tokens` exceed the window while the
/// prompt alone fits (Anthropic: "input length and `max_tokens` exceed context limit: 188240 +
/// 21333 > 200000, decrease input length or `max_tokens` and try again"): the limit minus the
/// input, less a small margin for the provider's own counting.
fn output_room(text: &str) -> Option<u32> {
    const MARKER: &str = "exceed context limit:";
    let start = text.find(MARKER)? + MARKER.len();
    let numbers: Vec<u64> = text[start..]
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .take(3)
        .filter_map(|part| part.parse().ok())
        .collect();
    let [input, _, limit] = numbers[..] else {
        return None;
    };
    let room = limit.checked_sub(input)?.checked_sub(64)?;
    u32::try_from(room).ok().filter(|room| *room > 0)
}

/// Whether lowercase `text` describes a prompt too large for the model's context.
fn mentions_overflow(lower: &str) -> bool {
    OVERFLOW_HINTS.iter().any(|hint| lower.contains(hint))
}

/// The provider's own message from `{"error":{"message":..}}` (OpenAI and
/// Anthropic), `{"error":".."}` (Ollama, some proxies), `{"message":..}` or
/// `{"detail":..}` (FastAPI-based servers).
fn message_from_json(body: &Value) -> Option<String> {
    let error = body.get("error");
    let text = error
        .and_then(|e| e.get("message"))
        .or(error.filter(|e| e.is_string()))
        .or_else(|| body.get("message"))
        .or_else(|| body.get("detail"))?;
    let text = match text {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Some(truncate(text.trim()))
}

/// Every `code`/`type` string of the error object and of the body (vLLM puts them at the
/// top level, Anthropic's spend limit under `error.details.error_code`), lowercase.
fn error_codes(body: &Value) -> Vec<String> {
    let error = body.get("error");
    [
        error.and_then(|e| e.get("code")),
        error.and_then(|e| e.get("type")),
        error
            .and_then(|e| e.get("details"))
            .and_then(|d| d.get("error_code")),
        body.get("code"),
        body.get("type"),
    ]
    .into_iter()
    .flatten()
    .filter_map(Value::as_str)
    .map(str::to_ascii_lowercase)
    .collect()
}

/// OpenRouter's moderation refusal: `error.metadata` with `reasons` or `flagged_input`.
fn is_flagged(body: &Value) -> bool {
    body.get("error")
        .and_then(|e| e.get("metadata"))
        .is_some_and(|m| m.get("reasons").is_some() || m.get("flagged_input").is_some())
}

/// The HTTP status matching an error `type`/`code` string from either API.
fn status_for_error_type(kind: &str) -> Option<u16> {
    Some(match kind {
        "invalid_request_error" | "context_length_exceeded" => 400,
        "authentication_error" | "invalid_api_key" => 401,
        "permission_error" => 403,
        "not_found_error" | "model_not_found" => 404,
        "request_too_large" => 413,
        "rate_limit_error" | "rate_limit_exceeded" | "tokens" | "requests" => 429,
        "timeout_error" => 504,
        "overloaded_error" | "server_overloaded" | "unavailable_error" => 529,
        "insufficient_quota" | "billing_error" => 402,
        "api_error" | "server_error" => 500,
        _ => return None,
    })
}

fn fallback_message(status: u16, body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        let reason = reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("no body");
        format!("HTTP {status} ({reason})")
    } else {
        truncate(body)
    }
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use serde_json::json;

    fn http(status: u16, body: &str) -> ModelError {
        from_http(status, &HeaderMap::new(), body.as_bytes())
    }

    #[test]
    fn auth_and_rate_limit_statuses() {
        let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        assert_eq!(
            http(401, body),
            ModelError::Auth {
                message: "Incorrect API key provided".into()
            }
        );
        assert!(
            matches!(http(403, "forbidden"), ModelError::Auth { message } if message == "forbidden")
        );

        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("7"));
        let err = from_http(429, &headers, br#"{"error":{"message":"slow down"}}"#);
        assert_eq!(
            err,
            ModelError::RateLimited {
                message: "slow down".into(),
                retry_after: Some(Duration::from_secs(7))
            }
        );
    }

    #[test]
    fn insufficient_quota_is_not_retried() {
        let body = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        let err = http(429, body);
        assert!(matches!(err, ModelError::QuotaExhausted { .. }), "{err:?}");
        assert!(!err.is_retryable());
        assert!(err.may_fall_back());
        // A 401 that mentions quota is still a bad key.
        assert!(matches!(
            http(
                401,
                r#"{"error":{"message":"invalid key for quota project"}}"#
            ),
            ModelError::Auth { .. }
        ));
    }

    #[test]
    fn server_errors_including_overloaded() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            http(529, body),
            ModelError::Overloaded {
                status: 529,
                message: "Overloaded".into(),
                retry_after: None
            }
        );
        assert!(
            matches!(http(502, "<html>bad gateway</html>"), ModelError::Server { status: 502, message, .. } if message == "<html>bad gateway</html>")
        );
        assert!(
            matches!(http(503, ""), ModelError::Overloaded { message, .. } if message == "HTTP 503 (Service Unavailable)")
        );
    }

    #[test]
    fn the_output_budget_is_lowered_when_the_prompt_alone_fits() {
        // Anthropic's 400 when input + max_tokens exceed the window (the Messages API's
        // invalid_request_error, as seen on claude-3 and later models).
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again"}}"#;
        assert!(matches!(
            http(400, body),
            ModelError::OutputBudgetTooLarge {
                available: 11_696,
                ..
            }
        ));
        // The input alone is over the limit: a real overflow.
        let over = body.replace("188240", "201000");
        assert!(matches!(
            http(400, &over),
            ModelError::ContextOverflow { .. }
        ));
    }

    #[test]
    fn context_overflow_phrasings() {
        let bodies = [
            // OpenAI
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            // Anthropic
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#,
            // llama.cpp server
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
            // vLLM
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
            // Ollama
            r#"{"error":"prompt too long; exceeded max context length by 12 tokens"}"#,
        ];
        for body in bodies {
            assert!(
                matches!(http(400, body), ModelError::ContextOverflow { .. }),
                "{body}"
            );
        }
        assert!(matches!(
            http(413, "Too many tokens in request"),
            ModelError::ContextOverflow { .. }
        ));
        assert!(matches!(
            http(422, r#"{"detail":"Input is too long for this model"}"#),
            ModelError::ContextOverflow { message } if message == "Input is too long for this model"
        ));
    }

    #[test]
    fn other_client_errors_are_invalid_requests() {
        let body = r#"{"error":{"message":"Unrecognized request argument supplied: foo","type":"invalid_request_error"}}"#;
        assert_eq!(
            http(400, body),
            ModelError::InvalidRequest {
                status: 400,
                message: "Unrecognized request argument supplied: foo".into()
            }
        );
        assert!(
            matches!(http(404, r#"{"error":"model 'x' not found"}"#), ModelError::ModelNotFound { message } if message == "model 'x' not found")
        );
        // A 404 that does not speak of a model is a wrong URL, not a missing model.
        assert!(matches!(
            http(404, "404 page not found"),
            ModelError::InvalidRequest { status: 404, .. }
        ));
        // Context phrasing only counts for request-shape statuses.
        assert!(matches!(
            http(404, "context length"),
            ModelError::InvalidRequest { .. }
        ));
    }

    #[test]
    fn long_bodies_are_truncated_on_char_boundaries() {
        let body = "é".repeat(2000);
        let ModelError::InvalidRequest { message, .. } = http(400, &body) else {
            panic!()
        };
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS + 3);
    }

    #[test]
    fn in_stream_errors() {
        let overloaded =
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}});
        assert_eq!(
            from_error_event(&overloaded),
            ModelError::Overloaded {
                status: 529,
                message: "Overloaded".into(),
                retry_after: None
            }
        );
        let limited =
            json!({"type":"error","error":{"type":"rate_limit_error","message":"Too fast"}});
        assert!(matches!(
            from_error_event(&limited),
            ModelError::RateLimited { .. }
        ));
        let openrouter = json!({"error":{"code":502,"message":"Provider returned error"}});
        assert!(matches!(
            from_error_event(&openrouter),
            ModelError::Server { status: 502, .. }
        ));
        let overflow = json!({"error":{"message":"maximum context length exceeded","code":"context_length_exceeded"}});
        assert!(matches!(
            from_error_event(&overflow),
            ModelError::ContextOverflow { .. }
        ));
        let unknown = json!({"error":{"message":"something broke"}});
        assert!(matches!(
            from_error_event(&unknown),
            ModelError::Server { status: 500, .. }
        ));
    }
}
