#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Value, json};
use talaria_plugin_sdk::HostError;

use super::*;
use crate::api::{ApiRequest, ApiResponse};

/// Answers with queued responses (then 200 `[]`), recording requests; shared
/// by its clones.
#[derive(Clone, Default)]
struct Scripted {
    answers: Rc<RefCell<Vec<Result<ApiResponse, HostError>>>>,
    sent: Rc<RefCell<Vec<ApiRequest>>>,
}

impl Scripted {
    fn answer(&self, status: u16, body: &str) {
        self.answers.borrow_mut().push(Ok(ApiResponse {
            status,
            body: body.into(),
        }));
    }

    fn sent(&self) -> Vec<ApiRequest> {
        self.sent.borrow().clone()
    }

    fn bodies(&self) -> Vec<Value> {
        self.sent().into_iter().filter_map(|r| r.body).collect()
    }
}

impl Transport for Scripted {
    fn send(&self, request: &ApiRequest) -> Result<ApiResponse, HostError> {
        self.sent.borrow_mut().push(request.clone());
        let mut answers = self.answers.borrow_mut();
        if answers.is_empty() {
            return Ok(ApiResponse {
                status: 200,
                body: "[]".into(),
            });
        }
        answers.remove(0)
    }
}

fn settings() -> Settings {
    Settings {
        base_url: "http://mem0.test".into(),
        user_id: "ada".into(),
        agent_id: "talaria".into(),
        recall_limit: 2,
    }
}

fn open(transport: &Scripted, kind: SessionKind) -> Mem0 {
    let scope = MemoryScope {
        session_id: "s-7".into(),
        kind,
        platform: "cli".into(),
        profile: "default".into(),
        user_id: None,
        parent_session: None,
        model: "m".into(),
    };
    Mem0::open(Box::new(transport.clone()), settings(), &scope)
}

fn message(role: Role, content: &str) -> Message {
    Message {
        role,
        content: content.into(),
        tool_call_id: None,
        name: None,
    }
}

#[test]
fn prefetch_searches_and_lists_the_memories_found() {
    let transport = Scripted::default();
    transport.answer(
        200,
        r#"[{"id": "a", "memory": "Lives in Lisbon", "score": 0.9},
            {"id": "b", "memory": "Likes\ntea"}, {"id": "c", "memory": "Third"}]"#,
    );
    let provider = open(&transport, SessionKind::Primary);
    assert_eq!(
        provider.recall_for("where do I live?").unwrap(),
        "Memories from mem0 that may bear on this message:\n- Lives in Lisbon\n- Likes tea"
    );
    assert_eq!(
        transport.bodies(),
        [json!({"query": "where do I live?", "user_id": "ada", "limit": 2})]
    );
    // Nothing found: nothing recalled.
    assert_eq!(provider.recall_for("anything else").unwrap(), "");
}

#[test]
fn an_empty_query_or_a_zero_limit_asks_nothing() {
    let transport = Scripted::default();
    let provider = open(&transport, SessionKind::Primary);
    assert_eq!(provider.recall_for("  ").unwrap(), "");
    let mut quiet = open(&transport, SessionKind::Primary);
    quiet.settings.recall_limit = 0;
    assert_eq!(quiet.recall_for("hello").unwrap(), "");
    assert!(transport.sent().is_empty());
}

#[test]
fn errors_become_clear_messages() {
    let transport = Scripted::default();
    transport.answer(401, r#"{"detail": "Invalid API key"}"#);
    transport
        .answers
        .borrow_mut()
        .push(Err(HostError::Denied("private address".into())));
    let provider = open(&transport, SessionKind::Primary);
    let error = provider.recall_for("hello").unwrap_err();
    assert!(
        error.contains("401") && error.contains("Invalid API key"),
        "{error}"
    );
    let error = provider
        .learn_from_turn(&[message(Role::User, "hi")])
        .unwrap_err();
    assert!(
        error.contains("denied") && error.contains("private address"),
        "{error}"
    );
}

#[test]
fn a_turn_is_sent_without_tool_messages_and_empty_content() {
    let transport = Scripted::default();
    let provider = open(&transport, SessionKind::Primary);
    let turn = [
        message(Role::User, "I moved to Lisbon"),
        message(Role::Assistant, ""),
        message(Role::Tool, "{\"ok\": true}"),
        message(Role::Assistant, "Welcome to Lisbon!"),
    ];
    provider.learn_from_turn(&turn).unwrap();
    let sent = transport.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].method, sent[0].url.as_str()),
        ("POST", "http://mem0.test/v1/memories/")
    );
    assert_eq!(
        sent[0].body,
        Some(json!({
            "messages": [
                {"role": "user", "content": "I moved to Lisbon"},
                {"role": "assistant", "content": "Welcome to Lisbon!"}
            ],
            "user_id": "ada",
            "agent_id": "talaria",
            "metadata": {"source": "conversation", "session_id": "s-7"}
        }))
    );
    provider
        .learn_from_turn(&[message(Role::Tool, "only tools")])
        .unwrap();
    assert_eq!(transport.sent().len(), 1);
}

#[test]
fn memory_tool_writes_are_sent_as_the_users_message() {
    let transport = Scripted::default();
    let provider = open(&transport, SessionKind::Primary);
    provider
        .mirror_memory_write("add", "user", "Name: Ada")
        .unwrap();
    provider
        .mirror_memory_write("remove", "user", "Name: Ada")
        .unwrap();
    provider
        .mirror_memory_write("replace", "memory", " ")
        .unwrap();
    assert_eq!(
        transport.bodies(),
        [json!({
            "messages": [{"role": "user", "content": "Name: Ada"}],
            "user_id": "ada",
            "agent_id": "talaria",
            "metadata": {"source": "memory-tool", "target": "user"}
        })]
    );
}

#[test]
fn delegated_and_scheduled_sessions_only_recall() {
    for kind in [SessionKind::SubAgent, SessionKind::Cron] {
        let transport = Scripted::default();
        let provider = open(&transport, kind);
        provider
            .learn_from_turn(&[message(Role::User, "hi")])
            .unwrap();
        provider.mirror_memory_write("add", "user", "x").unwrap();
        assert!(transport.sent().is_empty());
        provider.recall_for("hi").unwrap();
        assert_eq!(transport.sent().len(), 1);
    }
}
