//! `talaria acp`, black-box: the official TypeScript SDK's client
//! (@agentclientprotocol/sdk, from scripts/install-acp-peers) drives the real
//! binary against the scripted model (tests/all/acp_client.mjs); a raw client
//! sends hostile input and checks that only JSON-RPC frames reach stdout.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

use crate::common::*;

/// A fresh profile home (these tests need only native tools).
fn fresh_home() -> Home {
    let home = Home {
        dir: tempfile::tempdir().unwrap(),
    };
    home.write_config("retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n");
    home
}

/// Runs a scenario of acp_client.mjs; `None` when the peers are not installed.
fn drive(
    home: &Home,
    work: &Path,
    model: &ScriptedServer,
    scenario: &str,
    session: Option<&str>,
) -> Option<Value> {
    drive_with(home, work, model, scenario, session, &[])
}

/// [`drive`], with more variables for the driver (`ACP_MCP`, `ACP_BUFFERS`).
fn drive_with(
    home: &Home,
    work: &Path,
    model: &ScriptedServer,
    scenario: &str,
    session: Option<&str>,
    vars: &[(&str, String)],
) -> Option<Value> {
    let node = peer_node()?;
    let sdk = peer("acp", "node_modules/@agentclientprotocol/sdk")?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/acp_client.mjs");
    let mut command = Command::new(node);
    command
        .arg(script)
        .arg(scenario)
        .env_clear()
        .env("TALARIA_HOME", home.path())
        .env("HOME", home.path())
        .env("TALARIA_API_KEY", "sk-test")
        .env("TALARIA_BIN", env!("CARGO_BIN_EXE_talaria"))
        .env("ACP_SDK", sdk)
        .env("ACP_WORKDIR", work)
        .envs(vars.iter().map(|(name, value)| (name, value)))
        .env(
            "ACP_AGENT_ARGS",
            serde_json::to_string(&crate::cli::openai_args(model)).unwrap(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    if let Some(session) = session {
        command.env("ACP_SESSION", session);
    }
    let output = run(command);
    let text = stdout(&output);
    let result: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "the driver printed no result ({e}):\n{text}\n{}",
            stderr(&output)
        )
    });
    assert!(
        result.get("error").is_none(),
        "the client failed: {}\nagent stderr:\n{}",
        result["error"],
        result["stderr"].as_str().unwrap_or_default()
    );
    assert_eq!(result["exitCode"], 0, "{}", result["stderr"]);
    Some(result)
}

/// The updates of one kind (`sessionUpdate`).
fn updates<'a>(result: &'a Value, kind: &str) -> Vec<&'a Value> {
    result["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// The text of the chunks of one kind, joined.
fn text_of(result: &Value, kind: &str) -> String {
    updates(result, kind)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[test]
fn the_sdk_client_prompts_runs_a_command_and_loads_the_session_back() {
    let home = fresh_home();
    let work = home.workdir();
    let model = ScriptedServer::spawn(Script::new([Step::text_with_reasoning(
        "Hello from Talaria.",
        "The user greets me.",
    )]))
    .unwrap();
    let Some(first) = drive(&home, work.path(), &model, "prompt", None) else {
        return;
    };
    let init = &first["initialize"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"], true,
        "image blocks are attached to the prompt"
    );
    assert!(init["agentCapabilities"]["sessionCapabilities"]["list"].is_object());
    assert_eq!(first["response"]["stopReason"], "end_turn");
    assert_eq!(first["command"]["stopReason"], "end_turn");
    let commands = updates(&first, "available_commands_update");
    let names: Vec<&str> = commands[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        names.contains(&"usage") && names.contains(&"compact"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"quit"),
        "terminal-only commands are not offered"
    );
    let answer = text_of(&first, "agent_message_chunk");
    assert!(answer.starts_with("Hello from Talaria."), "{answer}");
    // The command's answer arrived before its response: the driver reads the
    // updates once the response and everything ahead of it have landed.
    let command_answer: String = first["commandUpdates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(
        command_answer.contains("tokens in"),
        "/usage answered in the chat: {command_answer:?}\n{first:#}"
    );
    assert_eq!(
        text_of(&first, "agent_thought_chunk"),
        "The user greets me."
    );
    let usage = updates(&first, "usage_update");
    assert!(usage[0]["size"].as_u64().unwrap() > 0, "{usage:?}");

    // A second process loads the stored session: the history is replayed.
    let session = first["sessionId"].as_str().unwrap();
    let loaded = drive(&home, work.path(), &model, "load", Some(session)).unwrap();
    assert_eq!(text_of(&loaded, "user_message_chunk"), "hello");
    assert_eq!(
        text_of(&loaded, "agent_message_chunk"),
        "Hello from Talaria."
    );
    let listed: Vec<&str> = loaded["list"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert!(listed.contains(&session), "{listed:?}");
    assert_eq!(model.remaining_steps(), 0);
}

#[test]
fn a_script_asks_the_editor_for_permission() {
    let home = fresh_home();
    let work = home.workdir();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "execute_code",
            r#"{"code": "open('made.txt', 'w').write('made')"}"#,
        )]),
        Step::text("Made the file."),
    ]))
    .unwrap();
    let Some(result) = drive(&home, work.path(), &model, "permission", None) else {
        return;
    };
    assert_eq!(result["response"]["stopReason"], "end_turn");
    let started = updates(&result, "tool_call");
    assert_eq!(started[0]["kind"], "execute");
    assert!(
        started[0]["title"]
            .as_str()
            .unwrap()
            .starts_with("Run a script"),
        "{started:?}"
    );
    let permissions = result["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1, "{permissions:?}");
    let asked = &permissions[0];
    assert_eq!(asked["toolCall"]["toolCallId"], started[0]["toolCallId"]);
    let kinds: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    assert!(
        asked["toolCall"]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("made.txt")
    );
    let finished = updates(&result, "tool_call_update");
    assert_eq!(finished.last().unwrap()["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(work.path().join("made.txt")).unwrap(),
        "made",
        "allowed once: it ran"
    );
}

#[test]
fn session_cancel_interrupts_a_running_tool() {
    let home = fresh_home();
    let work = home.workdir();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "execute_code",
            r#"{"code": "import time\ntime.sleep(30)"}"#,
        )]),
        Step::text("not reached"),
    ]))
    .unwrap();
    let Some(result) = drive(&home, work.path(), &model, "cancel", None) else {
        return;
    };
    assert_eq!(result["response"]["stopReason"], "cancelled");
    eprintln!("cancelled after {} ms", result["cancelMs"]);
    assert_eq!(model.remaining_steps(), 1, "no model call after the cancel");
}

