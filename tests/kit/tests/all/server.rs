//! Server behaviour: recording, script order, options, lifecycle, and the standalone binary.
// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{anthropic_body, openai_body, post, post_blocking, send_raw};
use serde_json::json;
use talaria_testkit::{Script, ScriptedServer, ServerOptions, Step, Wire, read_jsonl};

#[test]
fn spawned_server_records_both_wires_in_order() {
    let server = ScriptedServer::spawn(vec![Step::text("one"), Step::text("two")]).unwrap();
    assert_eq!(server.base_url(), format!("http://{}", server.addr()));
    assert_eq!(
        server.openai_base_url(),
        format!("{}/v1", server.base_url())
    );
    assert_eq!(server.anthropic_base_url(), server.base_url());
    assert_eq!(server.remaining_steps(), 2);

    let r = post_blocking(server.addr(), "/v1/messages", &anthropic_body(true));
    assert_eq!(server.remaining_steps(), 1);
    assert!(r.text().contains("\"text\":\"one\""));
    let r = post_blocking(server.addr(), "/v1/chat/completions", &openai_body(false));
    assert_eq!(r.json()["choices"][0]["message"]["content"], "two");
    assert_eq!(server.remaining_steps(), 0);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let (a, o) = (&requests[0], &requests[1]);
    assert_eq!((a.index, a.wire, a.stream), (0, Wire::Anthropic, true));
    assert_eq!((o.index, o.wire, o.stream), (1, Wire::OpenAi, false));
    assert_eq!(a.method, "POST");
    assert_eq!(a.path, "/v1/messages");
    assert_eq!(a.model(), Some("claude-test"));
    assert_eq!(o.header("authorization"), Some("Bearer test-key"));
    assert_eq!(a.body, anthropic_body(true));
    assert_eq!(a.raw_body, anthropic_body(true).to_string());
    assert_eq!(a.system_prompt_raw(), r#""You are a test.""#);
    assert_eq!(
        o.system_prompt_raw(),
        openai_body(false)["messages"][0].to_string()
    );
}

#[test]
fn dropping_the_handle_stops_the_server() {
    let server = ScriptedServer::spawn(Script::default()).unwrap();
    let addr = server.addr();
    drop(server);
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[tokio::test]
async fn unknown_routes_and_methods_consume_no_step() {
    let s = ScriptedServer::start(Script::new([Step::text("kept")]), ServerOptions::default())
        .await
        .unwrap();
    let r = post(s.addr(), "/v1/completions", &json!({})).await;
    assert_eq!(r.status, 404);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/completions")
    );
    let r = send_raw(
        s.addr(),
        b"GET /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(r.status, 405);
    let r = send_raw(s.addr(), b"POST\r\n\r\n", Duration::from_secs(5)).await;
    assert_eq!(r.status, 400);
    assert_eq!(s.remaining_steps(), 1);
    assert!(s.requests().is_empty());
}

/// Reads one response whose body has a Content-Length, leaving the connection open.
async fn read_sized_response(stream: &mut tokio::net::TcpStream) -> (String, Vec<u8>) {
    use tokio::io::AsyncReadExt;
    let mut raw = Vec::new();
    let mut byte = [0; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "closed mid-head");
        raw.push(byte[0]);
    }
    let head = String::from_utf8(raw).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.unwrap();
    (head, body)
}

#[tokio::test]
async fn a_connection_carries_requests_until_the_client_closes_it() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let steps = [Step::text("one"), Step::text("two"), Step::text("three")];
    let s = ScriptedServer::start(Script::new(steps), ServerOptions::default())
        .await
        .unwrap();
    let body = openai_body(false).to_string();
    let request = |close: &str| {
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{close}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let mut stream = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
    stream.write_all(request("").as_bytes()).await.unwrap();
    let (head, first) = read_sized_response(&mut stream).await;
    assert!(head.contains("Connection: keep-alive"), "{head}");
    assert!(String::from_utf8_lossy(&first).contains("\"one\""));

    stream
        .write_all(request("Connection: close\r\n").as_bytes())
        .await
        .unwrap();
    let (head, second) = read_sized_response(&mut stream).await;
    assert!(head.contains("Connection: close"), "{head}");
    assert!(String::from_utf8_lossy(&second).contains("\"two\""));
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty(), "the server closed after the last response");

    post(s.addr(), "/v1/chat/completions", &openai_body(false)).await;
    let connections: Vec<u64> = s.requests().iter().map(|r| r.connection).collect();
    assert_eq!(connections, [1, 1, 2]);
}

