//! Every error body in `tests/fixtures/error_bodies.toml` (OpenAI, Anthropic, OpenRouter,
//! vLLM, llama.cpp, each with its source) goes through a real provider over HTTP and must
//! come out in its class, and each class must carry its recovery.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Deserialize;
use talaria_kernel::{CancellationToken, ModelError};
use talaria_providers::{ProviderConfig, ProviderKind, build};

use crate::common::{Conversation, MockServer, Recorder, Reply};

const FIXTURES: &str = include_str!("../fixtures/error_bodies.toml");

#[derive(Deserialize)]
struct Fixtures {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    server: String,
    source: String,
    wire: String,
    status: Option<u16>,
    #[serde(default)]
    headers: Vec<(String, String)>,
    body: Option<String>,
    sse: Option<String>,
    class: String,
    retry_after_ms: Option<u64>,
}

impl Case {
    fn reply(&self) -> Reply {
        if let Some(events) = &self.sse {
            return Reply::sse(events.trim_start(), 64);
        }
        let mut headers: Vec<(&str, &str)> = vec![("content-type", "application/json")];
        headers.extend(self.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        Reply::fixed(
            self.status.expect("an HTTP case has a status"),
            &headers,
            self.body.as_deref().expect("an HTTP case has a body"),
        )
    }
}

/// What the loop does with each class: (retried on the same route, may move to the next
/// key or fallback).
fn recovery(class: &str) -> (bool, bool) {
    match class {
        "auth" | "quota_exhausted" | "model_not_found" | "content_filtered" | "invalid_request" => {
            (false, true)
        }
        "rate_limited" | "overloaded" | "server_error" | "timeout" => (true, true),
        "context_overflow" | "output_budget_too_large" => (false, false),
        other => panic!("no recovery listed for class {other}"),
    }
}

async fn classify(case: &Case) -> ModelError {
    let server = MockServer::start(vec![case.reply()]).await;
    let kind: ProviderKind = case.wire.parse().unwrap();
    let config = ProviderConfig::new(&server.base_url)
        .with_api_key("key")
        .with_stream(case.sse.is_some());
    let conversation = Conversation::simple("hi");
    build(kind, config)
        .unwrap()
        .complete(
            conversation.request(),
            &Recorder::default(),
            &CancellationToken::new(),
        )
        .await
        .expect_err("every fixture is a failure")
}

#[tokio::test]
async fn real_error_bodies_get_their_class_and_recovery() {
    let fixtures: Fixtures = toml::from_str(FIXTURES).unwrap();
    let mut failures = Vec::new();
    let mut classes_by_server: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for case in &fixtures.case {
        assert!(!case.source.trim().is_empty(), "{}: no source", case.server);
        let error = classify(case).await;
        if error.class() != case.class {
            failures.push(format!(
                "{} ({}): expected {}, got {} = {error:?}",
                case.server,
                case.source,
                case.class,
                error.class()
            ));
            continue;
        }
        if let Some(ms) = case.retry_after_ms {
            assert_eq!(
                error.retry_after(),
                Some(Duration::from_millis(ms)),
                "{}",
                case.source
            );
        }
        let (retried, falls_back) = recovery(&case.class);
        assert_eq!(error.is_retryable(), retried, "{}", case.source);
        assert_eq!(error.may_fall_back(), falls_back, "{}", case.source);
        classes_by_server
            .entry(case.server.clone())
            .or_default()
            .insert(case.class.clone());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Each of the five servers is covered, with its main failure modes.
    for server in ["openai", "anthropic", "openrouter", "vllm", "llama.cpp"] {
        let classes = &classes_by_server[server];
        assert!(classes.len() >= 4, "{server}: only {classes:?}");
    }
    let all: BTreeSet<&String> = classes_by_server.values().flatten().collect();
    for class in [
        "auth",
        "quota_exhausted",
        "rate_limited",
        "overloaded",
        "server_error",
        "timeout",
        "context_overflow",
        "output_budget_too_large",
        "model_not_found",
        "content_filtered",
        "invalid_request",
    ] {
        assert!(
            all.contains(&class.to_owned()),
            "no fixture of class {class}"
        );
    }
}
