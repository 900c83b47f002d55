//! Error classification, idle timeouts and cancellation, for every provider.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::common::{Conversation, MockServer, Recorder, Reply};
use talaria_kernel::{CancellationToken, ModelError, ModelProvider, ModelResponse};
use talaria_providers::{ProviderConfig, ProviderKind, build};

const KINDS: [ProviderKind; 3] = [
    ProviderKind::OpenAi,
    ProviderKind::Anthropic,
    ProviderKind::OpenAiResponses,
];
const IDLE: Duration = Duration::from_millis(300);

fn provider(kind: ProviderKind, server: &MockServer) -> Arc<dyn ModelProvider> {
    let config = ProviderConfig::new(&server.base_url)
        .with_api_key("key")
        .with_idle_timeout(IDLE);
    build(kind, config).unwrap()
}

async fn call(kind: ProviderKind, server: &MockServer) -> Result<ModelResponse, ModelError> {
    let conversation = Conversation::simple("hi");
    provider(kind, server)
        .complete(
            conversation.request(),
            &Recorder::default(),
            &CancellationToken::new(),
        )
        .await
}

/// Runs one request per kind against its own server answering `reply()`.
async fn each_kind(reply: impl Fn(ProviderKind) -> Reply) -> Vec<(ProviderKind, ModelError)> {
    let mut out = Vec::new();
    for kind in KINDS {
        let server = MockServer::start(vec![reply(kind)]).await;
        out.push((kind, call(kind, &server).await.unwrap_err()));
    }
    out
}

/// The first SSE event of a normal stream, so the body has started.
fn first_event(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => {
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
        }
        ProviderKind::Anthropic => {
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n"
        }
        ProviderKind::OpenAiResponses => {
            "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n"
        }
    }
}

