//! Replays on the gateway's webhook listener, from outside: a validly signed body posted again
//! with a new delivery id, or none, runs nothing and gets a clear answer, also after a restart;
//! a route whose bodies legitimately repeat (`deduplicate: false`) runs each.

use std::time::Duration;

use talaria_testkit::{Script, ScriptedServer, Step};

use crate::common::*;
use crate::gateway::{free_port, spawn_gateway};

const SECRET: &[u8] = b"hook-secret";

/// A signed POST to `/hooks/<route>`: GitHub's headers on `github`, an HMAC header on the
/// others; `delivery` as the id when given. Status and body.
fn post(port: u16, route: &str, delivery: Option<&str>, body: &[u8]) -> (u16, String) {
    let signature = talaria_gateway::webhook::sign(SECRET, body);
    let mut headers = if route == "github" {
        vec![
            ("X-GitHub-Event", "issue_comment"),
            ("X-Hub-Signature-256", signature.as_str()),
        ]
    } else {
        vec![("X-Alert-Signature", signature.as_str())]
    };
    if let Some(id) = delivery {
        headers.push(("X-GitHub-Delivery", id));
    }
    let (status, _, reply) = http_request(port, "POST", &format!("/hooks/{route}"), &headers, body);
    (status, reply)
}

/// Sessions of `route` with a whole turn in them.
fn finished_turns(home: &Home, route: &str) -> usize {
    let listed = stdout(&run(home.talaria(&["sessions", "list"])));
    listed
        .lines()
        .filter(|line| line.contains(&format!("webhook:{route}")) && line.contains(" 2 msgs"))
        .count()
}

fn start(home: &Home, model: &ScriptedServer, port: u16) -> std::process::Child {
    let gateway = spawn_gateway(home, model, &[]);
    wait_until("the webhook listener", Duration::from_secs(60), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    gateway
}

fn stop(home: &Home, gateway: std::process::Child) {
    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_replayed_signed_body_runs_the_agent_once_and_a_repeating_route_runs_each() {
    let model = ScriptedServer::spawn(Script::new([
        Step::text("one comment, nothing urgent"),
        Step::text("disk alert noted"),
        Step::text("disk alert noted again"),
    ]))
    .unwrap();
    let port = free_port();
    let home = Home::new();
    home.write_config(&format!(
        "gateway:\n  webhook:\n    port: {port}\n    routes:\n      github:\n        \
         secret: hook-secret\n        events: [issue_comment]\n      alerts:\n        \
         secret: hook-secret\n        signature: hmac\n        header: X-Alert-Signature\n        \
         deduplicate: false\n"
    ));
    let gateway = start(&home, &model, port);

    let comment = serde_json::json!({
        "action": "created",
        "issue": {"number": 7, "title": "Crash on start"},
        "comment": {"body": "The build is red on main", "user": {"login": "ann"}},
    })
    .to_string();
    let body = comment.as_bytes();
    let (status, reply) = post(port, "github", Some("d-0"), body);
    assert_eq!(status, 202, "{reply}");

    // The same signed body, 80 times: with new delivery ids, the first id again, none at all.
    for n in 1..=80 {
        let id = format!("d-{n}");
        let delivery = match n % 3 {
            0 => None,
            1 => Some(id.as_str()),
            _ => Some("d-0"),
        };
        let (status, reply) = post(port, "github", delivery, body);
        assert_eq!(status, 200, "replay {n} ({delivery:?}): {reply}");
        assert_contains(&reply, "took this delivery before");
    }

    // A route whose bodies legitimately repeat runs the same body twice.
    let alert = br#"{"message": "disk 91% full on build-2"}"#;
    for _ in 0..2 {
        let (status, reply) = post(port, "alerts", None, alert);
        assert_eq!(status, 202, "{reply}");
    }
    wait_until("the three turns", Duration::from_secs(120), || {
        finished_turns(&home, "github") == 1 && finished_turns(&home, "alerts") == 2
    });
    assert_eq!(model.requests().len(), 3, "the replays ran nothing");

    // A restarted gateway still knows the body.
    stop(&home, gateway);
    let gateway = start(&home, &model, port);
    let (status, reply) = post(port, "github", Some("after-restart"), body);
    assert_eq!(status, 200, "{reply}");
    stop(&home, gateway);
    assert_eq!(model.requests().len(), 3);
}
