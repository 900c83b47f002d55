//! Shared by the integration tests: a fresh database and sample messages.

#![allow(dead_code)]

use std::path::PathBuf;

use talaria_kernel::{Message, ToolCall, ToolResult};
use talaria_store::{NewSession, SessionDb};
use tempfile::TempDir;

/// A database in its own temporary directory (removed on drop).
pub struct TestDb {
    pub db: SessionDb,
    pub path: PathBuf,
    _dir: TempDir,
}

pub fn test_db() -> TestDb {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/sessions.sqlite");
    let db = SessionDb::open(&path).unwrap();
    TestDb {
        db,
        path,
        _dir: dir,
    }
}

pub fn new_session(id: &str, cwd: &str) -> NewSession {
    NewSession {
        id: id.into(),
        title: None,
        source: "cli".into(),
        model: "test-model".into(),
        cwd: Some(cwd.into()),
        parent_session_id: None,
        principal: talaria_store::Principal::owner(),
    }
}

pub fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

/// One message of every kind: user, assistant with reasoning and two tool
/// calls, a result, an error result, a final answer, a system note.
pub fn every_kind() -> Vec<Message> {
    let calls = vec![
        call("call_1", "read_file", r#"{"path":"src/lib.rs"}"#),
        call("call_2", "terminal", r#"{"command":"cargo test"#),
    ];
    vec![
        // Images by reference: a file of the profile's image store and a URL.
        Message::user_with_images(
            "Please fix the failing test in src/lib.rs",
            vec![
                talaria_kernel::ImageRef::File {
                    path: "/home/u/.talaria/images/0a1b.png".into(),
                    media_type: "image/png".into(),
                },
                talaria_kernel::ImageRef::Url {
                    url: "https://example.com/failure.jpg".into(),
                },
            ],
        ),
        Message {
            reasoning: Some("Read the file first, then run the tests.".into()),
            tool_calls: calls.clone(),
            // The Responses wire's reasoning items, kept verbatim for the next request.
            provider_state: Some(talaria_kernel::ProviderState {
                wire: "openai-responses".into(),
                data: serde_json::json!({"reasoning": [{
                    "type": "reasoning", "id": "rs_1", "summary": [],
                    "encrypted_content": "gAAAAB-opaque"
                }]}),
            }),
            ..Message::assistant("Let me look.")
        },
        Message::tool_result(&ToolResult::ok(&calls[0], "pub fn add() {}")),
        Message::tool_result(&ToolResult::error(&calls[1], "invalid JSON arguments")),
        Message::assistant("The test is fixed."),
        Message {
            role: talaria_kernel::Role::System,
            content: "note: context was compressed".into(),
            ..Message::default()
        },
    ]
}