#[test]
fn the_editors_mcp_server_is_connected_for_the_session() {
    let Some(entry) = crate::mcp::everything() else {
        return;
    };
    let home = fresh_home();
    let work = home.workdir();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "mcp_everything_echo",
            r#"{"message": "hello through ACP"}"#,
        )]),
        Step::text("It echoed."),
    ]))
    .unwrap();
    let node = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v node"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let mcp = json!([{
        "name": "everything",
        "command": node.trim(),
        "args": [entry, "stdio"],
        "env": [],
    }]);
    let Some(result) = drive_with(
        &home,
        work.path(),
        &model,
        "mcp",
        None,
        &[("ACP_MCP", mcp.to_string())],
    ) else {
        return;
    };
    assert_eq!(result["response"]["stopReason"], "end_turn");
    assert!(
        model.requests()[0]
            .tools_raw()
            .contains("\"mcp_everything_echo\"")
    );
    assert_eq!(tool_results(&model, 1), ["Echo: hello through ACP"]);
    let started = updates(&result, "tool_call");
    // Kind "other", the protocol's default (left out of the frame).
    assert_eq!(started[0]["title"], "mcp_everything_echo");
    assert!(started[0]["kind"].is_null() || started[0]["kind"] == "other");
}

#[test]
fn session_cancel_kills_a_command_in_the_editors_terminal() {
    let home = Home::new();
    let work = home.workdir();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("terminal", r#"{"command": "sleep 37"}"#)]),
        Step::text("not reached"),
    ]))
    .unwrap();
    let vars = [("ACP_BUFFERS", "{}".to_owned())];
    let Some(result) = drive_with(&home, work.path(), &model, "cancel", None, &vars) else {
        return;
    };
    assert_eq!(result["response"]["stopReason"], "cancelled");
    let calls: Vec<&Value> = result["editor"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["method"] != "terminal/wait_for_exit")
        .collect();
    let methods: Vec<&str> = calls.iter().filter_map(|c| c["method"].as_str()).collect();
    assert_eq!(
        methods,
        ["terminal/create", "terminal/kill", "terminal/release"]
    );
    assert!(processes_running(&["sleep", "37"]).is_empty());
    assert_eq!(model.remaining_steps(), 1, "no model call after the cancel");
}

