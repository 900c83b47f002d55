//! MCP servers through the real binary, against the real reference server (server-everything
//! over stdio) and a server written with the Python SDK (both installed by
//! scripts/install-mcp-peers): `talaria mcp list|test|add|remove`, the model calling a server's
//! tool, approvals, and a changed tool list reaching the next session only.

use std::path::{Path, PathBuf};

use crate::common::*;
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

/// The Python SDK's interpreter and the test server written with it, or `None` like
/// [`everything`].
fn python_server() -> Option<(PathBuf, PathBuf)> {
    let python = mcp_peer("py/bin/python")?;
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("services/mcp/tests/fixtures/stdio_server.py");
    Some((python, script))
}

/// `mcp_servers` with server-everything as `everything`, plus `extra` lines of its entry.
pub(crate) fn everything_config(entry: &Path, extra: &str) -> String {
    format!(
        "mcp_servers:\n  everything:\n    command: node\n    args: [\"{}\", stdio]\n{extra}",
        entry.display()
    )
}

/// server-everything's entry point, or `None` (with the reason printed) when the peers are
/// not installed and `TALARIA_REQUIRE_PEERS` is unset.
pub(crate) fn everything() -> Option<PathBuf> {
    mcp_peer("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

#[test]
fn mcp_test_connects_lists_and_caches_and_list_shows_the_cache() {
    let Some(entry) = everything() else {
        return;
    };
    let home = Home::new();
    home.write_config(&format!(
        "mcp_servers:\n  everything:\n    command: node\n    args: [\"{}\", stdio]\n  \
         remote:\n    url: http://127.0.0.1:9/mcp\n    enabled: false\n",
        entry.display()
    ));
    let listed = run(home.talaria(&["mcp", "list"]));
    assert_code(&listed, 0);
    let out = stdout(&listed);
    assert!(
        out.lines().any(|l| l.starts_with("everything")
            && l.contains("enabled")
            && l.contains("stdio: node")
            && l.ends_with("not cached yet (talaria mcp test)")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("remote")
            && l.contains("disabled")
            && l.contains("http://127.0.0.1:9/mcp")),
        "{out}"
    );

    let tested = run(home.talaria(&["mcp", "test", "everything"]));
    assert_code(&tested, 0);
    let out = stdout(&tested);
    assert!(out.contains("(protocol 2025-11-25)"), "{out}");
    assert!(out.contains("13 tools listed in"), "{out}");
    assert!(out.lines().any(|l| l.trim() == "echo"), "{out}");

    let listed = stdout(&run(home.talaria(&["mcp", "list"])));
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("everything") && l.ends_with("13 tools cached")),
        "{listed}"
    );
}

#[test]
fn mcp_test_names_what_is_wrong() {
    let home = Home::new();
    home.write_config(
        "mcp_servers:\n  broken:\n    command: /nonexistent/mcp-server\n    connect_timeout: 5\n",
    );
    let unknown = run(home.talaria(&["mcp", "test", "nope"]));
    assert_code(&unknown, 2);
    assert!(
        stderr(&unknown).contains("no MCP server named 'nope' (configured: broken)"),
        "{}",
        stderr(&unknown)
    );
    let broken = run(home.talaria(&["mcp", "test", "broken"]));
    assert_code(&broken, 1);
    let err = stderr(&broken);
    assert!(err.contains("MCP server broken"), "{err}");
}

#[test]
fn the_model_calls_an_mcp_tool_and_write_tools_nobody_can_approve_are_left_out() {
    let Some(entry) = everything() else {
        return;
    };
    let home = Home::new();
    let work = home.workdir();
    home.write_config(&everything_config(&entry, ""));
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "mcp_everything_echo",
            r#"{"message": "hello through MCP"}"#,
        )]),
        Step::text("It echoed."),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "echo it", &[]));
    assert_code(&output, 0);
    let tools = server.requests()[0].tools_raw();
    // echo is marked read-only: offered without asking.
    assert_contains(&tools, "\"mcp_everything_echo\"");
    // toggle-simulated-logging is not, and nobody can answer a one-shot run's questions.
    assert!(
        !tools.contains("toggle-simulated-logging"),
        "a tool nobody can approve was offered"
    );
    assert_contains(
        &stderr(&output),
        "MCP server everything: 4 tool(s) that need approval are left out",
    );
    assert_eq!(tool_results(&server, 1), ["Echo: hello through MCP"]);

    // The first session listed the server and cached its tools; the next one starts from the
    // cache and offers the same tools, byte for byte; yolo mode offers the write tools too.
    let again = ScriptedServer::spawn(Script::new([Step::text("same tools")])).unwrap();
    assert_code(&run(home.query_in(work.path(), &again, "again", &[])), 0);
    assert_eq!(again.requests()[0].tools_raw(), tools);
    let yolo = ScriptedServer::spawn(Script::new([Step::text("all tools")])).unwrap();
    assert_code(
        &run(home.query_in(work.path(), &yolo, "all", &["--yolo"])),
        0,
    );
    assert_contains(&yolo.requests()[0].tools_raw(), "toggle-simulated-logging");
}

