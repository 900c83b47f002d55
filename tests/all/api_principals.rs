//! One API server, several clients (issue 47): each named key of `api_server.keys` is a
//! principal of its own. A client never continues, names or chains onto another's session,
//! a session id of someone else's is answered exactly like one that does not exist, and no
//! error lists session ids; the owner's key reaches every session.

use serde_json::{Value, json};
use talaria_testkit::{Script, ScriptedServer, Step};

use crate::api_server::{serve_command, spawn_served, user};
use crate::common::*;

const ALICE: &str = "alice-key-0123456789abcdef";
const BOB: &str = "bob-key-0123456789abcdefgh";
const OWNER: &str = "test-key-0123456789abcdef";
const SECRET: &str = "alice-secret-777";

/// POSTs `body` to `path` with `key` and `extra` headers: (status, head, body).
fn post(
    port: u16,
    path: &str,
    key: &str,
    extra: &[(&str, &str)],
    body: &Value,
) -> (u16, String, String) {
    let bearer = format!("Bearer {key}");
    let mut headers = vec![("Authorization", bearer.as_str())];
    headers.extend_from_slice(extra);
    http_request(port, "POST", path, &headers, body.to_string().as_bytes())
}

fn session_of(head: &str) -> String {
    head.lines()
        .find_map(|l| l.strip_prefix("x-talaria-session-id: "))
        .unwrap_or_else(|| panic!("no session header: {head}"))
        .trim()
        .to_owned()
}

#[test]
fn api_clients_with_their_own_keys_never_reach_each_others_sessions() {
    let home = Home::new();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\napi_server:\n  keys:\n    \
         - {{name: alice, key: {ALICE}}}\n    - {{name: bob, key: {BOB}}}\n"
    ));
    let model = ScriptedServer::spawn(Script::new(
        (1..=6).map(|i| Step::text(format!("answer {i}"))),
    ))
    .unwrap();
    let served = spawn_served(serve_command(&home, &model, &[]));
    let port = served.port;
    let chat = |messages: Value| json!({"model": "talaria", "messages": messages});

    let opening = json!([user(&format!("remember: {SECRET}"))]);
    let (status, head, body) = post(port, "/v1/chat/completions", ALICE, &[], &chat(opening));
    assert_eq!(status, 200, "{body}");
    let alices = session_of(&head);

    // Bob resends Alice's conversation word for word: a session of his own, not hers and
    // not forked from hers.
    let resent = json!([
        user(&format!("remember: {SECRET}")),
        {"role": "assistant", "content": "answer 1"},
        user("what was it?")
    ]);
    let (status, head, body) = post(port, "/v1/chat/completions", BOB, &[], &chat(resent));
    assert_eq!(status, 200, "{body}");
    let bobs = session_of(&head);
    assert_ne!(bobs, alices);
    let exported = stdout(&run(home.talaria(&["session", "export", &bobs])));
    assert!(!exported.contains(&alices), "{exported}");

    // Naming her session: answered like a session that does not exist, no ids listed.
    let named = chat(json!([user("continue")]));
    let hers = post(
        port,
        "/v1/chat/completions",
        BOB,
        &[("X-Talaria-Session-Id", &alices)],
        &named,
    );
    let nobodys = post(
        port,
        "/v1/chat/completions",
        BOB,
        &[("X-Talaria-Session-Id", "1999999999_zzzzzz")],
        &named,
    );
    assert_ne!(hers.0, 200, "{}", hers.2);
    assert_eq!(hers.0, nobodys.0);
    assert_eq!(
        hers.2.replace(&alices, "ID"),
        nobodys.2.replace("1999999999_zzzzzz", "ID")
    );
    // A prefix of her id that his does not share matches nothing of his, and says nothing
    // of hers.
    let differs = alices
        .char_indices()
        .find(|(at, _)| !bobs[..].starts_with(&alices[..=*at]))
        .map_or(alices.len(), |(at, _)| at + 1);
    let prefix = &alices[..differs];
    let (status, _, body) = post(
        port,
        "/v1/chat/completions",
        BOB,
        &[("X-Talaria-Session-Id", prefix)],
        &named,
    );
    assert_eq!(status, nobodys.0, "{body}");
    assert!(!body.contains(&alices), "{body}");

    // Chaining onto her stored response is refused the same way.
    let (status, _, body) = post(
        port,
        "/v1/responses",
        ALICE,
        &[],
        &json!({"model": "talaria", "input": "note this"}),
    );
    assert_eq!(status, 200, "{body}");
    let response: Value = serde_json::from_str(&body).unwrap();
    let response_id = response["id"].as_str().unwrap().to_owned();
    let (status, _, body) = post(
        port,
        "/v1/responses",
        BOB,
        &[],
        &json!({"model": "talaria", "input": "and?", "previous_response_id": response_id}),
    );
    assert_ne!(status, 200, "{body}");
    assert!(!body.contains(&alices), "{body}");

    // Nothing of Alice's reached a model call made for Bob.
    for request in model.requests().iter().skip(1) {
        let sent = format!("{:?}", request.messages());
        if sent.contains("what was it?") {
            assert_eq!(
                sent.matches(SECRET).count(),
                1,
                "only the copy Bob sent himself: {sent}"
            );
        }
    }

    // The owner's key reaches her session.
    let (status, head, body) = post(
        port,
        "/v1/chat/completions",
        OWNER,
        &[("X-Talaria-Session-Id", &alices)],
        &named,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(session_of(&head), alices);
    drop(served);
}
