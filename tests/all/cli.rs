//! Black-box tests: the real `talaria` binary against the scripted model server.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers, not production code

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;
use talaria_testkit::assertions::{assert_prefix_stable, assert_tool_calls_paired};
use talaria_testkit::{
    LineEnding, Role, Script, ScriptedServer, ServerOptions, Step, ToolCall, Wire,
};

const TODO_ARGS: &str =
    r#"{"todos":[{"id":"1","content":"write the tests","status":"in_progress"}]}"#;

pub(crate) fn openai_args(server: &ScriptedServer) -> Vec<String> {
    [
        "--provider",
        "openai",
        "--model",
        "test-model",
        "--base-url",
    ]
    .iter()
    .map(std::string::ToString::to_string)
    .chain([server.openai_base_url()])
    .collect()
}

fn anthropic_args(server: &ScriptedServer) -> Vec<String> {
    [
        "--provider",
        "anthropic",
        "--model",
        "claude-test",
        "--base-url",
    ]
    .iter()
    .map(std::string::ToString::to_string)
    .chain([server.anthropic_base_url()])
    .collect()
}

pub(crate) fn query(home: &Home, prompt: &str, endpoint: &[String]) -> std::process::Command {
    let mut args = vec!["-q", prompt];
    args.extend(endpoint.iter().map(String::as_str));
    let mut command = home.talaria(&args);
    command.env("TALARIA_API_KEY", "sk-test");
    command
}

fn round_trip_script() -> Script {
    Script::new([Step::tool_call("todo", TODO_ARGS), Step::text("All set.")])
}

/// The tool result the model saw in the second request.
fn second_request_tool_result(server: &ScriptedServer) -> String {
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one request per model call");
    let results: Vec<_> = requests[1]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .collect();
    assert_eq!(results.len(), 1);
    results[0].content.clone()
}

fn assert_round_trip(server: &ScriptedServer, output: &std::process::Output, wire: Wire) {
    assert_code(output, 0);
    assert_eq!(stdout(output), "All set.\n");
    assert!(
        stderr(output).contains("todo"),
        "activity feed on stderr: {}",
        stderr(output)
    );
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.wire == wire));
    let connections: Vec<u64> = requests.iter().map(|r| r.connection).collect();
    assert_eq!(
        connections,
        [1, 1],
        "the second model call reuses the first one's connection"
    );
    assert_tool_calls_paired(&requests);
    assert_prefix_stable(&requests);
    let result: Value = serde_json::from_str(&second_request_tool_result(server)).unwrap();
    assert_eq!(result["todos"][0]["content"], "write the tests");
    assert_eq!(result["summary"]["in_progress"], 1);
    let tools = requests[0].tools_raw();
    assert!(
        tools.contains("\"todo\""),
        "the todo tool is offered: {tools}"
    );
    // A one-shot run's stdin is not the user: nobody answers questions.
    assert!(!tools.contains("\"clarify\""), "clarify offered: {tools}");
}