#[test]
fn files_and_commands_go_through_an_editor_that_offers_them() {
    let home = Home::new();
    let work = home.workdir();
    let dir = work.path().canonicalize().unwrap();
    std::fs::write(dir.join("notes.txt"), "disk text\n").unwrap();
    let notes = dir.join("notes.txt").display().to_string();
    let out = dir.join("out.txt").display().to_string();
    let buffers = json!({ notes.clone(): "unsaved buffer text\n" });
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("read_file", r#"{"path": "notes.txt"}"#)]),
        Step::tool_calls([ToolCall::new(
            "write_file",
            r#"{"path": "out.txt", "content": "written by the agent\n"}"#,
        )]),
        Step::tool_calls([ToolCall::new(
            "patch",
            r#"{"mode": "replace", "path": "notes.txt", "old_string": "unsaved", "new_string": "edited"}"#,
        )]),
        Step::tool_calls([ToolCall::new(
            "terminal",
            r#"{"command": "echo from-the-terminal; pwd"}"#,
        )]),
        Step::tool_calls([ToolCall::new(
            "terminal",
            r#"{"command": "echo started; sleep 30", "timeout": 1}"#,
        )]),
        Step::text("Done."),
    ]))
    .unwrap();
    let vars = [("ACP_BUFFERS", buffers.to_string())];
    let Some(result) = drive_with(&home, &dir, &model, "editor", None, &vars) else {
        return;
    };
    assert_eq!(result["response"]["stopReason"], "end_turn");
    assert_eq!(model.remaining_steps(), 0);

    // The read saw the editor's unsaved buffer, not the disk.
    let read = tool_results(&model, 1).join("\n");
    assert!(read.contains("unsaved buffer text"), "{read}");
    assert!(!read.contains("disk text"), "{read}");
    // The write and the edit landed in the editor's buffers; the disk is untouched.
    assert_eq!(result["buffers"][&out], "written by the agent\n");
    assert_eq!(result["buffers"][&notes], "edited buffer text\n");
    assert!(!dir.join("out.txt").exists(), "the editor saves it, not us");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "disk text\n"
    );

    // The command ran in the editor's terminal, in the session's directory,
    // shown in its tool call, and its terminal was released.
    let calls = result["editor"].as_array().unwrap();
    let created = calls
        .iter()
        .find(|c| c["method"] == "terminal/create")
        .unwrap_or_else(|| panic!("no terminal/create: {calls:?}"));
    assert_eq!(created["command"], "bash");
    assert_eq!(
        created["args"],
        json!(["-c", "echo from-the-terminal; pwd"])
    );
    assert_eq!(created["cwd"], dir.display().to_string());
    let ran = tool_results(&model, 4).join("\n");
    assert!(ran.contains("from-the-terminal"), "{ran}");
    assert!(ran.contains(&dir.display().to_string()), "{ran}");
    // Its timeout killed the second one in the terminal (not 30 s later).
    let timed_out = tool_results(&model, 5).join("\n");
    assert!(timed_out.contains("timed out after 1 s"), "{timed_out}");
    assert!(timed_out.contains("started"), "{timed_out}");
    let kills = calls.iter().filter(|c| c["method"] == "terminal/kill");
    assert_eq!(kills.count(), 1, "{calls:?}");
    let releases = calls.iter().filter(|c| c["method"] == "terminal/release");
    assert_eq!(releases.count(), 2, "{calls:?}");
    let shown = updates(&result, "tool_call_update")
        .into_iter()
        .any(|u| u["content"][0]["type"] == "terminal");
    assert!(shown, "the terminal was shown in its tool call");
}

/// Reads stdout frames on a thread; each must be one JSON-RPC object.
fn frames(child_stdout: std::process::ChildStdout) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(child_stdout).lines() {
            let line = line.unwrap();
            let frame: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a JSON frame on stdout ({e}): {line}"));
            assert_eq!(frame["jsonrpc"], "2.0", "{line}");
            if tx.send(frame).is_err() {
                return;
            }
        }
    });
    rx
}

#[test]
fn hostile_input_gets_json_rpc_errors_and_the_server_keeps_serving() {
    let home = fresh_home();
    let work = home.workdir();
    let mut child = home
        .talaria(&["acp"])
        .current_dir(work.path())
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let replies = frames(child.stdout.take().unwrap());
    let next = || replies.recv_timeout(Duration::from_secs(30)).unwrap();
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };

    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"x","prompt":[{"type":"text","text":"hi"}]}}"#,
    );
    let early = next();
    assert_eq!(early["id"], 1);
    assert_eq!(
        early["error"]["code"], -32600,
        "prompt before initialize: {early}"
    );
    assert!(
        early.to_string().contains("initialization must complete"),
        "{early}"
    );

    send("{this is not json");
    let malformed = next();
    assert_eq!(malformed["error"]["code"], -32700, "{malformed}");
    assert_eq!(malformed["id"], Value::Null);

    let oversized = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"initialize","params":{{"pad":"{}"}}}}"#,
        "x".repeat(talaria_acp_limit() + 1)
    );
    send(&oversized);
    let dropped = next();
    assert_eq!(dropped["error"]["code"], -32600, "{dropped}");
    assert!(
        dropped["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exceeds the limit"),
        "{dropped}"
    );

    send(&json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}).to_string());
    let init = next();
    assert_eq!(init["id"], 3);
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");

    send(r#"{"jsonrpc":"2.0","id":4,"method":"talaria/nonsense","params":{}}"#);
    let unknown = next();
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    send(
        r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"no-such","prompt":[{"type":"text","text":"hi"}]}}"#,
    );
    let missing = next();
    assert_eq!(missing["error"]["code"], -32002, "{missing}");

    send(
        r#"{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}"#,
    );
    let relative = next();
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    assert!(relative.to_string().contains("absolute"), "{relative}");

    send(
        r#"{"jsonrpc":"2.0","id":7,"method":"session/load","params":{"sessionId":"20990101-nope","cwd":"/","mcpServers":[]}}"#,
    );
    let absent = next();
    assert_eq!(absent["error"]["code"], -32002, "{absent}");

    drop(stdin);
    let output = wait(child);
    assert_code(&output, 0);
}

