//! `talaria serve`, black-box: the official openai Python SDK against the real
//! binary and the scripted model (chat, streaming, responses, models); hostile
//! HTTP clients; the history → session mapping (continue, fork, new chats
//! apart). The heavy group (`--ignored`): the Codex CLI as a provider client,
//! and a loopback load test printing a table. Peers: scripts/install-api-peers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talaria_testkit::{Script, ScriptedServer, Step};

use crate::common::*;

const KEY: &str = "test-key-0123456789abcdef";

fn fresh_home() -> Home {
    let home = Home {
        dir: tempfile::tempdir().unwrap(),
    };
    home.write_config("retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n");
    home
}

fn answers(n: usize) -> ScriptedServer {
    ScriptedServer::spawn(Script::new(
        (1..=n).map(|i| Step::text(format!("answer {i}"))),
    ))
    .unwrap()
}

/// A running `talaria serve --port 0`, killed on drop.
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

fn serve(home: &Home, model: &ScriptedServer, extra: &[&str]) -> Served {
    spawn_served(serve_command(home, model, extra))
}

/// `talaria serve --port 0` in `home` against `model`, keyed with [`KEY`].
pub(crate) fn serve_command(home: &Home, model: &ScriptedServer, extra: &[&str]) -> Command {
    let models = crate::cli::openai_args(model);
    let mut args = vec!["serve", "--port", "0"];
    args.extend(models.iter().map(String::as_str));
    args.extend_from_slice(extra);
    let mut command = home.talaria(&args);
    command
        .env("TALARIA_API_KEY", "sk-test")
        .env("TALARIA_API_SERVER_KEY", KEY);
    command
}