#[tokio::test]
async fn unauthorized_is_auth() {
    let errors = each_kind(|kind| match kind {
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => Reply::json(
            401,
            r#"{"error":{"message":"Incorrect API key provided: key.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        ),
        ProviderKind::Anthropic => Reply::json(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        ),
    })
    .await;
    assert_eq!(
        errors[0].1,
        ModelError::Auth {
            message: "Incorrect API key provided: key.".into()
        }
    );
    assert_eq!(
        errors[1].1,
        ModelError::Auth {
            message: "invalid x-api-key".into()
        }
    );
    assert_eq!(errors[2].1, errors[0].1, "the Responses API answers alike");
}

#[tokio::test]
async fn rate_limits_carry_retry_after_seconds_and_dates() {
    let body = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
    let errors = each_kind(|_| {
        Reply::fixed(
            429,
            &[("Content-Type", "application/json"), ("Retry-After", "17")],
            body,
        )
    })
    .await;
    for (kind, err) in errors {
        assert_eq!(
            err,
            ModelError::RateLimited {
                message: "Rate limit reached".into(),
                retry_after: Some(Duration::from_secs(17))
            },
            "{kind}"
        );
    }

    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
    let errors =
        each_kind(|_| Reply::fixed(429, &[("Retry-After", date.as_str())], "slow down")).await;
    for (kind, err) in errors {
        let ModelError::RateLimited {
            message,
            retry_after: Some(delay),
        } = err
        else {
            panic!("{kind}: {err:?}");
        };
        assert_eq!(message, "slow down");
        assert!(
            delay > Duration::from_secs(100) && delay <= Duration::from_secs(120),
            "{kind}: {delay:?}"
        );
    }
}

#[tokio::test]
async fn server_errors_and_overloaded() {
    let errors = each_kind(|_| {
        Reply::json(
            500,
            r#"{"error":{"message":"The server had an error","type":"server_error"}}"#,
        )
    })
    .await;
    for (kind, err) in errors {
        assert_eq!(
            err,
            ModelError::Server {
                status: 500,
                message: "The server had an error".into(),
                retry_after: None
            },
            "{kind}"
        );
        assert!(err.is_retryable());
    }
    let server = MockServer::start(vec![Reply::fixed(
        529,
        &[
            ("content-type", "application/json"),
            ("retry-after-ms", "1500"),
        ],
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    )])
    .await;
    let err = call(ProviderKind::Anthropic, &server).await.unwrap_err();
    assert_eq!(
        err,
        ModelError::Overloaded {
            status: 529,
            message: "Overloaded".into(),
            retry_after: Some(Duration::from_millis(1500))
        }
    );
}

#[tokio::test]
async fn context_overflow_bodies() {
    let errors = each_kind(|kind| match kind {
        ProviderKind::OpenAi => Reply::json(
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
        ProviderKind::Anthropic => Reply::json(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#,
        ),
        ProviderKind::OpenAiResponses => Reply::json(
            400,
            r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#,
        ),
    })
    .await;
    let ModelError::ContextOverflow { message } = &errors[0].1 else {
        panic!("{:?}", errors[0])
    };
    assert!(message.starts_with("This model's maximum context length"));
    assert_eq!(
        errors[1].1,
        ModelError::ContextOverflow {
            message: "prompt is too long: 208310 tokens > 200000 maximum".into()
        }
    );
    assert!(
        matches!(&errors[2].1, ModelError::ContextOverflow { message } if message.starts_with("Your input exceeds")),
        "{:?}",
        errors[2]
    );
    // The same status with another complaint is an invalid request.
    let errors =
        each_kind(|_| Reply::json(400, r#"{"error":{"message":"Invalid value for 'model'"}}"#))
            .await;
    for (kind, err) in errors {
        assert_eq!(
            err,
            ModelError::InvalidRequest {
                status: 400,
                message: "Invalid value for 'model'".into()
            },
            "{kind}"
        );
    }
}

#[tokio::test]
async fn stall_mid_stream_hits_the_idle_timeout() {
    for kind in KINDS {
        let reply = Reply::chunked("text/event-stream")
            .chunks(first_event(kind), 10)
            .hang();
        let server = MockServer::start(vec![reply]).await;
        let started = Instant::now();
        let err = call(kind, &server).await.unwrap_err();
        let elapsed = started.elapsed();
        assert_eq!(
            err,
            ModelError::Timeout {
                message: format!("no data from {kind} for 300ms")
            }
        );
        assert!(
            elapsed >= IDLE && elapsed < Duration::from_secs(3),
            "{kind}: {elapsed:?}"
        );
        assert!(
            server.wait_client_closed(Duration::from_secs(2)).await,
            "{kind}: connection left open"
        );
    }
}

#[tokio::test]
async fn silent_server_hits_the_idle_timeout_before_the_head() {
    for kind in KINDS {
        let server = MockServer::start(vec![Reply::silent()]).await;
        let started = Instant::now();
        let err = call(kind, &server).await.unwrap_err();
        assert!(
            matches!(&err, ModelError::Timeout { message } if message.contains("no data")),
            "{kind}: {err:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(3));
    }
}

#[tokio::test]
async fn slow_but_steady_stream_is_not_a_timeout() {
    // Gaps shorter than the idle timeout, total longer than it.
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n";
    let done = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let reply = Reply::chunked("text/event-stream")
        .chunks(body, 100)
        .sleep(Duration::from_millis(200))
        .chunks(body, 100)
        .sleep(Duration::from_millis(200))
        .chunks(done, 100)
        .end();
    let server = MockServer::start(vec![reply]).await;
    let response = call(ProviderKind::OpenAi, &server).await.unwrap();
    assert_eq!(response.message.content, "aa");
}

#[tokio::test]
async fn cancellation_mid_stream_returns_promptly_and_drops_the_connection() {
    for kind in KINDS {
        let reply = Reply::chunked("text/event-stream")
            .chunks(first_event(kind), 8)
            .hang();
        let server = MockServer::start(vec![reply]).await;
        let config =
            ProviderConfig::new(&server.base_url).with_idle_timeout(Duration::from_secs(30));
        let provider = build(kind, config).unwrap();
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            trigger.cancel();
        });
        let conversation = Conversation::simple("hi");
        let started = Instant::now();
        let err = provider
            .complete(conversation.request(), &Recorder::default(), &cancel)
            .await
            .unwrap_err();
        assert_eq!(err, ModelError::Cancelled, "{kind}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{kind}: {:?}",
            started.elapsed()
        );
        assert!(
            server.wait_client_closed(Duration::from_secs(2)).await,
            "{kind}: transfer not aborted"
        );
    }
}

#[tokio::test]
async fn cancellation_before_the_head_and_before_sending() {
    let server = MockServer::start(vec![Reply::silent(), Reply::silent()]).await;
    let provider = build(
        ProviderKind::OpenAi,
        ProviderConfig::new(&server.base_url).with_idle_timeout(Duration::from_secs(30)),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let conversation = Conversation::simple("hi");
    let started = Instant::now();
    let err = provider
        .complete(conversation.request(), &Recorder::default(), &cancel)
        .await
        .unwrap_err();
    assert_eq!(err, ModelError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(1));

    // Already cancelled: nothing is sent at all.
    let err = provider
        .complete(conversation.request(), &Recorder::default(), &cancel)
        .await
        .unwrap_err();
    assert_eq!(err, ModelError::Cancelled);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn refused_connection_is_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    for kind in KINDS {
        let provider = build(kind, ProviderConfig::new(format!("http://{address}"))).unwrap();
        let conversation = Conversation::simple("hi");
        let err = provider
            .complete(
                conversation.request(),
                &Recorder::default(),
                &CancellationToken::new(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ModelError::Connect { message } if message.starts_with(kind.as_str())),
            "{kind}: {err:?}"
        );
    }
}

/// An HTTP/1.1 server that keeps connections open: every request gets the
/// same small chat completion. Counts requests and connections.
fn keep_alive_server() -> (String, Arc<std::sync::Mutex<(usize, usize)>>) {
    use std::io::{BufRead, BufReader, Read, Write};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let counts = Arc::new(std::sync::Mutex::new((0, 0)));
    let seen = counts.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            seen.lock().unwrap().1 += 1;
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(value) = lower.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap();
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    seen.lock().unwrap().0 += 1;
                    let reply = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        reply.len()
                    );
                    if stream.write_all(head.as_bytes()).is_err()
                        || stream.write_all(reply.as_bytes()).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (url, counts)
}

/// Surfaces run each agent on a runtime of its own that ends with the run
/// (gateway turns, API requests); the shared client's pooled connection
/// must still work for the next run, on another runtime.
#[test]
fn a_pooled_connection_outlives_the_runtime_that_opened_it() {
    let (url, counts) = keep_alive_server();
    let one_run = |url: String| {
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let config = ProviderConfig::new(&url).with_api_key("key");
                let provider = build(ProviderKind::OpenAi, config).unwrap();
                let conversation = Conversation::simple("hi");
                provider
                    .complete(
                        conversation.request(),
                        &Recorder::default(),
                        &CancellationToken::new(),
                    )
                    .await
                    .map(|response| response.message.content)
            })
        })
        .join()
        .unwrap()
    };
    assert_eq!(one_run(url.clone()), Ok("hi".to_owned()));
    assert_eq!(one_run(url.clone()), Ok("hi".to_owned()));
    assert_eq!(
        *counts.lock().unwrap(),
        (2, 1),
        "two requests over one pooled connection"
    );
}
