//! The delay a provider asks for before a retry: `retry-after-ms`, or
//! `Retry-After` as delta-seconds or an HTTP-date.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// Longest delay honoured; larger values are clamped to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// Reads the retry delay from response headers, preferring the precise
/// `retry-after-ms` (sent by OpenAI) over `Retry-After`.
pub(crate) fn from_headers(headers: &HeaderMap) -> Option<Duration> {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    header("retry-after-ms")
        .and_then(|ms| parse_seconds(ms).map(|secs| secs / 1000.0))
        .map(clamp)
        .or_else(|| header("retry-after").and_then(|v| parse(v, SystemTime::now())))
}

/// Parses a `Retry-After` value (delta-seconds, possibly fractional, or an
/// HTTP-date relative to `now`; a date in the past means "now").
pub(crate) fn parse(value: &str, now: SystemTime) -> Option<Duration> {
    if let Some(secs) = parse_seconds(value) {
        return Some(clamp(secs));
    }
    let date = httpdate::parse_http_date(value.trim()).ok()?;
    Some(
        date.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(MAX_RETRY_AFTER),
    )
}

fn parse_seconds(value: &str) -> Option<f64> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|secs| secs.is_finite() && *secs >= 0.0)
}

fn clamp(secs: f64) -> Duration {
    Duration::from_secs_f64(secs.min(MAX_RETRY_AFTER.as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn parses_delta_seconds_and_fractions() {
        let now = SystemTime::now();
        assert_eq!(parse("30", now), Some(Duration::from_secs(30)));
        assert_eq!(parse(" 1.5 ", now), Some(Duration::from_millis(1500)));
        assert_eq!(parse("0", now), Some(Duration::ZERO));
    }

    #[test]
    fn parses_http_dates() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(
            parse("Wed, 21 Oct 2015 07:28:45 GMT", now),
            Some(Duration::from_secs(45))
        );
        assert_eq!(
            parse("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn caps_absurd_values_and_rejects_garbage() {
        let now = SystemTime::now();
        assert_eq!(parse("999999999999", now), Some(MAX_RETRY_AFTER));
        assert_eq!(parse("1e300", now), Some(MAX_RETRY_AFTER));
        assert_eq!(
            parse("Fri, 31 Dec 9999 23:59:59 GMT", now),
            Some(MAX_RETRY_AFTER)
        );
        for bad in ["-5", "NaN", "inf", "soon", ""] {
            assert_eq!(parse(bad, now), None, "{bad}");
        }
    }

    #[test]
    fn prefers_milliseconds_header() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("20"));
        assert_eq!(from_headers(&headers), Some(Duration::from_secs(20)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(from_headers(&headers), Some(Duration::from_millis(250)));
        assert_eq!(from_headers(&HeaderMap::new()), None);
    }
}