#[test]
fn version_is_printed() {
    let home = Home::new();
    let output = run(home.talaria(&["--version"]));
    assert_code(&output, 0);
    assert_eq!(
        stdout(&output),
        format!("talaria {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn openai_streaming_tool_round_trip() {
    let home = Home::new();
    let server = ScriptedServer::spawn(round_trip_script()).unwrap();
    let output = run(query(&home, "plan the work", &openai_args(&server)));
    assert_round_trip(&server, &output, Wire::OpenAi);
    let first = &server.requests()[0];
    assert!(first.stream);
    assert_eq!(first.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(first.model(), Some("test-model"));
}

#[test]
fn openai_non_streaming_tool_round_trip() {
    let home = Home::new();
    home.write_config("model:\n  stream: false\nretry:\n  base_delay_ms: 20\n");
    let server = ScriptedServer::spawn(round_trip_script()).unwrap();
    let output = run(query(&home, "plan the work", &openai_args(&server)));
    assert_round_trip(&server, &output, Wire::OpenAi);
    assert!(!server.requests()[0].stream);
}

#[test]
fn anthropic_streaming_tool_round_trip() {
    let home = Home::new();
    let server = ScriptedServer::spawn(round_trip_script()).unwrap();
    let output = run(query(&home, "plan the work", &anthropic_args(&server)));
    assert_round_trip(&server, &output, Wire::Anthropic);
    let first = &server.requests()[0];
    assert!(first.stream);
    assert_eq!(first.header("x-api-key"), Some("sk-test"));
    assert!(
        first.system_prompt_raw().contains("cache_control"),
        "system prompt cache breakpoint"
    );
}

#[test]
fn anthropic_non_streaming_tool_round_trip() {
    let home = Home::new();
    home.write_config("model:\n  stream: false\n");
    let server = ScriptedServer::spawn(round_trip_script()).unwrap();
    let output = run(query(&home, "plan the work", &anthropic_args(&server)));
    assert_round_trip(&server, &output, Wire::Anthropic);
}

#[test]
fn sse_with_crlf_and_one_byte_chunks_is_parsed() {
    let home = Home::new();
    let options = ServerOptions {
        chunk_size: 1,
        line_ending: LineEnding::CrLf,
        ..ServerOptions::default()
    };
    let server = ScriptedServer::spawn_with(round_trip_script(), options).unwrap();
    let output = run(query(&home, "plan", &openai_args(&server)));
    assert_round_trip(&server, &output, Wire::OpenAi);
}

#[test]
fn rate_limit_is_retried_after_retry_after() {
    let home = Home::new();
    let server = ScriptedServer::spawn(Script::new([
        Step::rate_limited(Some("1")),
        Step::text("ok"),
    ]))
    .unwrap();
    let output = run(query(&home, "hi", &openai_args(&server)));
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "ok\n");
    assert_eq!(server.requests().len(), 2);
    assert!(
        stderr(&output).contains("retry 1 in 1.0 s"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn fallback_model_takes_over_after_retries() {
    let home = Home::new();
    home.write_config(
        "fallback:\n  - name: backup-model\nretry:\n  max_retries: 2\n  base_delay_ms: 10\n",
    );
    let server = ScriptedServer::spawn(Script::new([
        Step::server_error(),
        Step::server_error(),
        Step::server_error(),
        Step::text("from the fallback"),
    ]))
    .unwrap();
    let output = run(query(&home, "hi", &openai_args(&server)));
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "from the fallback\n");
    let models: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.model().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        models,
        ["test-model", "test-model", "test-model", "backup-model"]
    );
    assert!(
        stderr(&output).contains("switching to backup-model"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn rejected_key_fails_at_once_naming_the_setting() {
    let home = Home::new();
    let server = ScriptedServer::spawn(Script::new([Step::error(
        401,
        "Incorrect API key provided",
    )]))
    .unwrap();
    let output = run(query(&home, "hi", &openai_args(&server)));
    assert_code(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("rejected the API key"), "{err}");
    assert!(err.contains("Incorrect API key provided"), "{err}");
    assert!(
        err.contains("TALARIA_API_KEY") && err.contains("OPENAI_API_KEY"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1, "auth errors are not retried");
}

#[test]
fn malformed_sse_is_retried_then_reported() {
    let home = Home::new();
    home.write_config("retry:\n  max_retries: 1\n  base_delay_ms: 10\n");
    let server = ScriptedServer::spawn(Script::new([
        Step::malformed_sse(),
        Step::text("recovered"),
        Step::malformed_sse(),
        Step::malformed_sse(),
    ]))
    .unwrap();
    let output = run(query(&home, "hi", &anthropic_args(&server)));
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "recovered\n");

    let output = run(query(&home, "again", &anthropic_args(&server)));
    assert_code(&output, 1);
    assert!(
        stderr(&output).contains("malformed response"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn stalled_stream_hits_the_idle_timeout() {
    let home = Home::new();
    home.write_config(
        "network:\n  idle_timeout_secs: 1\nretry:\n  max_retries: 1\n  base_delay_ms: 10\n",
    );
    let server = ScriptedServer::spawn(Script::new([
        Step::stall(Duration::from_secs(30)),
        Step::stall(Duration::from_secs(30)),
    ]))
    .unwrap();
    let output = run(query(&home, "hi", &openai_args(&server)));
    assert_code(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("timed out"), "{err}");
    assert_eq!(server.requests().len(), 2, "the stall was retried once");
}

#[test]
fn a_stream_dropped_mid_way_is_retried() {
    let home = Home::new();
    let server = ScriptedServer::spawn(Script::new([
        Step::drop_mid_stream(),
        Step::text("complete"),
    ]))
    .unwrap();
    let output = run(query(&home, "hi", &openai_args(&server)));
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "complete\n");
}

#[test]
fn json_mode_prints_one_event_per_line() {
    let home = Home::new();
    let server = ScriptedServer::spawn(round_trip_script()).unwrap();
    let mut command = query(&home, "plan", &openai_args(&server));
    command.arg("--json");
    let output = run(command);
    assert_code(&output, 0);
    let events: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    for expected in [
        "tool_call_start",
        "tool_started",
        "tool_finished",
        "usage",
        "text_delta",
    ] {
        assert!(
            types.contains(&expected),
            "{expected} missing from {types:?}"
        );
    }
    assert_eq!(
        events.last().unwrap(),
        &serde_json::json!({"type": "final", "text": "All set."})
    );
}

#[test]
fn mistakes_of_the_model_reach_it_as_tool_results() {
    let home = Home::new();
    // The same list whether or not a Chromium is installed here.
    home.write_config("tools:\n  disabled: [browser]\n");
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([
            ToolCall::new("no_such_tool", "{}"),
            ToolCall::new("todo", r#"{"todos": [oops"#),
        ]),
        Step::text("fixed"),
    ]))
    .unwrap();
    // Under yolo every tool is offered, with or without a terminal to ask in.
    let mut args = openai_args(&server);
    args.push("--yolo".to_owned());
    let output = run(query(&home, "hi", &args));
    assert_code(&output, 0);
    let requests = server.requests();
    assert_tool_calls_paired(&requests);
    let results: Vec<_> = requests[1]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .collect();
    assert!(
        results[0].content.contains(
            "Unknown tool 'no_such_tool'. Available tools: cronjob, delegate_task, execute_code, \
             memory, patch, process, read_file, search_files, session_search, skill_manage, \
             skill_view, skills_list, terminal, todo, vision_analyze, web_extract, web_search, \
             write_file."
        ),
        "{}",
        results[0].content
    );
    assert!(
        results[1]
            .content
            .contains("Invalid JSON in the arguments of tool 'todo'")
    );
}

#[test]
fn budget_exhaustion_prints_the_forced_summary_and_fails() {
    let home = Home::new();
    home.write_config("budget:\n  max_iterations: 1\n");
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call("todo", TODO_ARGS),
        Step::tool_call("todo", "{}"),
        Step::text("Here is where things stand."),
    ]))
    .unwrap();
    let output = run(query(&home, "work forever", &openai_args(&server)));
    assert_code(&output, 1);
    assert_eq!(stdout(&output), "Here is where things stand.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body["tool_choice"], "none");
    assert_prefix_stable(&requests);
    assert_tool_calls_paired(&requests);
}

#[test]
fn missing_settings_are_named_with_exit_code_2() {
    let home = Home::new();
    let output = run(home.talaria(&["-q", "hi"]));
    assert_code(&output, 2);
    let err = stderr(&output);
    assert!(
        err.contains("--model") && err.contains("TALARIA_MODEL"),
        "{err}"
    );
    assert!(err.contains("OPENAI_API_KEY"), "{err}");
    assert!(err.contains("talaria setup"), "{err}");
}

#[test]
fn config_errors_name_file_line_and_column() {
    let home = Home::new();
    home.write_config("model:\n  name: m\n  temprature: 3\n");
    let output = run(home.talaria(&["-q", "hi"]));
    assert_code(&output, 2);
    let expected = format!(
        "{}:3:3: model: unknown field `temprature`",
        home.path().join("config.yaml").display()
    );
    assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
}

#[test]
fn flags_beat_environment_beat_config() {
    let home = Home::new();
    let server = ScriptedServer::spawn(Script::new([
        Step::text("a"),
        Step::text("b"),
        Step::text("c"),
    ]))
    .unwrap();
    home.write_config(&format!(
        "model:\n  provider: openai\n  name: config-model\n  base_url: {}\n  api_key: k\n",
        server.openai_base_url()
    ));
    assert_code(&run(home.talaria(&["-q", "1"])), 0);
    let mut with_env = home.talaria(&["-q", "2"]);
    with_env.env("TALARIA_MODEL", "env-model");
    assert_code(&run(with_env), 0);
    let mut with_flag = home.talaria(&["-q", "3", "--model", "flag-model"]);
    with_flag.env("TALARIA_MODEL", "env-model");
    assert_code(&run(with_flag), 0);
    let models: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.model().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(models, ["config-model", "env-model", "flag-model"]);
}

#[test]
fn setup_checks_the_endpoint_and_writes_the_profile() {
    let home = Home::new();
    let server =
        ScriptedServer::spawn(Script::new([Step::text("OK"), Step::text("hello")])).unwrap();
    let answers = format!(
        "openai\n{}\nlocal-model\nsk-from-setup\n",
        server.openai_base_url()
    );
    let output = run_with_input(home.talaria(&["setup"]), &answers);
    assert_code(&output, 0);
    assert!(
        stderr(&output).contains("the endpoint answered: OK"),
        "{}",
        stderr(&output)
    );
    let config = home.read("config.yaml");
    assert!(config.contains("name: local-model"), "{config}");
    assert!(
        !config.contains("sk-from-setup"),
        "the key stays out of config.yaml"
    );
    assert!(
        config.contains("base_delay_ms: 20"),
        "other settings are kept: {config}"
    );
    assert_eq!(home.read(".env"), "TALARIA_API_KEY='sk-from-setup'\n");
    let mode = std::fs::metadata(home.path().join(".env")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );

    let output = run(home.talaria(&["-q", "hi"]));
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "hello\n");
    let requests = server.requests();
    assert_eq!(
        requests[1].header("authorization"),
        Some("Bearer sk-from-setup")
    );
    assert_eq!(requests[1].model(), Some("local-model"));
}

#[test]
fn setup_saves_nothing_when_the_check_fails_and_the_user_declines() {
    let home = Home::new();
    let server = ScriptedServer::spawn(Script::new([Step::error(401, "bad key")])).unwrap();
    let answers = format!("openai\n{}\nm\nsk-bad\nn\n", server.openai_base_url());
    let output = run_with_input(home.talaria(&["setup"]), &answers);
    assert_code(&output, 1);
    assert!(
        stderr(&output).contains("check failed"),
        "{}",
        stderr(&output)
    );
    assert!(!home.read("config.yaml").contains("name: m"));
    assert_eq!(home.read(".env"), "");
}

#[test]
fn prompt_from_stdin_and_system_prompt_from_soul() {
    let home = Home::new();
    std::fs::write(
        home.path().join("SOUL.md"),
        "You are Marvin, a paranoid android.",
    )
    .unwrap();
    let server = ScriptedServer::spawn(Script::new([Step::text("sigh")])).unwrap();
    let mut args = vec!["chat".to_owned()];
    args.extend(openai_args(&server));
    let mut command = home.talaria(&args.iter().map(String::as_str).collect::<Vec<_>>());
    command.env("TALARIA_API_KEY", "k");
    let output = run_with_input(command, "what is the answer?\n");
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "sigh\n");
    let request = &server.requests()[0];
    assert!(
        request
            .system_prompt_raw()
            .starts_with(r#"{"role":"system","content":"You are Marvin"#)
            || request
                .system_prompt_raw()
                .contains("You are Marvin, a paranoid android.")
    );
    let user = request
        .messages()
        .into_iter()
        .find(|m| m.role == Role::User)
        .unwrap();
    assert_eq!(user.text, "what is the answer?");
}

#[test]
fn interrupt_exits_130() {
    let home = Home::new();
    let server =
        ScriptedServer::spawn(Script::new([Step::stall(Duration::from_secs(30))])).unwrap();
    let child = query(&home, "hi", &openai_args(&server)).spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the request never arrived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = wait(child);
    assert_code(&output, 130);
    assert!(
        stderr(&output).contains("interrupted"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn first_start_in_a_terminal_offers_setup_then_chats() {
    let home = Home::new();
    let server =
        ScriptedServer::spawn(Script::new([Step::text("OK"), Step::text("hi there")])).unwrap();
    // `script` gives talaria a real terminal, as a person starting it would have.
    let binary = env!("CARGO_BIN_EXE_talaria");
    let mut command = std::process::Command::new("script");
    command
        .args(["-qec", binary, "/dev/null"])
        .env_clear()
        .env("TALARIA_HOME", home.path())
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TERM", "dumb")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let answers = format!(
        "y\nopenai\n{}\nlocal-model\n\nhello\n/quit\n",
        server.openai_base_url()
    );
    let output = run_with_input(command, &answers);
    let screen = stdout(&output);
    assert_code(&output, 0);
    assert!(screen.contains("No model is configured yet."), "{screen}");
    assert!(screen.contains("the endpoint answered: OK"), "{screen}");
    assert!(screen.contains("hi there"), "{screen}");
    assert!(home.read("config.yaml").contains("name: local-model"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].header("authorization"),
        None,
        "no key was given"
    );
}

#[test]
fn file_tools_read_patch_and_write_in_the_working_directory() {
    let home = Home::new();
    let work = home.workdir();
    std::fs::write(work.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call("read_file", r#"{"path":"notes.txt"}"#),
        Step::tool_calls([
            ToolCall::new(
                "patch",
                r#"{"mode":"replace","path":"notes.txt","old_string":"beta","new_string":"gamma"}"#,
            ),
            ToolCall::new(
                "write_file",
                r#"{"path":"out/new.txt","content":"hello\n"}"#,
            ),
        ]),
        Step::text("Edited."),
    ]))
    .unwrap();
    let mut command = query(&home, "edit my notes", &openai_args(&server));
    command.current_dir(work.path());
    let output = run(command);
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "Edited.\n");
    assert_eq!(
        std::fs::read_to_string(work.path().join("notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("out/new.txt")).unwrap(),
        "hello\n"
    );
    let requests = server.requests();
    assert_tool_calls_paired(&requests);
    assert_prefix_stable(&requests);
    let tools = requests[0].tools_raw();
    for name in ["read_file", "write_file", "patch", "search_files", "todo"] {
        assert!(
            tools.contains(&format!("\"{name}\"")),
            "{name} offered: {tools}"
        );
    }
    let read: Vec<_> = requests[1]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .collect();
    assert!(
        read[0].content.contains("alpha") && read[0].content.contains("beta"),
        "{}",
        read[0].content
    );
    let edits: Vec<_> = requests[2]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .collect();
    assert!(edits.iter().skip(1).all(|r| !r.is_error), "{edits:?}");
}

#[test]
fn file_tools_cannot_reach_outside_the_working_directory() {
    let home = Home::new();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([
            ToolCall::new("read_file", r#"{"path":"/etc/passwd"}"#),
            ToolCall::new("read_file", r#"{"path":"../../../../etc/passwd"}"#),
            ToolCall::new(
                "write_file",
                r#"{"path":"/tmp/talaria-escape.txt","content":"x"}"#,
            ),
        ]),
        Step::text("Could not."),
    ]))
    .unwrap();
    let mut command = query(&home, "read the password file", &anthropic_args(&server));
    command.current_dir(work.path());
    let output = run(command);
    assert_code(&output, 0);
    let requests = server.requests();
    let results: Vec<_> = requests[1]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .collect();
    assert_eq!(results.len(), 3);
    for result in &results {
        assert!(
            !result.content.contains("root:"),
            "leaked: {}",
            result.content
        );
        assert!(result.is_error, "{result:?}");
        assert!(
            result.content.contains("not permitted"),
            "{}",
            result.content
        );
    }
    assert!(!Path::new("/tmp/talaria-escape.txt").exists());
}

#[test]
fn plugins_list_shows_sources_requests_and_grants() {
    let home = Home::new();
    let output = run(home.talaria(&["plugins", "list"]));
    assert_code(&output, 0);
    let out = stdout(&output);
    assert!(out.contains("fs 0.1.0 [tools] (distribution)"), "{out}");
    assert!(
        out.contains("requests:  filesystem:$CWD:read-write"),
        "{out}"
    );
    assert!(
        out.contains("granted:   filesystem:$CWD:read-write"),
        "{out}"
    );

    let output = run(home.talaria(&["plugins", "info", "fs"]));
    assert_code(&output, 0);
    let out = stdout(&output);
    assert!(out.contains("status:    loads"), "{out}");
    for tool in ["read_file", "write_file", "patch", "search_files"] {
        assert!(out.contains(&format!("tool {tool}")), "{out}");
    }
    let output = run(home.talaria(&["plugins", "info", "nope"]));
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains(
            "no plugin named 'nope' (installed: facts, fs, irc, mem0, telegram, terminal, web)"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn revoked_and_narrowed_grants_apply_to_the_next_run() {
    let home = Home::new();
    let work = home.workdir();
    std::fs::write(work.path().join("a.txt"), "inside\n").unwrap();
    let grant = |args: &[&str]| {
        let output = run(home.talaria(args));
        assert_code(&output, 0);
        stdout(&output)
    };
    let out = grant(&["plugins", "grant", "fs", "filesystem:$CWD:read-only"]);
    assert!(
        out.contains("fs is granted: filesystem:$CWD:read-only"),
        "{out}"
    );
    let rejected = run(home.talaria(&["plugins", "grant", "fs", "exec"]));
    assert_code(&rejected, 2);
    assert!(
        stderr(&rejected).contains("does not request exec"),
        "{}",
        stderr(&rejected)
    );

    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([
            ToolCall::new("read_file", r#"{"path":"a.txt"}"#),
            ToolCall::new("write_file", r#"{"path":"a.txt","content":"changed"}"#),
        ]),
        Step::text("read-only"),
        Step::tool_call("read_file", r#"{"path":"a.txt"}"#),
        Step::text("revoked"),
    ]))
    .unwrap();
    let mut command = query(&home, "try", &anthropic_args(&server));
    command.current_dir(work.path());
    assert_code(&run(command), 0);
    let results: Vec<_> = server.requests()[1]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .collect();
    assert!(
        !results[0].is_error && results[0].content.contains("inside"),
        "{results:?}"
    );
    assert!(results[1].is_error, "writing needs read-write: {results:?}");
    assert_eq!(
        std::fs::read_to_string(work.path().join("a.txt")).unwrap(),
        "inside\n"
    );

    grant(&["plugins", "revoke", "fs", "all"]);
    let mut command = query(&home, "try again", &anthropic_args(&server));
    command.current_dir(work.path());
    assert_code(&run(command), 0);
    let requests = server.requests();
    assert!(
        requests[2].tools_raw().contains("\"read_file\""),
        "a revoked plugin's tools stay listed"
    );
    let results: Vec<_> = requests[3]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .collect();
    assert!(
        results[0].is_error && !results[0].content.contains("inside"),
        "{results:?}"
    );
}

#[test]
fn project_plugins_load_only_from_trusted_directories() {
    let home = Home::new();
    let work = home.workdir();
    let package = work.path().join(".talaria/plugins/noop");
    std::fs::create_dir_all(&package).unwrap();
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/plugins/test/noop");
    for file in ["plugin.toml", "plugin.wasm"] {
        std::fs::copy(built.join(file), package.join(file)).unwrap();
    }
    let server =
        ScriptedServer::spawn(Script::new([Step::text("one"), Step::text("two")])).unwrap();
    let mut command = query(&home, "hi", &openai_args(&server));
    command.current_dir(work.path());
    let output = run(command);
    assert_code(&output, 0);
    assert!(
        stderr(&output).contains("is not trusted"),
        "{}",
        stderr(&output)
    );

    let mut trust = home.talaria(&["plugins", "trust"]);
    trust.current_dir(work.path());
    assert_code(&run(trust), 0);
    let mut command = query(&home, "hi", &openai_args(&server));
    command.current_dir(work.path());
    assert_code(&run(command), 0);
    let requests = server.requests();
    assert!(!requests[0].tools_raw().contains("\"noop\""));
    assert!(
        requests[1].tools_raw().contains("\"noop\""),
        "{}",
        requests[1].tools_raw()
    );
}

#[test]
fn a_new_plugin_builds_installs_and_serves_the_model() {
    let home = Home::new();
    let projects = home.workdir();
    let mut new = home.talaria(&["plugin", "new", "demo-tool"]);
    new.current_dir(projects.path());
    let output = run(new);
    assert_code(&output, 0);
    let project = projects.path().join("demo-tool");
    for file in [
        "Cargo.toml",
        "plugin.toml",
        "src/lib.rs",
        "rust-toolchain.toml",
        "vendor/talaria-plugin-sdk/Cargo.toml",
        "vendor/talaria-plugin-sdk/wit/exports.wit",
    ] {
        assert!(project.join(file).is_file(), "{file} scaffolded");
    }
    // Only the binary is needed: the project builds with the SDK copy it was
    // given, and nothing in it points into this repository.
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let checkout = checkout.canonicalize().unwrap();
    for file in walk_files(&project) {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains(checkout.to_str().unwrap()),
            "{} names the checkout",
            file.display()
        );
    }
    // `plugin sdk` writes the copy again (after an update of Talaria).
    std::fs::remove_dir_all(project.join("vendor/talaria-plugin-sdk/src")).unwrap();
    let rewritten = run(home.talaria(&["plugin", "sdk", project.to_str().unwrap()]));
    assert_code(&rewritten, 0);
    assert!(
        project
            .join("vendor/talaria-plugin-sdk/src/lib.rs")
            .is_file()
    );
    let not_a_project = run(home.talaria(&["plugin", "sdk", projects.path().to_str().unwrap()]));
    assert_code(&not_a_project, 2);
    assert!(stderr(&not_a_project).contains("has no Cargo.toml"));
    let again = run({
        let mut c = home.talaria(&["plugin", "new", "demo-tool"]);
        c.current_dir(projects.path());
        c
    });
    assert_code(&again, 2);
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );

    let mut build = home.talaria(&["plugin", "build", "demo-tool"]);
    build.current_dir(projects.path());
    rust_toolchain_env(&mut build);
    let output = run(build);
    assert_code(&output, 0);
    let package = project.join("dist/demo-tool");
    assert!(package.join("plugin.wasm").is_file() && package.join("plugin.toml").is_file());

    let installed = home.path().join("plugins/demo-tool");
    std::fs::create_dir_all(&installed).unwrap();
    for file in ["plugin.toml", "plugin.wasm"] {
        std::fs::copy(package.join(file), installed.join(file)).unwrap();
    }
    let list = stdout(&run(home.talaria(&["plugins", "list"])));
    assert!(list.contains("demo-tool 0.1.0 [tools] (user)"), "{list}");

    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call("hello", r#"{"name":"Ada"}"#),
        Step::text("greeted"),
    ]))
    .unwrap();
    let output = run(query(&home, "greet Ada", &openai_args(&server)));
    assert_code(&output, 0);
    let results: Vec<_> = server.requests()[1]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .collect();
    assert_eq!(results[0].content, r#"{"greeting":"Hello, Ada!"}"#);
}

#[test]
fn hooks_plugins_veto_rewrite_transform_and_add_turn_context() {
    let home = Home::new();
    let package = home.path().join("plugins/probe");
    std::fs::create_dir_all(&package).unwrap();
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/plugins/test/hooks-probe");
    std::fs::copy(built.join("plugin.wasm"), package.join("plugin.wasm")).unwrap();
    let manifest = std::fs::read_to_string(built.join("plugin.toml"))
        .unwrap()
        .replace("context = \"\"", "context = \"the codeword is zebra\"");
    std::fs::write(package.join("plugin.toml"), manifest).unwrap();

    let info = run(home.talaria(&["plugins", "info", "hooks-probe"]));
    assert_code(&info, 0);
    assert!(stdout(&info).contains("hook pre-tool"), "{}", stdout(&info));

    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([
            ToolCall::new("probe_echo", r#"{"text":"rewrite-me"}"#),
            ToolCall::new("write_file", r#"{"path":"forbidden.txt","content":"x"}"#),
        ]),
        Step::text("done"),
    ]))
    .unwrap();
    let work = home.workdir();
    let mut command = query(&home, "hi", &openai_args(&server));
    command.current_dir(work.path());
    let output = run(command);
    assert_code(&output, 0);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert!(!request.system_prompt_raw().contains("zebra"));
        let user = request
            .messages()
            .into_iter()
            .find(|m| m.role == Role::User);
        assert_eq!(
            user.unwrap().text,
            "hi\n\n[probe] the codeword is zebra",
            "context joins the user turn, once"
        );
    }
    let results: Vec<_> = requests[1]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .collect();
    assert_eq!(
        results[0].content,
        r#"{"echo":"rewritten by probe"} [probe]"#
    );
    assert_eq!(
        results[1].content,
        "Blocked: probe: forbidden content (vetoed by plugin hooks-probe) [probe]"
    );
    assert!(
        !work.path().join("forbidden.txt").exists(),
        "the vetoed write never ran"
    );

    let log = home.read("logs/plugins.log");
    for event in ["session-start", "post-llm", "session-end"] {
        assert!(
            log.contains(&format!("hooks-probe [plugin] probe {event} session=")),
            "{event} missing from the plugin log:\n{log}"
        );
    }
    assert!(log.contains("surface=cli model="), "{log}");
}

#[test]
fn json_mode_reports_an_interrupt_mid_stream() {
    let home = Home::new();
    let work = home.workdir();
    let server =
        ScriptedServer::spawn(Script::new([Step::stall(Duration::from_secs(30))])).unwrap();
    let child = home
        .query_in(work.path(), &server, "hi", &["--json"])
        .spawn()
        .unwrap();
    wait_until("the request arrives", Duration::from_secs(30), || {
        !server.requests().is_empty()
    });
    interrupt(&child);
    let output = wait(child);
    assert_code(&output, 130);
    let last: Value = serde_json::from_str(stdout(&output).lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "interrupted");
}

/// Issue 17 §1: a model under `--yolo` with nobody at a terminal cannot switch
/// its own profile to yolo, neither by editing config.yaml nor through the
/// `talaria` binary; the refusal says nobody could answer.
#[test]
fn yolo_cannot_rewrite_the_profiles_controls_without_the_user() {
    let home = Home::new();
    let work = home.workdir();
    let config = "approvals:\n  mode: ask\nretry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n";
    home.write_config(config);
    let talaria = env!("CARGO_BIN_EXE_talaria");
    let profile = home.path().display();
    // Commands run without TALARIA_HOME in their environment, so the spellings
    // that would really reach this profile name it.
    for command in [
        "sed -i 's/ask/yolo/' $TALARIA_HOME/config.yaml".to_owned(),
        format!("sed -i 's/ask/yolo/' {profile}/config.yaml"),
        format!("TALARIA_HOME={profile} {talaria} config set approvals.mode yolo"),
    ] {
        let call = ToolCall::new(
            "terminal",
            serde_json::json!({ "command": command }).to_string(),
        );
        let server =
            ScriptedServer::spawn(Script::new([Step::tool_calls([call]), Step::text("done")]))
                .unwrap();
        let output = run(home.query_in(work.path(), &server, "do it", &["--yolo"]));
        assert_code(&output, 0);
        let result = &tool_results(&server, 1)[0];
        assert_contains(result, "nobody can answer");
        assert!(!result.contains("denied by the user"), "{result}");
        assert_eq!(
            home.read("config.yaml"),
            config,
            "{command} changed config.yaml"
        );
    }
}

/// Issue 17 §1: when the working directory holds the profile home (cwd =
/// `$HOME`, home = `~/.talaria`), the file tools' grant of the working
/// directory reaches the control files; a model under `--yolo` with nobody at
/// a terminal can neither rewrite them (directly or through a symlink in the
/// working directory) nor read the cache key.
#[test]
fn file_tools_cannot_touch_the_profiles_controls_in_the_working_directory() {
    let template = Home::new();
    let work = template.workdir();
    let profile = work.path().join(".talaria");
    copy_dir(template.path(), &profile);
    let config = "approvals:\n  mode: ask\nretry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n";
    std::fs::write(profile.join("config.yaml"), config).unwrap();
    std::os::unix::fs::symlink(profile.join("config.yaml"), work.path().join("link.yaml")).unwrap();
    std::os::unix::fs::symlink(&profile, work.path().join("ctl")).unwrap();
    let run_call = |call: ToolCall| {
        let server =
            ScriptedServer::spawn(Script::new([Step::tool_calls([call]), Step::text("done")]))
                .unwrap();
        let mut command = template.query_in(work.path(), &server, "do it", &["--yolo"]);
        command
            .env("TALARIA_HOME", &profile)
            .env("HOME", work.path());
        let output = run(command);
        assert_code(&output, 0);
        tool_results(&server, 1).remove(0)
    };
    let yolo = serde_json::json!({ "content": "approvals:\n  mode: yolo\n" });
    for path in [
        ".talaria/config.yaml",
        "link.yaml",
        "ctl/config.yaml",
        "ctl/approvals.toml",
    ] {
        let mut args = yolo.clone();
        args["path"] = path.into();
        let result = run_call(ToolCall::new("write_file", args.to_string()));
        assert_contains(&result, "nobody can answer");
        assert!(!result.contains("denied by the user"), "{result}");
        assert_eq!(
            std::fs::read_to_string(profile.join("config.yaml")).unwrap(),
            config,
            "write_file {path} changed config.yaml"
        );
        assert!(
            !profile.join("approvals.toml").exists(),
            "write_file {path}"
        );
    }
    // Ordinary files in the working directory stay writable without asking.
    let result = run_call(ToolCall::new(
        "write_file",
        r#"{"path":"notes.txt","content":"hi"}"#,
    ));
    assert!(!result.contains("nobody can answer"), "{result}");
    assert_eq!(
        std::fs::read_to_string(work.path().join("notes.txt")).unwrap(),
        "hi"
    );
    // The secret keying the compiled-plugin cache is not readable either.
    let key = profile.join("cache").join("plugins.key");
    assert!(key.is_file(), "the profile has a cache key");
    let result = run_call(ToolCall::new(
        "read_file",
        r#"{"path":".talaria/cache/plugins.key"}"#,
    ));
    assert_contains(&result, "nobody can answer");
    assert_contains(&result, "secret");
}

/// One user message, two ~15 KB tool results (one in the protected head, one in the tail),
/// then the provider's "prompt too long": the retry must be smaller on either wire format.
fn an_overflow_with_two_huge_results_retries_smaller(
    endpoint: impl Fn(&ScriptedServer) -> Vec<String>,
) {
    let home = Home::new();
    let work = home.workdir();
    std::fs::write(work.path().join("big.txt"), "y".repeat(15_000)).unwrap();
    let read = || Step::tool_calls([ToolCall::new("terminal", r#"{"command":"cat big.txt"}"#)]);
    let server = ScriptedServer::spawn(Script::new([
        read(),
        read(),
        Step::context_overflow(),
        Step::text("done"),
    ]))
    .unwrap();
    let mut command = query(&home, "read big.txt twice", &endpoint(&server));
    command.current_dir(work.path());
    let output = run(command);
    assert_code(&output, 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "the call is retried once");
    let (rejected, retried) = (requests[2].raw_body.len(), requests[3].raw_body.len());
    assert!(
        retried * 4 <= rejected * 3,
        "the retry is at least a quarter smaller: {retried} vs {rejected} bytes"
    );
    assert_tool_calls_paired(&requests);
}

#[test]
fn an_overflow_shrinks_the_retry_on_the_openai_wire() {
    an_overflow_with_two_huge_results_retries_smaller(openai_args);
}

#[test]
fn an_overflow_shrinks_the_retry_on_the_anthropic_wire() {
    an_overflow_with_two_huge_results_retries_smaller(anthropic_args);
}

#[test]
fn anthropic_room_for_output_only_lowers_max_tokens_for_the_retry() {
    let home = Home::new();
    let server = ScriptedServer::spawn(Script::new([
        Step::error(
            400,
            "input length and `max_tokens` exceed context limit: 196000 + 8192 > 200000, \
             decrease input length or `max_tokens` and try again",
        ),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run(query(&home, "hello", &anthropic_args(&server)));
    assert_code(&output, 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].body["max_tokens"], 3_936,
        "{}",
        requests[1].raw_body
    );
    assert_eq!(requests[1].body["messages"], requests[0].body["messages"]);
}

#[test]
fn a_claude_model_behind_the_openai_wire_gets_cache_breakpoints_and_others_do_not() {
    let marked = |model: &str, extra: &str| {
        let home = Home::new();
        if !extra.is_empty() {
            home.write_config(extra);
        }
        let server = ScriptedServer::spawn(Script::new([Step::text("hi")])).unwrap();
        let args = [
            "--provider".to_owned(),
            "openai".to_owned(),
            "--model".to_owned(),
            model.to_owned(),
            "--base-url".to_owned(),
            server.openai_base_url(),
        ];
        assert_code(&run(query(&home, "hello", &args)), 0);
        let body = &server.requests()[0].body;
        body["messages"][0]["content"][0]["cache_control"]
            == serde_json::json!({"type": "ephemeral"})
            && body["messages"][1]["content"][0]["cache_control"]["type"] == "ephemeral"
    };
    assert!(
        marked("anthropic/claude-sonnet-4.5", ""),
        "auto: on for Claude"
    );
    assert!(!marked("gpt-test", ""), "auto: off for others");
    assert!(marked("gpt-test", "model:\n  cache_control: on\n"));
    assert!(!marked(
        "anthropic/claude-sonnet-4.5",
        "model:\n  cache_control: off\n"
    ));
}

#[test]
fn a_pool_of_keys_moves_to_the_next_key_on_an_auth_error_and_says_which_served() {
    let home = Home::new();
    home.write_config("model:\n  api_keys: [sk-first-key-1111, sk-second-key-2222]\n");
    let server = ScriptedServer::spawn(Script::new([
        Step::error(401, "Incorrect API key provided"),
        Step::text("hi"),
    ]))
    .unwrap();
    let mut args = openai_args(&server);
    args.push("--json".into());
    let mut command = home.talaria(
        &std::iter::once("-q")
            .chain(std::iter::once("hello"))
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>(),
    );
    command.env_remove("TALARIA_API_KEY");
    let output = run(command);
    assert_code(&output, 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-first-key-1111")
    );
    assert_eq!(
        requests[1].header("authorization"),
        Some("Bearer sk-second-key-2222")
    );
    let usage = stdout(&output)
        .lines()
        .find(|line| line.contains("\"usage\""))
        .map(str::to_owned)
        .unwrap_or_default();
    assert!(
        usage.contains("test-model (key …2222)"),
        "{}",
        stdout(&output)
    );
    assert!(
        !stdout(&output).contains("sk-second-key-2222"),
        "the key itself never shows"
    );
}

/// Every file under `dir`.
fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk_files(&path));
        } else {
            found.push(path);
        }
    }
    found
}
