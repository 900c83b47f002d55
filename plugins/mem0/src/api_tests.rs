#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;

use super::*;

fn settings() -> Settings {
    Settings {
        base_url: "http://127.0.0.1:9999".into(),
        user_id: "ada lovelace".into(),
        agent_id: "talaria".into(),
        recall_limit: 5,
    }
}

/// Answers every request with one response (or error), recording requests.
struct Canned {
    answer: Result<ApiResponse, HostError>,
    sent: RefCell<Vec<ApiRequest>>,
}

impl Canned {
    fn new(status: u16, body: &str) -> Self {
        Self {
            answer: Ok(ApiResponse {
                status,
                body: body.into(),
            }),
            sent: RefCell::default(),
        }
    }
}

impl Transport for Canned {
    fn send(&self, request: &ApiRequest) -> Result<ApiResponse, HostError> {
        self.sent.borrow_mut().push(request.clone());
        self.answer.clone()
    }
}

#[test]
fn requests_carry_the_key_placeholder_and_json() {
    let said = [
        Said {
            role: "user",
            content: "I moved to Lisbon",
        },
        Said {
            role: "assistant",
            content: "Noted.",
        },
    ];
    let add = add(&settings(), &said, json!({"source": "conversation"}));
    assert_eq!(add.method, "POST");
    assert_eq!(add.url, "http://127.0.0.1:9999/v1/memories/");
    assert!(add.headers.contains(&(
        "authorization".into(),
        "Token {{secret:MEM0_API_KEY}}".into()
    )));
    assert_eq!(
        add.body,
        Some(json!({
            "messages": [
                {"role": "user", "content": "I moved to Lisbon"},
                {"role": "assistant", "content": "Noted."}
            ],
            "user_id": "ada lovelace",
            "agent_id": "talaria",
            "metadata": {"source": "conversation"}
        }))
    );

    let search = search(&settings(), "where do I live?", 3);
    assert_eq!(search.url, "http://127.0.0.1:9999/v1/memories/search/");
    assert_eq!(
        search.body,
        Some(json!({"query": "where do I live?", "user_id": "ada lovelace", "limit": 3}))
    );
    assert_eq!(search.timeout_ms, SEARCH_TIMEOUT_MS);
}

#[test]
fn list_and_delete_encode_what_they_put_in_the_url() {
    let list = list(&settings());
    assert_eq!(
        (list.method, list.url.as_str(), list.body.is_none()),
        (
            "GET",
            "http://127.0.0.1:9999/v1/memories/?user_id=ada%20lovelace",
            true
        )
    );
    let delete = delete(&settings(), "m/1?x");
    assert_eq!(delete.method, "DELETE");
    assert_eq!(delete.url, "http://127.0.0.1:9999/v1/memories/m%2F1%3Fx/");
}

#[test]
fn long_messages_are_cut() {
    let long = "é".repeat(MAX_MESSAGE_CHARS + 10);
    let said = [Said {
        role: "user",
        content: &long,
    }];
    let request = add(&settings(), &said, Value::Null);
    let sent = request.body.unwrap()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .chars()
        .count();
    assert_eq!(sent, MAX_MESSAGE_CHARS);
}

#[test]
fn search_answers_are_read_bare_or_wrapped() {
    let bare = r#"[{"id": "m1", "memory": "Lives in Lisbon", "score": 0.83, "user_id": "ada"},
                   {"id": "m2", "memory": "  "}, {"id": "m3"}]"#;
    assert_eq!(
        parse_memories(bare).unwrap(),
        [Memory {
            id: "m1".into(),
            text: "Lives in Lisbon".into(),
            score: Some(0.83)
        }]
    );
    let wrapped = r#"{"results": [{"id": 7, "memory": "Likes tea"}], "relations": []}"#;
    assert_eq!(
        parse_memories(wrapped).unwrap(),
        [Memory {
            id: "7".into(),
            text: "Likes tea".into(),
            score: None
        }]
    );
    assert_eq!(parse_memories("[]").unwrap(), []);
    assert!(parse_memories("<html>").unwrap_err().contains("not JSON"));
    assert!(parse_memories(r#"{"ok": true}"#).is_err());
}

#[test]
fn a_success_gives_the_body() {
    let transport = Canned::new(200, "[]");
    let request = search(&settings(), "q", 5);
    assert_eq!(call(&transport, &request).unwrap(), "[]");
    assert_eq!(transport.sent.borrow().len(), 1);
}

#[test]
fn an_error_status_names_the_status_and_the_services_message() {
    let request = search(&settings(), "q", 5);
    let error = call(
        &Canned::new(401, r#"{"detail": "Invalid API key"}"#),
        &request,
    )
    .unwrap_err();
    assert_eq!(
        error,
        "mem0 answered 401 to POST /v1/memories/search/: Invalid API key (check MEM0_API_KEY)"
    );
    let nested = r#"{"error": "400 Bad Request", "details": {"message": "Invalid input data"}}"#;
    let error = call(&Canned::new(400, nested), &request).unwrap_err();
    assert!(error.ends_with(": Invalid input data"), "{error}");
    let error = call(&Canned::new(502, "upstream down"), &request).unwrap_err();
    assert!(
        error.contains("502") && error.ends_with("upstream down"),
        "{error}"
    );
    let error = call(&Canned::new(500, ""), &request).unwrap_err();
    assert!(error.ends_with("no message"), "{error}");
}

#[test]
fn a_request_that_does_not_get_through_says_why() {
    let request = search(&settings(), "q", 5);
    let denied = Canned {
        answer: Err(HostError::Denied("not in the network grants".into())),
        sent: RefCell::default(),
    };
    let error = call(&denied, &request).unwrap_err();
    assert_eq!(
        error,
        "mem0 at http://127.0.0.1:9999 is not reachable: the host denied the request \
         (not in the network grants)"
    );
    let timed_out = Canned {
        answer: Err(HostError::Failed(
            "HTTP request to 127.0.0.1:9999: ConnectionTimeout".into(),
        )),
        sent: RefCell::default(),
    };
    let error = call(&timed_out, &request).unwrap_err();
    assert!(
        error.contains("not reachable") && error.contains("ConnectionTimeout"),
        "{error}"
    );
}

#[test]
fn natively_the_host_transport_fails_cleanly() {
    let error = call(&HostHttp, &search(&settings(), "q", 5)).unwrap_err();
    assert!(error.contains("not reachable"), "{error}");
}
