//! MCP costs through the real binary, against real servers (installed by
//! `scripts/install-mcp-peers`; plugins by `scripts/build-plugins`):
//!
//! - from exec to the first model request of a one-shot run (the agent built, its prompt and
//!   tool list ready; the REPL shows its prompt before that and builds the agent meanwhile)
//!   with 3 MCP servers configured (server-everything and the Python SDK's test server over
//!   stdio, the Python SDK's server over streamable HTTP): with a cold tools cache (every server
//!   listed first) and a warm one (none contacted first), and with no servers for reference;
//! - one tool call as the session times it (`tool_finished.duration_ms` of `--json`, whole
//!   milliseconds): 20 calls one after the other of server-everything's `echo` over stdio and
//!   of the fs plugin's `read_file` (a WASM component).
//!
//! `cargo bench --bench mcp`. Prints min/median/max tables.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

const PROMPT_RUNS: usize = 8;
const CALL_RUNS: usize = 5;
const CALLS: usize = 20;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn talaria(home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_talaria"));
    command
        .env_clear()
        .env("TALARIA_HOME", home)
        .env("HOME", home)
        .env("TALARIA_API_KEY", "sk-bench")
        .env("TERM", "xterm-256color")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    command
}

fn row(name: &str, mut samples: Vec<Duration>, per: u32) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0 / f64::from(per);
    println!(
        "| {name:<44} | {:>8.2} | {:>8.2} | {:>8.2} |",
        ms(samples[0]),
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1])
    );
}

fn header(title: &str) {
    println!("\n| {title:<44} |  min ms  |  med ms  |  max ms  |");
    println!("|----------------------------------------------|----------|----------|----------|");
}

/// The Python SDK's streamable-HTTP test server on a free loopback port (it exits when its
/// stdin closes).
fn http_server(python: &Path) -> (Child, u16) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python)
        .arg(root().join("services/mcp/tests/fixtures/http_server.py"))
        .arg(port.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the HTTP server never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, port)
}

/// Exec to the first model request of a one-shot run (polled every millisecond).
fn to_first_request(home: &Path, work: &Path) -> Duration {
    let server = ScriptedServer::spawn(Script::new([Step::text("hi")])).unwrap();
    let base = server.openai_base_url();
    let start = Instant::now();
    let child = talaria(home)
        .current_dir(work)
        .args([
            "-q",
            "hi",
            "--provider",
            "openai",
            "--model",
            "bench",
            "--base-url",
            &base,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while server.requests().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no request came"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let elapsed = start.elapsed();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    elapsed
}

/// The session's own timing of each call of a one-shot run in which the model makes `calls`
/// (one per request), then answers.
fn timed_calls(home: &Path, work: &Path, call: &ToolCall, calls: usize) -> Vec<Duration> {
    let mut steps: Vec<Step> = (0..calls)
        .map(|_| Step::tool_calls([call.clone()]))
        .collect();
    steps.push(Step::text("done"));
    let server = ScriptedServer::spawn(Script::new(steps)).unwrap();
    let base = server.openai_base_url();
    let output = talaria(home)
        .current_dir(work)
        .args([
            "-q",
            "go",
            "--json",
            "--provider",
            "openai",
            "--model",
            "bench",
        ])
        .args(["--base-url", &base])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let durations: Vec<Duration> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["type"] == "tool_finished" && event["is_error"] == false)
        .filter_map(|event| event["duration_ms"].as_u64())
        .map(Duration::from_millis)
        .collect();
    assert_eq!(durations.len(), calls, "not every call succeeded");
    durations
}

fn main() {
    let peers = root().join("target/peers/mcp");
    let everything =
        peers.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let python: PathBuf = peers.join("py/bin/python");
    assert!(
        everything.is_file() && python.is_file(),
        "run scripts/install-mcp-peers first"
    );
    let (mut http, port) = http_server(&python);
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("note.txt"), "a short file\n").unwrap();
    let servers = format!(
        "mcp_servers:\n  everything:\n    command: node\n    args: [\"{}\", stdio]\n  \
         pystdio:\n    command: {}\n    args: [\"{}\"]\n  pyhttp:\n    url: http://127.0.0.1:{port}/mcp\n",
        everything.display(),
        python.display(),
        root()
            .join("services/mcp/tests/fixtures/stdio_server.py")
            .display()
    );
    let config = home.path().join("config.yaml");
    let cache = home.path().join("cache/mcp");

    header(&format!(
        "exec to the first model request ({PROMPT_RUNS} runs)"
    ));
    std::fs::write(&config, "").unwrap();
    to_first_request(home.path(), work.path()); // compiles the plugins once
    let none: Vec<Duration> = (0..PROMPT_RUNS)
        .map(|_| to_first_request(home.path(), work.path()))
        .collect();
    row("no MCP servers", none, 1);
    std::fs::write(&config, &servers).unwrap();
    let cold: Vec<Duration> = (0..PROMPT_RUNS)
        .map(|_| {
            let _ = std::fs::remove_dir_all(&cache);
            to_first_request(home.path(), work.path())
        })
        .collect();
    row("3 MCP servers, cold tools cache", cold, 1);
    let warm: Vec<Duration> = (0..PROMPT_RUNS)
        .map(|_| to_first_request(home.path(), work.path()))
        .collect();
    row("3 MCP servers, warm tools cache", warm, 1);

    header(&format!("one tool call ({CALLS} calls × {CALL_RUNS} runs)"));
    let echo = ToolCall::new("mcp_everything_echo", r#"{"message": "ping"}"#);
    let read = ToolCall::new("read_file", r#"{"path": "note.txt"}"#);
    let timings = |call: &ToolCall| -> Vec<Duration> {
        (0..CALL_RUNS)
            .flat_map(|_| timed_calls(home.path(), work.path(), call, CALLS))
            .collect()
    };
    let mcp = timings(&echo);
    let plugin = timings(&read);
    row("MCP echo (server-everything, stdio)", mcp, 1);
    row("plugin read_file (fs, WASM)", plugin, 1);

    drop(http.stdin.take());
    let _ = http.wait();
}
