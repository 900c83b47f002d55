//! `execute_code` through the real binary: a script calls the session's
//! tools through `talaria_tools` and only its output comes back, in one
//! model turn that the iteration budget refunds; a failing script is an
//! error result; an interrupt kills the script.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;

use common::*;
use serde_json::Value;
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

fn query(home: &Home, work: &std::path::Path, server: &ScriptedServer) -> Output {
    run(home.query_in(work, server, "do it", &["--json"]))
}

fn execute_code(code: &str) -> ToolCall {
    ToolCall::new(
        "execute_code",
        serde_json::json!({ "code": code }).to_string(),
    )
}

/// The `--json` events of a run.
fn events(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The tool results the model saw in request `index`, in call order.
fn results(server: &ScriptedServer, index: usize) -> Vec<String> {
    server.requests()[index]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .map(|r| r.content)
        .collect()
}

/// Scratch directories the runs left in the profile home.
fn leftovers(home: &Home) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(home.path().join("tmp"))
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[test]
fn a_script_reads_two_files_in_one_turn_and_prints_the_result() {
    let home = Home::new();
    let work = home.workdir();
    std::fs::write(work.path().join("a.txt"), "alpha from a\n").unwrap();
    std::fs::write(work.path().join("b.txt"), "beta from b\n").unwrap();
    let code = "from talaria_tools import read_file\n\
                a = read_file('a.txt')['content']\n\
                b = read_file(path='b.txt')['content']\n\
                print('A=' + a.split('\\t', 1)[1])\n\
                print('B=' + b.split('\\t', 1)[1])\n";
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([execute_code(code)]),
        Step::text("both read"),
    ]))
    .unwrap();
    let output = query(&home, work.path(), &server);
    assert_code(&output, 0);

    assert!(
        server.requests()[0]
            .tools_raw()
            .contains("\"execute_code\"")
    );
    assert_eq!(
        server.requests().len(),
        2,
        "one turn with the call, one answer"
    );
    let seen = results(&server, 1);
    assert_eq!(seen.len(), 1, "exactly one tool result: {seen:?}");
    let result: Value = serde_json::from_str(&seen[0]).unwrap();
    assert_eq!(result["status"], "success", "{result}");
    assert_eq!(
        result["output"], "A=alpha from a\nB=beta from b\n",
        "{result}"
    );
    assert_eq!(result["tool_calls_made"], 2);

    let events = events(&output);
    let started = of_type(&events, "tool_started");
    assert_eq!(started.len(), 1, "the script's calls are not model calls");
    assert_eq!(started[0]["name"], "execute_code");
    assert_eq!(of_type(&events, "model_request").len(), 2);
    assert!(of_type(&events, "budget_warning").is_empty());
    assert_eq!(of_type(&events, "final")[0]["text"], "both read");
    assert!(leftovers(&home).is_empty(), "{:?}", leftovers(&home));
}

#[test]
fn turns_that_only_run_code_are_refunded() {
    let home = Home::new();
    home.write_config("budget:\n  max_iterations: 2\n");
    let work = home.workdir();
    let step = |n: u32| {
        Step::tool_calls([execute_code(&format!(
            "from talaria_tools import write_file\nwrite_file('step{n}.txt', 'turn {n}')\nprint({n})\n"
        ))])
    };
    // Three turns of code and an answer with a budget of two: only the
    // refunds let the answer come without a budget warning or summary.
    let server = ScriptedServer::spawn(Script::new([
        step(1),
        step(2),
        step(3),
        Step::text("all done"),
    ]))
    .unwrap();
    let output = query(&home, work.path(), &server);
    assert_code(&output, 0);
    let events = events(&output);
    assert!(
        of_type(&events, "budget_warning").is_empty(),
        "{}",
        stdout(&output)
    );
    assert_eq!(of_type(&events, "final")[0]["text"], "all done");
    assert_eq!(server.requests().len(), 4);
    for request in server.requests() {
        for message in request.messages() {
            assert!(
                !message.text.contains("budget for this task")
                    && !message.text.contains("is exhausted"),
                "{}",
                message.text
            );
        }
    }
    for n in 1..=3 {
        assert_eq!(
            std::fs::read_to_string(work.path().join(format!("step{n}.txt"))).unwrap(),
            format!("turn {n}")
        );
    }
}

#[test]
fn script_failures_and_refused_tools_reach_the_model() {
    let home = Home::new();
    let work = home.workdir();
    let refused = "import talaria_tools as t\n\
                   try:\n    t._call('todo', {})\nexcept t.ToolError as e:\n    print('refused:', e)\n\
                   try:\n    t.read_file('missing.txt')\nexcept t.ToolError as e:\n    print('failed:', e)\n";
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([execute_code(refused)]),
        Step::tool_calls([execute_code("print('partial')\nraise ValueError('boom')\n")]),
        Step::text("done"),
    ]))
    .unwrap();
    let output = query(&home, work.path(), &server);
    assert_code(&output, 0);
    let first: Value = serde_json::from_str(&results(&server, 1)[0]).unwrap();
    let printed = first["output"].as_str().unwrap();
    assert!(
        printed.contains("refused: tool 'todo' cannot be called from execute_code"),
        "{printed}"
    );
    assert!(printed.contains("failed: "), "{printed}");
    assert!(printed.contains("missing.txt"), "{printed}");

    let events = events(&output);
    let finished = of_type(&events, "tool_finished");
    assert_eq!(finished.len(), 2);
    assert_eq!(finished[0]["is_error"], false);
    assert_eq!(finished[1]["is_error"], true);
    let second: Value = serde_json::from_str(&results(&server, 2)[1]).unwrap();
    assert_eq!(second["status"], "error", "{second}");
    assert_eq!(second["exit_code"], 1);
    assert_eq!(second["output"], "partial\n");
    let stderr = second["stderr"].as_str().unwrap();
    assert!(stderr.contains("ValueError: boom"), "{stderr}");
}

/// Whether process `pid` still runs (a zombie does not count).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn an_interrupt_kills_the_running_script_and_removes_its_files() {
    let home = Home::new();
    let work = home.workdir();
    let code = "import os, time\n\
                open('pid.tmp', 'w').write(str(os.getpid()))\n\
                os.rename('pid.tmp', 'pid')\n\
                time.sleep(600)\n";
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([execute_code(code)]),
        Step::text("never reached"),
    ]))
    .unwrap();
    let child = home
        .query_in(work.path(), &server, "wait", &[])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let pid: u32 = loop {
        if let Ok(text) = std::fs::read_to_string(work.path().join("pid")) {
            break text.parse().unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the script never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(alive(pid));
    assert_eq!(leftovers(&home).len(), 1, "the run's scratch directory");
    interrupt(&child);
    let output = wait(child);
    assert_code(&output, 130);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "the script survived the interrupt"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(leftovers(&home).is_empty(), "{:?}", leftovers(&home));
}
