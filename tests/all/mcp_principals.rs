//! MCP over HTTP with several clients (issue 47): a key of `mcp_serve.keys` is a principal of
//! its own, so one client's `list_sessions`, `search_sessions`, `read_session` and
//! `run_prompt` never reach another's sessions; the owner's key reaches them all.

use serde_json::json;
use talaria_testkit::{Script, ScriptedServer, Step};

use crate::common::*;
use crate::mcp_serve::{INIT, KEY, request, serve_http};

const CI: &str = "ci-key-0123456789abcdefgh";
const BOT: &str = "bot-key-0123456789abcdefg";
const SECRET: &str = "ci-secret-4242";

/// One client's MCP session over HTTP.
struct Client {
    port: u16,
    bearer: String,
    session: String,
    next_id: u64,
}

impl Client {
    fn connect(port: u16, key: &str) -> Self {
        let bearer = format!("Bearer {key}");
        let host = format!("127.0.0.1:{port}");
        let (status, reply) = request(port, &host, &[("Authorization", &bearer)], INIT.as_bytes());
        assert_eq!(status, 200, "{reply}");
        let session = reply
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no session id in {reply}"));
        let client = Self {
            port,
            bearer,
            session,
            next_id: 10,
        };
        let (status, reply) =
            client.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(status == 202 || status == 200, "{reply}");
        client
    }

    fn post(&self, body: &serde_json::Value) -> (u16, String) {
        let host = format!("127.0.0.1:{}", self.port);
        let headers = [
            ("Authorization", self.bearer.as_str()),
            ("mcp-session-id", self.session.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        request(self.port, &host, &headers, body.to_string().as_bytes())
    }

    /// Calls `tool` and returns the whole reply text.
    fn call(&mut self, tool: &str, arguments: serde_json::Value) -> String {
        self.next_id += 1;
        let (status, reply) = self.post(&json!({
            "jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }));
        assert_eq!(status, 200, "{reply}");
        reply
    }
}

/// The first `"session_id":"…"` in a reply (structured content or its text).
fn session_id_in(reply: &str) -> String {
    let unescaped = reply.replace("\\\"", "\"");
    let start = unescaped
        .find("\"session_id\":\"")
        .unwrap_or_else(|| panic!("no session id in {reply}"))
        + "\"session_id\":\"".len();
    let rest = &unescaped[start..];
    rest[..rest.find('"').unwrap_or(rest.len())].to_owned()
}

#[test]
fn mcp_clients_with_their_own_keys_see_only_their_own_sessions() {
    let home = crate::mcp_serve::fresh_home();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\nmcp_serve:\n  keys:\n    \
         - {{name: ci, key: {CI}}}\n    - {{name: bot, key: {BOT}}}\n"
    ));
    let model = ScriptedServer::spawn(Script::new([
        Step::text("noted"),
        Step::text("a second answer"),
    ]))
    .unwrap();
    let served = serve_http(&home, &model, &[]);

    let mut ci = Client::connect(served.port, CI);
    let reply = ci.call(
        "run_prompt",
        json!({"prompt": format!("remember {SECRET}")}),
    );
    assert_contains(&reply, "noted");
    let cis = session_id_in(&reply);
    assert_contains(&ci.call("list_sessions", json!({})), &cis);

    let mut bot = Client::connect(served.port, BOT);
    for (tool, arguments) in [
        ("list_sessions", json!({"limit": 50})),
        ("search_sessions", json!({"query": SECRET})),
    ] {
        let reply = bot.call(tool, arguments);
        assert!(!reply.contains(SECRET), "{tool}: {reply}");
        assert!(!reply.contains(&cis), "{tool}: {reply}");
    }
    // Named outright, CI's session is answered like one that does not exist.
    for (tool, arguments) in [
        ("read_session", json!({"session_id": cis})),
        ("run_prompt", json!({"prompt": "go on", "session_id": cis})),
    ] {
        let reply = bot.call(tool, arguments);
        assert!(!reply.contains(SECRET), "{tool}: {reply}");
        assert_contains(&reply, "no session matches");
        assert_contains(&reply, "\"isError\":true");
    }
    // Only CI's own run reached the model: the bot's continuation was refused.
    assert_eq!(model.requests().len(), 1);

    let mut owner = Client::connect(served.port, KEY);
    assert_contains(&owner.call("list_sessions", json!({})), &cis);
    assert_contains(
        &owner.call("read_session", json!({"session_id": cis})),
        SECRET,
    );
    drop(served);
}
