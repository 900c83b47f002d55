//! MCP costs through the real binary, against real servers (installed by
//! `scripts/install-mcp-peers`; plugins by `scripts/build-plugins`):
//!
//! - the REPL from exec to its first prompt with 3 MCP servers configured (server-everything
//!   and the Python SDK's test server over stdio, the Python SDK's server over streamable HTTP):
//!   with a cold tools cache (every server listed before the prompt) and a warm one (none
//!   contacted before the prompt), and with no servers for reference;
//! - the cost of one tool call: one-shot runs in which the scripted model makes 20 calls one
//!   after the other, of server-everything's `echo` and of the fs plugin's `read_file`, less a
//!   run without calls, divided by 20.
//!
//! `cargo bench --bench mcp`. Prints min/median/max tables.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rexpect::process::PtyProcess;
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

/// Exec to the REPL's first prompt, read straight from the pty.
fn to_first_prompt(home: &Path) -> Duration {
    let mut command = talaria(home);
    command.args([
        "--provider",
        "openai",
        "--model",
        "bench",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ]);
    let prompt = "› ".as_bytes();
    let start = Instant::now();
    let mut process = PtyProcess::new(command).unwrap();
    let mut pty = process.get_file_handle().unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !seen.windows(prompt.len()).any(|w| w == prompt) {
        let n = pty.read(&mut buffer).unwrap();
        assert!(n > 0, "talaria closed its terminal before the prompt");
        seen.extend_from_slice(&buffer[..n]);
    }
    let elapsed = start.elapsed();
    pty.write_all(&[4]).unwrap(); // Ctrl-D
    process.exit().unwrap();
    elapsed
}

/// A one-shot run in which the model makes `calls` (one per request), then answers.
fn one_shot(home: &Path, work: &Path, calls: &[ToolCall]) -> Duration {
    let mut steps: Vec<Step> = calls
        .iter()
        .map(|call| Step::tool_calls([call.clone()]))
        .collect();
    steps.push(Step::text("done"));
    let server = ScriptedServer::spawn(Script::new(steps)).unwrap();
    let base = server.openai_base_url();
    let start = Instant::now();
    let output = talaria(home)
        .current_dir(work)
        .args([
            "-q",
            "go",
            "--provider",
            "openai",
            "--model",
            "bench",
            "--base-url",
            &base,
        ])
        .output()
        .unwrap();
    let elapsed = start.elapsed();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(server.requests().len(), calls.len() + 1);
    elapsed
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

    header(&format!("REPL to first prompt ({PROMPT_RUNS} runs)"));
    std::fs::write(&config, "").unwrap();
    to_first_prompt(home.path()); // compiles the plugins once
    let none: Vec<Duration> = (0..PROMPT_RUNS)
        .map(|_| to_first_prompt(home.path()))
        .collect();
    row("no MCP servers", none, 1);
    std::fs::write(&config, &servers).unwrap();
    let cold: Vec<Duration> = (0..PROMPT_RUNS)
        .map(|_| {
            let _ = std::fs::remove_dir_all(&cache);
            to_first_prompt(home.path())
        })
        .collect();
    row("3 MCP servers, cold tools cache", cold, 1);
    let warm: Vec<Duration> = (0..PROMPT_RUNS)
        .map(|_| to_first_prompt(home.path()))
        .collect();
    row("3 MCP servers, warm tools cache", warm, 1);

    header(&format!("one tool call ({CALLS} calls × {CALL_RUNS} runs)"));
    std::fs::write(
        &config,
        format!(
            "mcp_servers:\n  everything:\n    command: node\n    args: [\"{}\", stdio]\n",
            everything.display()
        ),
    )
    .unwrap();
    let baseline: Vec<Duration> = (0..CALL_RUNS)
        .map(|_| one_shot(home.path(), work.path(), &[]))
        .collect();
    let echo = ToolCall::new("mcp_everything_echo", r#"{"message": "ping"}"#);
    let read = ToolCall::new("read_file", r#"{"path": "note.txt"}"#);
    let per_call = |call: &ToolCall| -> Vec<Duration> {
        let mut base = baseline.clone();
        base.sort();
        let floor = base[base.len() / 2];
        (0..CALL_RUNS)
            .map(|_| {
                one_shot(home.path(), work.path(), &vec![call.clone(); CALLS]).saturating_sub(floor)
            })
            .collect()
    };
    let mcp = per_call(&echo);
    let plugin = per_call(&read);
    row("run without calls (whole run)", baseline.clone(), 1);
    row("MCP echo (server-everything, stdio)", mcp, CALLS as u32);
    row("plugin read_file (fs, WASM)", plugin, CALLS as u32);

    drop(http.stdin.take());
    let _ = http.wait();
}