/// The server's default line limit.
fn talaria_acp_limit() -> usize {
    8 * 1024 * 1024
}

/// The `clarify` tool in the first request's tool list, when offered.
fn clarify_schema(model: &ScriptedServer) -> Option<Value> {
    let tools: Value = serde_json::from_str(&model.requests()[0].tools_raw()).unwrap();
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "clarify")
        .map(|t| t["function"]["parameters"].clone())
}

const CLARIFY_ARGS: &str = r#"{"question": "Which target?", "choices": ["staging", "prod"]}"#;

#[test]
fn clarify_asks_an_editor_with_forms_and_the_answer_reaches_the_model() {
    let home = fresh_home();
    let work = home.workdir();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("clarify", CLARIFY_ARGS)]),
        Step::text("Going with dev."),
    ]))
    .unwrap();
    // The user picks a choice and also types their own answer: the words win.
    let reply = json!({"choice": "prod", "answer": "dev instead"});
    let Some(result) = drive_with(
        &home,
        work.path(),
        &model,
        "clarify",
        None,
        &[("ACP_ELICIT", reply.to_string())],
    ) else {
        return;
    };
    assert_eq!(result["response"]["stopReason"], "end_turn");
    let schema = clarify_schema(&model).expect("clarify is offered in an editor");
    assert_eq!(schema["required"], json!(["question"]));
    let asked = result["elicitations"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["mode"], "form");
    assert_eq!(asked[0]["message"], "Which target?");
    assert_eq!(asked[0]["sessionId"], result["sessionId"]);
    let choices: Vec<&Value> = asked[0]["requestedSchema"]["properties"]["choice"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| &option["const"])
        .collect();
    assert_eq!(choices, [&json!("staging"), &json!("prod")]);
    let answer: Value = serde_json::from_str(&tool_results(&model, 1)[0]).unwrap();
    assert_eq!(answer["user_response"], "dev instead");
    assert_eq!(answer["choices_offered"], json!(["staging", "prod"]));
}

#[test]
fn without_forms_clarify_offers_the_choices_as_permission_options() {
    let home = fresh_home();
    let work = home.workdir();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("clarify", CLARIFY_ARGS)]),
        Step::text("Staging it is."),
    ]))
    .unwrap();
    let Some(result) = drive(&home, work.path(), &model, "clarify", None) else {
        return;
    };
    assert_eq!(result["response"]["stopReason"], "end_turn");
    // Only choices can be answered here: the schema says they are needed.
    let schema = clarify_schema(&model).expect("clarify is offered in an editor");
    assert_eq!(schema["required"], json!(["question", "choices"]));
    let permissions = result["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1, "{permissions:?}");
    assert_eq!(permissions[0]["toolCall"]["title"], "Which target?");
    let names: Vec<&str> = permissions[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["name"].as_str())
        .collect();
    assert_eq!(names, ["staging", "prod", "Skip the question"]);
    // The driver picks the first "allow once" option: the first choice.
    let answer: Value = serde_json::from_str(&tool_results(&model, 1)[0]).unwrap();
    assert_eq!(answer["user_response"], "staging");
}

#[test]
fn session_cancel_withdraws_a_clarify_question() {
    let home = fresh_home();
    let work = home.workdir();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("clarify", r#"{"question": "Why?"}"#)]),
        Step::text("not reached"),
    ]))
    .unwrap();
    let Some(result) = drive_with(
        &home,
        work.path(),
        &model,
        "cancel",
        None,
        &[("ACP_ELICIT", "\"hang\"".to_owned())],
    ) else {
        return;
    };
    assert_eq!(result["response"]["stopReason"], "cancelled");
    assert_eq!(result["elicitations"].as_array().unwrap().len(), 1);
    assert_eq!(model.remaining_steps(), 1, "no model call after the cancel");
}