/// Starts `command` (a [`serve_command`]) and waits for the port it listens on.
pub(crate) fn spawn_served(mut command: Command) -> Served {
    let mut child = command.spawn().unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let lines = BufReader::new(child.stderr.take().unwrap());
    let log = stderr.clone();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("talaria serve: listening on http://127.0.0.1:") {
                let _ = port_tx.send(rest.trim().parse::<u16>().unwrap());
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

/// A chunked body's data, and the text of a chat stream's deltas in it.
fn streamed_text(body: &str) -> (String, String) {
    let mut data = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        data.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    let text = data
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|json| serde_json::from_str::<Value>(json).ok())
        .filter_map(|chunk| {
            chunk["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    (data, text)
}

const BEARER: (&str, &str) = ("Authorization", "Bearer test-key-0123456789abcdef");

/// A chat completion (not streamed): the answer and the session header.
pub(crate) fn chat(port: u16, messages: Value) -> (String, String) {
    let body = json!({"model": "talaria", "messages": messages}).to_string();
    let (status, head, body) = http_request(
        port,
        "POST",
        "/v1/chat/completions",
        &[BEARER],
        body.as_bytes(),
    );
    assert_eq!(status, 200, "{head}\n{body}");
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("x-talaria-session-id: "))
        .unwrap_or_else(|| panic!("no session header: {head}"))
        .trim()
        .to_owned();
    // Chunked encoding may wrap the JSON; take the object.
    let start = body.find('{').unwrap();
    let end = body.rfind('}').unwrap();
    let value: Value = serde_json::from_str(&body[start..=end]).unwrap();
    (
        value["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_owned(),
        session,
    )
}

pub(crate) fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

#[test]
fn serve_refuses_to_start_without_a_key_of_16_characters() {
    let home = fresh_home();
    let output = run(home.talaria(&["serve", "--port", "0"]));
    assert_code(&output, 2);
    assert_contains(&stderr(&output), "TALARIA_API_SERVER_KEY");
    let mut short = home.talaria(&["serve", "--port", "0"]);
    short.env("TALARIA_API_SERVER_KEY", "too-short");
    let output = run(short);
    assert_code(&output, 2);
    assert_contains(&stderr(&output), "at least 16");
    // Bad values in the config section name the file and line.
    home.write_config("api_server:\n  port: 99999\n");
    let mut bad = home.talaria(&["serve"]);
    bad.env("TALARIA_API_SERVER_KEY", KEY);
    let output = run(bad);
    assert_code(&output, 2);
    assert_contains(&stderr(&output), "config.yaml:2");
    home.write_config("api_server:\n  prot: 1\n");
    let mut bad = home.talaria(&["serve"]);
    bad.env("TALARIA_API_SERVER_KEY", KEY);
    let output = run(bad);
    assert_contains(&stderr(&output), "prot");
}

#[test]
fn hostile_clients_get_openai_errors_and_a_stalled_one_is_cut_off() {
    let home = fresh_home();
    home.write_config("api_server:\n  max_body_bytes: 2048\n");
    let model = answers(1);
    let served = serve(&home, &model, &["--read-timeout", "1"]);
    let port = served.port;
    let chat = br#"{"messages":[{"role":"user","content":"hi"}]}"#;
    let (status, _, body) = http_request(port, "POST", "/v1/chat/completions", &[], chat);
    assert_eq!(status, 401, "{body}");
    assert_contains(&body, "\"invalid_api_key\"");
    let wrong = ("Authorization", "Bearer wrong-key-0123456789abcdef");
    assert_eq!(
        http_request(port, "POST", "/v1/chat/completions", &[wrong], chat).0,
        401
    );
    let big = vec![b'x'; 4096];
    let (status, _, body) = http_request(port, "POST", "/v1/chat/completions", &[BEARER], &big);
    assert_eq!(status, 413, "{body}");
    assert_contains(&body, "2048 bytes");
    let (status, _, body) = http_request(
        port,
        "POST",
        "/v1/chat/completions",
        &[BEARER],
        b"{\"messages\": [",
    );
    assert_eq!(status, 400, "{body}");
    assert_contains(&body, "not valid JSON");
    let (status, _, body) =
        http_request(port, "POST", "/v1/responses", &[BEARER], b"{\"input\": {}}");
    assert_eq!(status, 400, "{body}");

    // Headers begun, never finished: the connection is closed after the read timeout.
    let mut slow = TcpStream::connect(("127.0.0.1", port)).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    slow.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let started = Instant::now();
    let mut buf = Vec::new();
    let _ = slow.read_to_end(&mut buf);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the stalled client was not cut off"
    );
    // A body promised but never sent: 408, and the server still answers others.
    let mut stalled = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stalled
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stalled
        .write_all(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-key-0123456789abcdef\r\nContent-Length: 100\r\n\r\n{",
        )
        .unwrap();
    let mut reply = Vec::new();
    let _ = stalled.read_to_end(&mut reply);
    assert_contains(&String::from_utf8_lossy(&reply), " 408 ");
    let (status, _, _) = http_request(port, "GET", "/health", &[], b"");
    assert_eq!(status, 200);
    assert_eq!(
        model.requests().len(),
        0,
        "no bad request reached the model"
    );
    drop(served);
}

#[test]
fn resent_histories_continue_their_session_and_edits_fork() {
    let home = fresh_home();
    let model = answers(5);
    let served = serve(&home, &model, &[]);
    let port = served.port;
    let (a1, chat_a) = chat(port, json!([user("hi")]));
    assert_eq!(a1, "answer 1");
    // Another chat opening with the same words is a session of its own.
    let (b1, chat_b) = chat(port, json!([user("hi")]));
    assert_eq!(b1, "answer 2");
    assert_ne!(chat_a, chat_b);
    // Chat A resent with one more message: the same session.
    let (a2, continued) = chat(
        port,
        json!([user("hi"), assistant("answer 1"), user("go on")]),
    );
    assert_eq!(
        (a2.as_str(), continued.as_str()),
        ("answer 3", chat_a.as_str())
    );
    // Chat A's second turn edited: a new session forked from the first turn.
    let (edited, forked) = chat(
        port,
        json!([user("hi"), assistant("answer 1"), user("go off")]),
    );
    assert_eq!(edited, "answer 4");
    assert_ne!(forked, chat_a);
    assert_ne!(forked, chat_b);
    // The fork's model call carried the first turn, not the replaced one.
    let requests = model.requests();
    let history: Vec<String> = requests[3].messages().into_iter().map(|m| m.text).collect();
    assert!(history.iter().any(|t| t == "answer 1"), "{history:?}");
    assert!(
        !history.iter().any(|t| t == "go on" || t == "answer 3"),
        "{history:?}"
    );
    // An explicit session header wins over the history.
    let body = json!({"messages": [user("named")]}).to_string();
    let (status, head, _) = http_request(
        port,
        "POST",
        "/v1/chat/completions",
        &[BEARER, ("X-Hermes-Session-Id", chat_b.as_str())],
        body.as_bytes(),
    );
    assert_eq!(status, 200);
    assert_contains(&head, &format!("x-talaria-session-id: {chat_b}"));
    // The fork names the session it came from.
    let exported = run(home.talaria(&["session", "export", &forked]));
    let first_line: Value =
        serde_json::from_str(stdout(&exported).lines().next().unwrap()).unwrap();
    assert_eq!(
        first_line["parent_session_id"],
        chat_a.as_str(),
        "{first_line}"
    );
    drop(served);
}

#[test]
fn tool_progress_events_only_when_asked_for() {
    let home = fresh_home();
    let todo = r#"{"todos":[{"id":"1","content":"check","status":"pending"}]}"#;
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_call("todo", todo),
        Step::text("done once"),
        Step::tool_call("todo", todo),
        Step::text("done twice"),
    ]))
    .unwrap();
    let served = serve(&home, &model, &[]);
    let body = json!({"stream": true, "messages": [user("plan it")]}).to_string();
    let (status, _, plain) = http_request(
        served.port,
        "POST",
        "/v1/chat/completions",
        &[BEARER],
        body.as_bytes(),
    );
    assert_eq!(status, 200, "{plain}");
    let (plain, text) = streamed_text(&plain);
    assert_eq!(text, "done once", "{plain}");
    assert_contains(&plain, "data: [DONE]");
    // Stock SDKs reject unknown events: none unless asked for.
    assert!(!plain.contains("event:"), "{plain}");
    let (status, _, asked) = http_request(
        served.port,
        "POST",
        "/v1/chat/completions",
        &[BEARER, ("X-Talaria-Tool-Progress", "true")],
        body.as_bytes(),
    );
    assert_eq!(status, 200, "{asked}");
    let (asked, text) = streamed_text(&asked);
    assert_eq!(text, "done twice", "{asked}");
    assert_contains(&asked, "event: talaria.tool.progress");
    assert_contains(&asked, r#""tool":"todo""#);
    drop(served);
}

#[test]
fn the_openai_python_sdk_chats_streams_and_chains_responses() {
    let Some(python) = peer("api", "py/bin/python") else {
        return;
    };
    let home = fresh_home();
    let model = answers(6);
    let served = serve(&home, &model, &[]);
    let driver =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/api_server_client.py");
    let output = std::process::Command::new(python)
        .arg(driver)
        .arg(format!("http://127.0.0.1:{}/v1", served.port))
        .arg(KEY)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "driver failed:\n{}\nserver:\n{}",
        String::from_utf8_lossy(&output.stderr),
        served.stderr.lock().unwrap()
    );
    let out: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        out["models"]
            .as_array()
            .unwrap()
            .contains(&json!("talaria")),
        "{out:#}"
    );
    assert_eq!(out["chat_text"], "answer 1", "{out:#}");
    assert_eq!(out["chat_finish"], "stop");
    assert!(out["chat_usage_total"].is_u64(), "{out:#}");
    assert_eq!(out["stream_text"], "answer 2");
    assert_eq!(out["stream_finish"], "stop");
    assert_eq!(out["stream_usage_last"], true);
    assert_eq!(out["continued_text"], "answer 3");
    assert_eq!(out["continued_session"], out["chat_session"]);
    assert_eq!(out["response_text"], "answer 4");
    assert_eq!(out["chained_text"], "answer 5");
    assert_eq!(out["retrieved_text"], "answer 4");
    assert_eq!(out["deleted_gone"], true);
    assert_eq!(out["response_stream_text"], "answer 6");
    assert_eq!(out["response_stream_final"], "answer 6");
    let types: Vec<&str> = out["response_stream_types"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(types.first(), Some(&"response.created"), "{types:?}");
    assert_eq!(types.last(), Some(&"response.completed"), "{types:?}");
    for kind in [
        "response.output_item.added",
        "response.output_text.delta",
        "response.output_item.done",
    ] {
        assert!(types.contains(&kind), "{kind}: {types:?}");
    }
    assert_eq!(out["wrong_key"], 401);

    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    // The client's system message is layered on top of Talaria's prompt.
    let system = requests[0].system_prompt_raw();
    assert_contains(&system, "Answer in one line.");
    assert_contains(&system, "OpenAI-compatible API");
    // The continued chat and the chained response carried their history.
    let texts =
        |i: usize| -> Vec<String> { requests[i].messages().into_iter().map(|m| m.text).collect() };
    assert!(texts(2).contains(&"answer 1".to_owned()), "{:?}", texts(2));
    assert!(
        texts(4).contains(&"remember 7".to_owned()),
        "{:?}",
        texts(4)
    );
    // No clarify tool: nobody can answer.
    assert!(!requests[0].tools_raw().contains("\"clarify\""));
    drop(served);
}

/// Heavy: the OpenAI Codex CLI (it speaks only /v1/responses, streaming) with
/// `talaria serve` as its model provider.
#[test]
#[ignore = "heavy: needs the Codex CLI (scripts/install-api-peers --heavy)"]
fn the_codex_cli_uses_talaria_serve_as_its_provider() {
    let Some(codex) = peer("api", "codex/node_modules/.bin/codex") else {
        return;
    };
    let home = fresh_home();
    let model = ScriptedServer::spawn(Script::new(
        (0..4).map(|_| Step::text("Codex reached Talaria.")),
    ))
    .unwrap();
    let served = serve(&home, &model, &[]);
    let codex_home = tempfile::tempdir().unwrap();
    std::fs::write(
        codex_home.path().join("config.toml"),
        format!(
            "model = \"talaria\"\nmodel_provider = \"talaria\"\n\n[model_providers.talaria]\n\
             name = \"Talaria\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nenv_key = \"TALARIA_SERVE_KEY\"\n\
             wire_api = \"responses\"\n",
            served.port
        ),
    )
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(codex)
        .args(["exec", "--skip-git-repo-check", "Say hello."])
        .current_dir(work.path())
        .env("CODEX_HOME", codex_home.path())
        .env("TALARIA_SERVE_KEY", KEY)
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && out.contains("Codex reached Talaria."),
        "codex stdout:\n{out}\nstderr:\n{err}\nserver:\n{}",
        served.stderr.lock().unwrap()
    );
    assert!(!model.requests().is_empty());
    drop(served);
}

