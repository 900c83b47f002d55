//! The front door, driven through the router: keys, limits, malformed input.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use talaria_profile::{Overrides, ProfileHome};
use tower::ServiceExt;

use super::*;

const KEY: &str = "test-key-0123456789abcdef";

fn options(home: &tempfile::TempDir) -> ServeOptions {
    ServeOptions {
        home: ProfileHome::at(home.path()),
        overrides: Overrides::default(),
        cwd: home.path().to_path_buf(),
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        keys: vec![(KEY.to_owned(), talaria_kernel::Principal::owner())],
        max_body_bytes: 1024,
        max_concurrent_runs: 2,
        cors_origins: Vec::new(),
        read_timeout: Duration::from_secs(5),
        max_connections: 8,
    }
}

fn post(path: &str, auth: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut request = Request::post(path).header("content-type", "application/json");
    if let Some(auth) = auth {
        request = request.header("authorization", format!("Bearer {auth}"));
    }
    request.body(body.into()).unwrap()
}

async fn send(router: Router, request: Request<Body>) -> (StatusCode, http::HeaderMap, Value) {
    let response = router.oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn assert_openai_error(body: &Value, needle: &str) {
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{body}");
    assert!(body["error"]["type"].is_string(), "{body}");
}

const CHAT: &str = r#"{"model":"talaria","messages":[{"role":"user","content":"hi"}]}"#;

#[test]
fn the_server_refuses_a_short_key_or_no_run_slots() {
    let home = tempfile::tempdir().unwrap();
    let short = ServeOptions {
        keys: vec![("short".into(), talaria_kernel::Principal::owner())],
        ..options(&home)
    };
    assert!(matches!(router(&short), Err(ServeError::Config(m)) if m.contains("at least 16")));
    let none = ServeOptions {
        max_concurrent_runs: 0,
        ..options(&home)
    };
    assert!(router(&none).is_err());
    let cors = ServeOptions {
        cors_origins: vec!["bad\norigin".into()],
        ..options(&home)
    };
    assert!(router(&cors).is_err());
}

#[tokio::test]
async fn requests_without_the_right_key_get_401() {
    let home = tempfile::tempdir().unwrap();
    let router = router(&options(&home)).unwrap();
    for auth in [None, Some("wrong-key-0123456789abcdef"), Some("")] {
        let (status, _, body) =
            send(router.clone(), post("/v1/chat/completions", auth, CHAT)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{auth:?}");
        assert_eq!(body["error"]["code"], "invalid_api_key");
    }
    let models = Request::get("/v1/models").body(Body::empty()).unwrap();
    assert_eq!(
        send(router.clone(), models).await.0,
        StatusCode::UNAUTHORIZED
    );
    // Health needs no key (load balancers probe it).
    let health = Request::get("/health").body(Body::empty()).unwrap();
    let (status, _, body) = send(router, health).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"status": "ok"})));
}

#[tokio::test]
async fn an_oversized_body_gets_413_whether_declared_or_not() {
    let home = tempfile::tempdir().unwrap();
    let router = router(&options(&home)).unwrap();
    let big = format!(
        r#"{{"messages":[{{"role":"user","content":"{}"}}]}}"#,
        "x".repeat(4096)
    );
    let (status, _, body) = send(
        router.clone(),
        post("/v1/chat/completions", Some(KEY), big.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_openai_error(&body, "1024 bytes");
    // Streamed without a Content-Length: cut off at the limit while reading.
    let chunks = futures_util::stream::iter(
        (0..8).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b'x'; 512]))),
    );
    let request = post("/v1/responses", Some(KEY), Body::from_stream(chunks));
    let (status, _, body) = send(router, request).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
}