#[tokio::test]
async fn non_json_bodies_are_recorded_as_null() {
    let s = ScriptedServer::start(Script::new([Step::text("ok")]), ServerOptions::default())
        .await
        .unwrap();
    let r = send_raw(
        s.addr(),
        b"POST /v1/chat/completions HTTP/1.0\r\nContent-Length: 3\r\n\r\n{x}",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(r.status, 200);
    let recorded = &s.requests()[0];
    assert!(recorded.body.is_null());
    assert_eq!(recorded.raw_body, "{x}");
    assert!(!recorded.stream);
}

#[tokio::test]
async fn delay_push_and_loop() {
    let options = ServerOptions {
        loop_script: true,
        ..ServerOptions::default()
    };
    let s = ScriptedServer::start(Script::new([Step::text("a").delayed(300)]), options)
        .await
        .unwrap();
    let started = Instant::now();
    post(s.addr(), "/v1/messages", &anthropic_body(false)).await;
    assert!(started.elapsed() >= Duration::from_millis(300));

    s.push(Step::text("b"));
    assert_eq!(s.remaining_steps(), 1);
    let texts: Vec<String> = texts_of_requests(&s, 3).await;
    assert_eq!(texts, ["b", "a", "b"]);
}

/// Plays `n` non-streaming Anthropic requests one after another, returning their texts.
async fn texts_of_requests(s: &ScriptedServer, n: usize) -> Vec<String> {
    let mut texts = Vec::new();
    for _ in 0..n {
        let b = post(s.addr(), "/v1/messages", &anthropic_body(false))
            .await
            .json();
        texts.push(b["content"][0]["text"].as_str().unwrap().to_owned());
    }
    texts
}

#[tokio::test]
async fn concurrent_requests_each_get_their_own_step() {
    let steps: Vec<Step> = (0..6).map(|i| Step::text(format!("step {i}"))).collect();
    let s = ScriptedServer::start(Script::new(steps), ServerOptions::default())
        .await
        .unwrap();
    let addr = s.addr();
    let clients: Vec<_> = (0..6)
        .map(|_| {
            tokio::spawn(
                async move { post(addr, "/v1/chat/completions", &openai_body(true)).await },
            )
        })
        .collect();
    let mut texts = Vec::new();
    for client in clients {
        let r = client.await.unwrap();
        assert!(r.complete);
        let text: String = r
            .sse_json()
            .iter()
            .filter_map(|c| {
                c["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        texts.push(text);
    }
    texts.sort();
    assert_eq!(
        texts,
        (0..6).map(|i| format!("step {i}")).collect::<Vec<_>>()
    );
    let mut indices: Vec<usize> = s.requests().iter().map(|r| r.index).collect();
    indices.sort_unstable();
    assert_eq!(indices, [0, 1, 2, 3, 4, 5]);
}

#[tokio::test]
async fn records_to_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("requests.jsonl");
    let options = ServerOptions {
        record_path: Some(path.clone()),
        ..ServerOptions::default()
    };
    let s = ScriptedServer::start(Script::new([Step::text("a")]), options)
        .await
        .unwrap();
    post(s.addr(), "/v1/chat/completions", &openai_body(false)).await;
    post(s.addr(), "/v1/messages", &anthropic_body(false)).await;
    assert_eq!(read_jsonl(&path).unwrap(), s.requests());
}

#[test]
fn standalone_binary_serves_a_script_file() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let record = dir.path().join("requests.jsonl");
    std::fs::write(
        &script,
        r#"[
            {"kind": "tool_calls", "calls": [{"id": "call_1", "name": "ls", "arguments": {"dir": "."}}]},
            {"kind": "text", "text": "done"}
        ]"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_talaria-scripted-server"))
        .arg("--script")
        .arg(&script)
        .arg("--record")
        .arg(&record)
        .args(["--chunk-size", "4", "--crlf", "--loop"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap()
        .to_owned();
    let addr = url.parse().unwrap();

    let r = post_blocking(addr, "/v1/chat/completions", &openai_body(true));
    assert!(r.complete);
    assert!(r.chunks.iter().all(|&n| n <= 4));
    assert!(r.text().contains("\r\n\r\n"));
    let args: String = r
        .sse_json()
        .iter()
        .filter_map(|c| {
            c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(args, r#"{"dir":"."}"#);
    post_blocking(addr, "/v1/messages", &anthropic_body(false));
    // --loop: the script starts over.
    let r = post_blocking(addr, "/v1/messages", &anthropic_body(false));
    assert_eq!(r.json()["content"][0]["id"], "call_1");

    child.kill().unwrap();
    child.wait().unwrap();
    let recorded = read_jsonl(&record).unwrap();
    assert_eq!(recorded.len(), 3);
    assert_eq!(recorded[0].wire, Wire::OpenAi);
    assert_eq!(recorded[2].wire, Wire::Anthropic);
}

#[test]
fn standalone_binary_rejects_a_bad_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"[{"kind": "txt"}]"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_talaria-scripted-server"))
        .arg("--script")
        .arg(&script)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid script JSON"));
}