/// One streamed chat request on its own connection: (status, seconds taken).
fn streamed_chat(port: u16, i: usize) -> (u16, f64) {
    let started = Instant::now();
    let body = json!({"stream": true, "messages": [user(&format!("load {i}"))]}).to_string();
    let (status, _, reply) = http_request(
        port,
        "POST",
        "/v1/chat/completions",
        &[BEARER],
        body.as_bytes(),
    );
    if status == 200 {
        assert!(reply.contains("[DONE]"), "{reply}");
    }
    (status, started.elapsed().as_secs_f64())
}

/// Heavy: 50 concurrent streamed chats on loopback against the scripted model,
/// with room for all (`max_concurrent_runs: 64`) and at the default (10),
/// counting the 429s. Prints a table; asserts only behaviour, not speed.
#[test]
#[ignore = "heavy: a loopback load test printing a table"]
fn load_50_concurrent_streamed_chats() {
    const CLIENTS: usize = 50;
    println!(
        "\n| max_concurrent_runs | requests | ok | 429 | req/s | p50 ms | p99 ms | peak RSS MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // One client, one request at a time: the cost of a run on an idle server
    // (the first, cold, is the p99 column).
    {
        let home = fresh_home();
        let model = answers(5);
        let served = serve(&home, &model, &[]);
        let started = Instant::now();
        let mut times = Vec::new();
        for i in 0..5 {
            let (status, seconds) = streamed_chat(served.port, i);
            assert_eq!(status, 200);
            times.push(seconds);
        }
        let wall = started.elapsed().as_secs_f64();
        times.sort_by(f64::total_cmp);
        println!(
            "| 10 (one at a time) | 5 | 5 | 0 | {:.1} | {:.0} | {:.0} | {:.1} |",
            5.0 / wall,
            times[2] * 1000.0,
            times[4] * 1000.0,
            status_kib("VmHWM", served.child.id()) as f64 / 1024.0
        );
    }
    for cap in [64u32, 10] {
        let home = fresh_home();
        home.write_config(&format!(
            "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\napi_server:\n  max_concurrent_runs: {cap}\n"
        ));
        let model = answers(CLIENTS + 1);
        let served = serve(&home, &model, &[]);
        let port = served.port;
        // One request first: the first run of a server compiles and caches what
        // every later run reuses; the burst measures a warm server.
        assert_eq!(streamed_chat(port, CLIENTS).0, 200);
        let started = Instant::now();
        let barrier = Arc::new(std::sync::Barrier::new(CLIENTS));
        // All started before any is joined.
        let mut threads = Vec::with_capacity(CLIENTS);
        for i in 0..CLIENTS {
            let barrier = barrier.clone();
            threads.push(std::thread::spawn(move || {
                barrier.wait();
                streamed_chat(port, i)
            }));
        }
        let results: Vec<(u16, f64)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let wall = started.elapsed().as_secs_f64();
        let ok: Vec<f64> = results.iter().filter(|r| r.0 == 200).map(|r| r.1).collect();
        let busy = results.iter().filter(|r| r.0 == 429).count();
        assert_eq!(ok.len() + busy, CLIENTS, "{results:?}");
        if cap == 64 {
            assert_eq!(ok.len(), CLIENTS, "all fit under the cap");
        } else {
            // 50 at once against 10 slots, each run far longer than the burst: some are turned away.
            assert!(!ok.is_empty() && busy > 0, "{results:?}");
        }
        let mut sorted = ok.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| {
            sorted
                .get(((sorted.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(0.0)
                * 1000.0
        };
        println!(
            "| {cap} | {CLIENTS} | {} | {busy} | {:.1} | {:.0} | {:.0} | {:.1} |",
            ok.len(),
            ok.len() as f64 / wall,
            at(0.5),
            at(0.99),
            status_kib("VmHWM", served.child.id()) as f64 / 1024.0
        );
        drop(served);
    }
}
