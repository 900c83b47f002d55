//! `execute_code` through the real binary: a script calls the session's
//! tools through `talaria_tools` and only its output comes back, in one
//! model turn that the iteration budget refunds; a failing script is an
//! error result; an interrupt kills the script. A script follows the
//! terminal's rules: not offered under `deny` on `local`, refused where
//! nobody can approve it, run inside the sandbox on `bwrap`; its calls pass
//! the plugins' hooks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use crate::common::*;
use serde_json::Value;
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

/// A run in yolo mode, where scripts need no approval.
fn query(home: &Home, work: &std::path::Path, server: &ScriptedServer) -> Output {
    run(home.query_in(work, server, "do it", &["--json", "--yolo"]))
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
        .query_in(work.path(), &server, "wait", &["--yolo"])
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

/// The retry settings `Home::new` writes, for configs that replace them.
const FAST_RETRIES: &str = "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n";

/// A directory with a file in it, and a script that deletes it.
fn victim() -> (tempfile::TempDir, String) {
    let victim = tempfile::tempdir().unwrap();
    std::fs::create_dir(victim.path().join("precious")).unwrap();
    std::fs::write(victim.path().join("precious/data.txt"), "keep me").unwrap();
    let code = format!(
        "import shutil\nshutil.rmtree({:?})\nprint('deleted')\n",
        victim.path().join("precious").display().to_string()
    );
    (victim, code)
}

#[test]
fn under_deny_on_local_execute_code_is_not_offered_and_deletes_nothing() {
    let home = Home::new();
    home.write_config(&format!("{FAST_RETRIES}approvals:\n  mode: deny\n"));
    let work = home.workdir();
    let (victim, code) = victim();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([execute_code(&code)]),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "do it", &[]));
    assert_code(&output, 0);
    let tools = server.requests()[0].tools_raw();
    assert!(!tools.contains("\"execute_code\""), "{tools}");
    assert!(
        tools.contains("\"terminal\""),
        "the terminal stays: {tools}"
    );
    let seen = results(&server, 1);
    assert!(seen[0].contains("Unknown tool 'execute_code'"), "{seen:?}");
    assert_eq!(
        std::fs::read_to_string(victim.path().join("precious/data.txt")).unwrap(),
        "keep me"
    );
}

/// Without a terminal (as in CI) the tool is not offered; when the tests run
/// in one, the question is asked there and times out.
#[test]
fn under_ask_with_nobody_to_answer_a_script_is_not_offered_or_refused() {
    let home = Home::new();
    home.write_config(&format!(
        "{FAST_RETRIES}approvals:\n  mode: ask\n  timeout_secs: 1\n"
    ));
    let work = home.workdir();
    let (victim, code) = victim();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([execute_code(&code)]),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "do it", &[]));
    assert_code(&output, 0);
    let seen = results(&server, 1);
    let tools = server.requests()[0].tools_raw();
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .is_ok();
    if terminal {
        assert!(seen[0].contains("the script was not run"), "{seen:?}");
        assert!(
            seen[0].contains("runs a Python script with your rights"),
            "{seen:?}"
        );
    } else {
        assert!(!tools.contains("\"execute_code\""), "{tools}");
        assert!(seen[0].contains("Unknown tool 'execute_code'"), "{seen:?}");
    }
    assert_eq!(
        std::fs::read_to_string(victim.path().join("precious/data.txt")).unwrap(),
        "keep me"
    );
}

#[test]
fn a_hardline_shape_in_a_script_is_refused_under_yolo() {
    let home = Home::new();
    let work = home.workdir();
    // Only prints the command, but a script whose text holds a hardline
    // shape is refused whatever it would do.
    let code = "open('ran', 'w').write('x')\nprint('rm -rf /')\n";
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([execute_code(code)]),
        Step::text("done"),
    ]))
    .unwrap();
    let output = query(&home, work.path(), &server);
    assert_code(&output, 0);
    let seen = results(&server, 1);
    assert!(seen[0].contains("hardline"), "{seen:?}");
    assert!(!work.path().join("ran").exists(), "the script never ran");
}

#[test]
fn a_plugins_veto_holds_for_calls_made_by_a_script() {
    let home = Home::new();
    install_test_plugin(&home, "hooks-probe");
    let work = home.workdir();
    // hooks-probe vetoes calls whose arguments hold "forbidden"; the script
    // builds the word, so only its terminal call carries it.
    let code = "from talaria_tools import terminal, ToolError\n\
                word = 'forb' + 'idden'\n\
                try:\n    terminal('echo ' + word + ' > vetoed.txt')\n\
                except ToolError as e:\n    print('refused:', e)\n";
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([execute_code(code)]),
        Step::text("done"),
    ]))
    .unwrap();
    let output = query(&home, work.path(), &server);
    assert_code(&output, 0);
    let seen = results(&server, 1);
    assert!(
        seen[0].contains(
            "refused: Blocked: probe: forbidden content (vetoed by plugin hooks-probe) [probe]"
        ),
        "the veto, then the post-tool transform: {seen:?}"
    );
    assert!(
        !work.path().join("vetoed.txt").exists(),
        "the vetoed command never ran"
    );
}

/// Whether bwrap can make a sandbox on this machine.
fn bwrap_works() -> bool {
    let works = std::process::Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "--unshare-all", "--", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        eprintln!("skipped: bwrap cannot create a sandbox here");
    }
    works
}

#[test]
fn under_bwrap_a_script_runs_in_the_sandbox_and_reaches_the_tools() {
    if !bwrap_works() {
        return;
    }
    // The sandbox's /tmp is private: the scratch directory (script, module,
    // socket) lives in the profile home, so the home must be elsewhere.
    let warm = Home::new();
    let home = Home {
        dir: tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap(),
    };
    copy_dir(
        &warm.path().join("cache/plugins"),
        &home.path().join("cache/plugins"),
    );
    home.write_config(&format!(
        "{FAST_RETRIES}approvals:\n  mode: deny\nterminal:\n  backend: bwrap\n"
    ));
    let work = home.workdir();
    std::fs::write(work.path().join("in.txt"), "from the host\n").unwrap();
    let outside = home.path().join("outside.txt");
    let code = format!(
        "from talaria_tools import read_file\n\
         print(read_file('in.txt')['content'].split('\\t', 1)[1].strip())\n\
         try:\n    open({outside:?}, 'w').write('escaped')\n    print('wrote outside')\n\
         except OSError as e:\n    print('outside refused:', e.strerror)\n",
        outside = outside.display().to_string()
    );
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([execute_code(&code)]),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "do it", &[]));
    assert_code(&output, 0);
    assert!(
        server.requests()[0]
            .tools_raw()
            .contains("\"execute_code\"")
    );
    let seen = results(&server, 1);
    let result: Value = serde_json::from_str(&seen[0]).unwrap_or_else(|_| panic!("{seen:?}"));
    assert_eq!(
        result["output"], "from the host\noutside refused: Read-only file system\n",
        "{result}"
    );
    assert!(!outside.exists());
}
