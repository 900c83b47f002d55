//! The terminal plugin through the real binary: commands run in the working
//! directory, dangerous ones need approval (denied when nobody can answer,
//! allowed with --yolo), hardline ones never run, background processes are
//! managed with `process`, and a disabled toolset never reaches the model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;
use std::time::Duration;

use common::*;
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

fn query(home: &Home, work: &std::path::Path, server: &ScriptedServer, extra: &[&str]) -> Output {
    run(home.query_in(work, server, "do it", extra))
}

fn results(server: &ScriptedServer, index: usize) -> Vec<String> {
    tool_results(server, index)
}

fn terminal(command: &str) -> ToolCall {
    ToolCall::new(
        "terminal",
        serde_json::json!({ "command": command }).to_string(),
    )
}

#[test]
fn commands_run_in_the_working_directory() {
    let home = Home::new();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal(
            "echo hello > made.txt && cat made.txt && pwd; exit 3",
        )]),
        Step::text("done"),
    ]))
    .unwrap();
    let output = query(&home, work.path(), &server, &[]);
    assert_code(&output, 0);
    let result: serde_json::Value = serde_json::from_str(&results(&server, 1)[0]).unwrap();
    let canonical = work.path().canonicalize().unwrap();
    assert_eq!(
        result["output"],
        format!("hello\n{}\n", canonical.display()),
        "{result}"
    );
    assert_eq!(result["exit_code"], 3);
    assert!(work.path().join("made.txt").is_file());
}

#[test]
fn dangerous_commands_are_denied_without_a_terminal_and_run_with_yolo() {
    let home = Home::new();
    let work = home.workdir();
    std::fs::create_dir(work.path().join("build")).unwrap();
    let script = || {
        Script::new([
            Step::tool_calls([terminal("rm -rf build")]),
            Step::text("done"),
        ])
    };
    let server = ScriptedServer::spawn(script()).unwrap();
    assert_code(&query(&home, work.path(), &server, &[]), 0);
    let denied = &results(&server, 1)[0];
    assert!(denied.contains("denied"), "{denied}");
    assert!(work.path().join("build").is_dir(), "nothing was deleted");

    let server = ScriptedServer::spawn(script()).unwrap();
    assert_code(&query(&home, work.path(), &server, &["--yolo"]), 0);
    assert!(!work.path().join("build").exists(), "--yolo let it run");
}

#[test]
fn hardline_commands_never_run_even_with_yolo() {
    let home = Home::new();
    let work = home.workdir();
    // Harmless if it did run (there is no such device), but mkfs is hardline.
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal("mkfs.ext4 /dev/talaria-no-such-disk")]),
        Step::text("done"),
    ]))
    .unwrap();
    assert_code(&query(&home, work.path(), &server, &["--yolo"]), 0);
    let blocked = &results(&server, 1)[0];
    assert!(blocked.contains("hardline"), "{blocked}");
}

#[test]
fn background_processes_are_polled_waited_for_and_listed() {
    let home = Home::new();
    let work = home.workdir();
    let background = ToolCall::new(
        "terminal",
        serde_json::json!({ "command": "echo started; sleep 0.3; echo finished", "background": true })
            .to_string(),
    );
    let process = |args: serde_json::Value| ToolCall::new("process", args.to_string());
    // The scripted model cannot read the id; the table numbers from 1.
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([background]),
        Step::tool_calls([process(
            serde_json::json!({"action": "wait", "session_id": "1", "timeout": 30}),
        )]),
        Step::tool_calls([process(serde_json::json!({"action": "list"}))]),
        Step::tool_calls([process(
            serde_json::json!({"action": "kill", "session_id": "99"}),
        )]),
        Step::text("done"),
    ]))
    .unwrap();
    assert_code(&query(&home, work.path(), &server, &[]), 0);
    let started: serde_json::Value = serde_json::from_str(&results(&server, 1)[0]).unwrap();
    assert_eq!(started["session_id"], "1", "{started}");
    let waited: serde_json::Value = serde_json::from_str(&results(&server, 2)[1]).unwrap();
    assert_eq!(waited["status"], "exited", "{waited}");
    assert_eq!(waited["exit_code"], 0);
    assert_eq!(waited["output"], "started\nfinished\n");
    let listed: serde_json::Value = serde_json::from_str(&results(&server, 3)[2]).unwrap();
    assert_eq!(listed["processes"][0]["session_id"], "1", "{listed}");
    let missing = &results(&server, 4)[3];
    assert!(missing.contains("no background process 99"), "{missing}");
}

#[test]
fn a_disabled_toolset_never_reaches_the_model() {
    let home = Home::new();
    home.write_config("tools:\n  disabled: [terminal]\n");
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([Step::text("done")])).unwrap();
    assert_code(&query(&home, work.path(), &server, &[]), 0);
    let tools = server.requests()[0].tools_raw();
    assert!(
        !tools.contains("\"terminal\"") && !tools.contains("\"process\""),
        "{tools}"
    );
    assert!(tools.contains("\"read_file\""), "{tools}");
}

#[test]
fn interrupting_a_running_command_kills_its_whole_process_group() {
    let home = Home::new();
    let work = home.workdir();
    // A duration no other process uses, to find exactly these sleeps.
    let marker = format!("{}", 7000 + std::process::id() % 1000);
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal(&format!("sleep {marker} & sleep {marker}; wait"))]),
        Step::text("never reached"),
    ]))
    .unwrap();
    let child = home
        .query_in(work.path(), &server, "wait", &[])
        .spawn()
        .unwrap();
    wait_until("the sleeps start", Duration::from_secs(60), || {
        processes_running(&["sleep", &marker]).len() == 2
    });
    interrupt(&child);
    let output = wait(child);
    assert_code(&output, 130);
    wait_until(
        "no sleep survives the interrupt",
        Duration::from_secs(10),
        || processes_running(&["sleep", &marker]).is_empty(),
    );
}

#[test]
fn json_mode_reports_an_interrupt_mid_tool_and_answers_the_call() {
    let home = Home::new();
    let work = home.workdir();
    let marker = format!("{}", 6000 + std::process::id() % 1000);
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal(&format!("sleep {marker}"))]),
        Step::text("never reached"),
    ]))
    .unwrap();
    let child = home
        .query_in(work.path(), &server, "wait", &["--json"])
        .spawn()
        .unwrap();
    wait_until("the command starts", Duration::from_secs(60), || {
        !processes_running(&["sleep", &marker]).is_empty()
    });
    interrupt(&child);
    let output = wait(child);
    assert_code(&output, 130);
    let events: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_finished")
        .unwrap_or_else(|| panic!("no tool_finished event: {events:?}"));
    assert_eq!(finished["is_error"], true);
    assert!(
        finished["content"]
            .as_str()
            .unwrap()
            .contains("interrupted by user"),
        "{finished}"
    );
    assert_eq!(events.last().unwrap()["type"], "interrupted", "{events:?}");
}