#[tokio::test]
async fn malformed_requests_get_openai_shaped_400s() {
    let home = tempfile::tempdir().unwrap();
    let router = router(&options(&home)).unwrap();
    let cases = [
        ("/v1/chat/completions", "{not json", "not valid JSON"),
        ("/v1/chat/completions", "[1,2]", "JSON object"),
        ("/v1/chat/completions", r#"{"model":"m"}"#, "'messages'"),
        (
            "/v1/chat/completions",
            r#"{"messages":[]}"#,
            "end with a user message",
        ),
        (
            "/v1/chat/completions",
            r#"{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}"#,
            "end with a user message",
        ),
        (
            "/v1/chat/completions",
            r#"{"messages":[{"content":"hi"}]}"#,
            "'role'",
        ),
        (
            "/v1/chat/completions",
            r#"{"messages":[{"role":"wizard","content":"hi"}]}"#,
            "unknown message role",
        ),
        (
            "/v1/chat/completions",
            r#"{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}"#,
            "not supported",
        ),
        (
            "/v1/chat/completions",
            r#"{"messages":[{"role":"user","content":42}]}"#,
            "'content'",
        ),
        (
            "/v1/chat/completions",
            r#"{"messages":[{"role":"user","content":"hi"}],"stream":"yes"}"#,
            "'stream'",
        ),
        ("/v1/responses", r#"{"input":7}"#, "'input'"),
        (
            "/v1/responses",
            r#"{"input":"hi","previous_response_id":3}"#,
            "previous_response_id",
        ),
    ];
    for (path, body, needle) in cases {
        let (status, _, reply) = send(router.clone(), post(path, Some(KEY), body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {reply}");
        assert_openai_error(&reply, needle);
    }
    let (status, _, reply) = send(
        router.clone(),
        post(
            "/v1/responses",
            Some(KEY),
            r#"{"input":"hi","previous_response_id":"resp_nope"}"#,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_openai_error(&reply, "resp_nope");
    let unknown = Request::get("/v2/whatever").body(Body::empty()).unwrap();
    assert_eq!(send(router, unknown).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn runs_beyond_the_cap_get_429_with_retry_after() {
    let home = tempfile::tempdir().unwrap();
    let options = options(&home);
    let state = state(&options).unwrap();
    let router = routes(state.clone(), &[]).unwrap();
    // Both slots taken, as two runs in progress would.
    let _held = state.runs.clone().acquire_many_owned(2).await.unwrap();
    let (status, headers, body) = send(router, post("/v1/chat/completions", Some(KEY), CHAT)).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers.get("retry-after").unwrap(), "1");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
}

#[tokio::test]
async fn a_request_without_a_model_fails_with_a_clear_500_not_a_panic() {
    let home = tempfile::tempdir().unwrap();
    let router = router(&options(&home)).unwrap();
    let (status, _, body) = send(router, post("/v1/chat/completions", Some(KEY), CHAT)).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_openai_error(&body, "");
}

#[tokio::test]
async fn cors_headers_only_for_listed_origins() {
    let home = tempfile::tempdir().unwrap();
    let preflight = |origin: &str| {
        Request::options("/v1/chat/completions")
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .body(Body::empty())
            .unwrap()
    };
    let closed = router(&options(&home)).unwrap();
    let (_, headers, _) = send(closed, preflight("https://app.example")).await;
    assert!(headers.get("access-control-allow-origin").is_none());
    let open = router(&ServeOptions {
        cors_origins: vec!["https://app.example".into()],
        ..options(&home)
    })
    .unwrap();
    let (_, headers, _) = send(open.clone(), preflight("https://app.example")).await;
    assert_eq!(
        headers.get("access-control-allow-origin").unwrap(),
        "https://app.example"
    );
    let (_, headers, _) = send(open, preflight("https://evil.example")).await;
    assert!(headers.get("access-control-allow-origin").is_none());
}

#[test]
fn approvals_are_off_outside_a_sandbox_and_yolo_never_applies() {
    use talaria_profile::config::ApprovalMode;
    let home = tempfile::tempdir().unwrap();
    let model = "model:\n  provider: openai\n  name: m\n  base_url: http://127.0.0.1:9/v1\n  api_key: sk-x\n";
    let settings = |extra: &str| {
        std::fs::write(home.path().join("config.yaml"), format!("{model}{extra}")).unwrap();
        let runner = runner::Runner::new(
            ProfileHome::at(home.path()),
            Overrides::default(),
            home.path().to_path_buf(),
        );
        runner.settings().unwrap()
    };
    let local = settings("approvals:\n  mode: yolo\n");
    assert_eq!(local.config.approvals.mode, ApprovalMode::Deny);
    assert!(!local.yolo);
    // In a sandbox the configured rules apply (the approver still denies every question).
    let sandboxed = settings("terminal:\n  backend: bwrap\napprovals:\n  mode: ask\n");
    assert_eq!(sandboxed.config.approvals.mode, ApprovalMode::Ask);
}
