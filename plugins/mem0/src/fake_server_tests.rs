//! The provider against the test kit's fake mem0 server, over a small
//! blocking HTTP client that fills in the key as the host does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use talaria_plugin_sdk::http::secret;
use talaria_plugin_sdk::{HostError, MemoryScope, Message, Role, SessionKind};
use talaria_testkit::FakeMem0;

use crate::api::{API_KEY_SECRET, ApiRequest, ApiResponse, Transport};
use crate::provider::Mem0;
use crate::settings::Settings;

/// HTTP/1.1 to a loopback `http://` URL, one connection per request, the
/// secret placeholder replaced by `key`.
struct Loopback {
    key: String,
}

impl Transport for Loopback {
    fn send(&self, request: &ApiRequest) -> Result<ApiResponse, HostError> {
        let failed = |e: std::io::Error| HostError::Failed(e.to_string());
        let rest = request.url.strip_prefix("http://").unwrap();
        let (authority, path) = rest.split_at(rest.find('/').unwrap());
        let mut stream = TcpStream::connect(authority).map_err(failed)?;
        stream
            .set_read_timeout(Some(Duration::from_millis(request.timeout_ms)))
            .map_err(failed)?;
        let body = request
            .body
            .as_ref()
            .map(|b| b.to_string())
            .unwrap_or_default();
        let mut head = format!(
            "{} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n",
            request.method,
            body.len()
        );
        for (name, value) in &request.headers {
            let value = value.replace(&secret(API_KEY_SECRET), &self.key);
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).map_err(failed)?;
        stream.write_all(body.as_bytes()).map_err(failed)?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).map_err(failed)?;
        let text = String::from_utf8_lossy(&answer);
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        Ok(ApiResponse {
            status,
            body: body.to_owned(),
        })
    }
}

fn provider(fake: &FakeMem0, key: &str) -> Mem0 {
    let settings = Settings {
        base_url: fake.url(),
        user_id: "ada".into(),
        agent_id: "talaria".into(),
        recall_limit: 5,
    };
    let scope = MemoryScope {
        session_id: "s-1".into(),
        kind: SessionKind::Primary,
        platform: "cli".into(),
        profile: "default".into(),
        user_id: None,
        parent_session: None,
        model: "m".into(),
    };
    let transport = Loopback { key: key.into() };
    Mem0::open(Box::new(transport), settings, &scope)
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
fn a_synced_turn_is_recalled_later() {
    let fake = FakeMem0::spawn_with_key("k-1").unwrap();
    let provider = provider(&fake, "k-1");
    let turn = [
        message(Role::User, "I moved to Lisbon last month"),
        message(Role::Assistant, "Welcome to Lisbon!"),
    ];
    provider.learn_from_turn(&turn).unwrap();
    provider
        .mirror_memory_write("add", "user", "Prefers tea over coffee")
        .unwrap();
    let memories: Vec<String> = fake.memories().into_iter().map(|m| m.2).collect();
    assert_eq!(
        memories,
        ["I moved to Lisbon last month", "Prefers tea over coffee"]
    );
    assert_eq!(
        provider.recall_for("Is Lisbon nice in May?").unwrap(),
        "Memories from mem0 that may bear on this message:\n- I moved to Lisbon last month"
    );
    assert_eq!(provider.recall_for("quantum physics").unwrap(), "");
    let requests = fake.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.authorization.as_deref() == Some("Token k-1"))
    );
    assert_eq!(requests[1].body["metadata"]["source"], "memory-tool");
}

#[test]
fn a_wrong_key_is_reported_with_the_status() {
    let fake = FakeMem0::spawn_with_key("right").unwrap();
    let error = provider(&fake, "wrong").recall_for("hello").unwrap_err();
    assert!(
        error.contains("401") && error.contains("check MEM0_API_KEY"),
        "{error}"
    );
}