#[test]
fn a_changed_tool_list_reaches_the_next_session_and_never_the_current_prompt() {
    let Some((python, script)) = python_server() else {
        return;
    };
    let home = Home::new();
    let work = home.workdir();
    let state = work.path().join("added-tools");
    home.write_config(&format!(
        "mcp_servers:\n  dyn:\n    command: {}\n    args: [\"{}\"]\n    env:\n      \
         MCP_TEST_STATE: {}\n    approval: trusted\n",
        python.display(),
        script.display(),
        state.display()
    ));
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("mcp_dyn_add_tool", r#"{"name": "beta"}"#)]),
        Step::tool_calls([ToolCall::new("mcp_dyn_process_ids", "{}")]),
        Step::text("added"),
    ]))
    .unwrap();
    assert_code(&run(home.query_in(work.path(), &server, "add", &[])), 0);
    assert_eq!(tool_results(&server, 1), ["added beta"]);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(
            request.tools_raw(),
            requests[0].tools_raw(),
            "the tools changed mid-session"
        );
    }
    assert!(!requests[0].tools_raw().contains("mcp_dyn_beta"));

    let next = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("mcp_dyn_beta", "{}")]),
        Step::text("called"),
    ]))
    .unwrap();
    assert_code(&run(home.query_in(work.path(), &next, "use it", &[])), 0);
    assert_contains(&next.requests()[0].tools_raw(), "\"mcp_dyn_beta\"");
    assert_eq!(tool_results(&next, 1), ["I am beta"]);
}

#[test]
fn mcp_add_and_remove_edit_the_config_and_refuse_bad_entries() {
    let home = Home::new();
    home.write_config("# my settings\nmodel:\n  name: test-model\n");
    let added = run(home.talaria(&[
        "mcp",
        "add",
        "files",
        "--env",
        "ROOT=/srv",
        "--approval",
        "every-call",
        "--",
        "npx",
        "-y",
        "@modelcontextprotocol/server-filesystem",
        ".",
    ]));
    assert_code(&added, 0);
    assert_contains(&stdout(&added), "added MCP server files (stdio: npx -y");
    let remote = run(home.talaria(&[
        "mcp",
        "add",
        "remote",
        "--url",
        "https://mcp.example.invalid/mcp",
        "--header",
        "Authorization: Bearer ${REMOTE_TOKEN:-unset}",
    ]));
    assert_code(&remote, 0);
    let config = home.read("config.yaml");
    assert_contains(&config, "approval: every-call");
    assert_contains(&config, "ROOT: /srv");
    assert_contains(&config, "Authorization: Bearer ${REMOTE_TOKEN:-unset}");
    let listed = stdout(&run(home.talaria(&["mcp", "list"])));
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("files") && l.contains("stdio: npx"))
    );
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("remote") && l.contains("http: https://"))
    );

    let twice = run(home.talaria(&["mcp", "add", "files", "--", "true"]));
    assert_code(&twice, 2);
    assert_contains(&stderr(&twice), "configured already");
    let nothing = run(home.talaria(&["mcp", "add", "empty"]));
    assert_code(&nothing, 2);
    assert_contains(&stderr(&nothing), "give the server's command after `--`");
    let bad = run(home.talaria(&["mcp", "add", "x", "--approval", "sometimes", "--", "true"]));
    assert_code(&bad, 2);
    assert_contains(&stderr(&bad), "expected writes, every-call or trusted");
    let bad_name = run(home.talaria(&["mcp", "add", "a.b", "--", "true"]));
    assert_code(&bad_name, 2);

    assert_code(&run(home.talaria(&["mcp", "remove", "files"])), 0);
    let config = home.read("config.yaml");
    assert!(!config.contains("files:"), "{config}");
    assert_contains(&config, "remote:");
    assert_contains(&home.read("config.yaml.bak"), "# my settings");
    let missing = run(home.talaria(&["mcp", "remove", "files"]));
    assert_code(&missing, 2);
    assert_contains(&stderr(&missing), "no MCP server named 'files'");
}

#[test]
fn a_tool_whose_description_carries_instructions_is_left_out() {
    let Some((python, script)) = python_server() else {
        return;
    };
    let home = Home::new();
    let work = home.workdir();
    home.write_config(&format!(
        "mcp_servers:\n  py:\n    command: {}\n    args: [\"{}\"]\n    env: {{MCP_TEST_POISON: \"1\"}}\n    \
         approval: trusted\n",
        python.display(),
        script.display(),
    ));
    let server = ScriptedServer::spawn(Script::new([Step::text("ok")])).unwrap();
    let output = run(home.query_in(work.path(), &server, "hi", &[]));
    assert_code(&output, 0);
    let tools = server.requests()[0].tools_raw();
    assert_contains(&tools, "\"mcp_py_process_ids\"");
    assert!(
        !tools.contains("mcp_py_weather"),
        "the poisoned tool was offered"
    );
    assert!(!tools.contains("Ignore all previous"), "{tools}");
    assert_contains(
        &stderr(&output),
        "MCP tool weather of server py is left out: its description trips rule",
    );
}

#[test]
fn the_model_calls_a_tool_of_a_streamable_http_server() {
    let Some((python, _)) = python_server() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The Python SDK's server; it exits when its stdin closes (dropped with `peer`).
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("services/mcp/tests/fixtures/http_server.py");
    let mut peer = std::process::Command::new(&python)
        .arg(&script)
        .arg(port.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until(
        "the Python MCP server listens",
        std::time::Duration::from_secs(30),
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
    );
    let home = Home::new();
    let work = home.workdir();
    home.write_config(&format!(
        "mcp_servers:\n  web:\n    url: http://127.0.0.1:{port}/mcp\n    approval: trusted\n"
    ));
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("mcp_web_add", r#"{"a": 20, "b": 22}"#)]),
        Step::text("42"),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "add", &[]));
    let _ = peer.kill();
    let _ = peer.wait();
    assert_code(&output, 0);
    assert_contains(&server.requests()[0].tools_raw(), "\"mcp_web_echo\"");
    assert_eq!(tool_results(&server, 1), ["42"]);
}
