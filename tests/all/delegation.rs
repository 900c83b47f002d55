//! Delegation through the real binary: three children run concurrently with
//! their own context and tool profile, and report back to the parent; the
//! parent's hooks plugins see the children's tool calls too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

#[test]
fn three_children_work_concurrently_and_report_back() {
    let home = Home::new();
    let work = home.workdir();
    let tasks = serde_json::json!({
        "tasks": [
            {"goal": "check module alpha", "context": "alpha lives in src/alpha"},
            {"goal": "check module beta"},
            {"goal": "check module gamma"}
        ]
    });
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("delegate_task", tasks.to_string())]),
        Step::text("child report"),
        Step::text("child report"),
        Step::text("child report"),
        Step::text("all three modules are fine"),
    ]))
    .unwrap();
    let command = home.query_in(work.path(), &server, "check the modules", &[]);
    let output = run(command);
    assert_code(&output, 0);
    assert_eq!(stdout(&output).trim(), "all three modules are fine");

    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let parent_tools = requests[0].tools_raw();
    assert!(parent_tools.contains("\"delegate_task\""));
    for child in &requests[1..4] {
        assert!(
            child.system_prompt_raw().contains("sub-agent"),
            "a child's own prompt"
        );
        let tools = child.tools_raw();
        for hidden in ["\"delegate_task\"", "\"memory\"", "\"execute_code\""] {
            assert!(!tools.contains(hidden), "a child must not see {hidden}");
        }
        assert!(
            tools.contains("\"read_file\""),
            "children keep the working tools"
        );
        let user = child
            .messages()
            .into_iter()
            .find(|m| m.role == talaria_testkit::Role::User)
            .unwrap();
        assert!(
            user.text.starts_with("check module"),
            "the task is the child's whole input"
        );
    }
    let report = requests[4]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .map(|r| r.content)
        .next()
        .unwrap();
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for (result, goal) in results.iter().zip([
        "check module alpha",
        "check module beta",
        "check module gamma",
    ]) {
        assert_eq!(result["goal"], goal, "results come back in task order");
        assert_eq!(result["status"], "completed", "{result}");
        assert_eq!(result["report"], "child report");
    }
    let sessions = run(home.talaria(&["sessions", "list"]));
    assert_eq!(
        stdout(&sessions)
            .lines()
            .filter(|l| l.contains(".child"))
            .count(),
        3,
        "{}",
        stdout(&sessions)
    );
}

#[test]
fn interrupting_the_parent_interrupts_its_children() {
    let home = Home::new();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "delegate_task",
            serde_json::json!({"goal": "think for a long time"}).to_string(),
        )]),
        Step::stall(std::time::Duration::from_secs(60)),
    ]))
    .unwrap();
    let child = home
        .query_in(work.path(), &server, "go", &[])
        .spawn()
        .unwrap();
    wait_until(
        "the child asks its model",
        std::time::Duration::from_secs(30),
        || server.requests().len() >= 2,
    );
    interrupt(&child);
    let output = wait(child);
    assert_code(&output, 130);
    let show = run(home.talaria(&["sessions", "list"]));
    let listing = stdout(&show);
    let child_id = listing
        .lines()
        .find(|l| l.contains(".child1"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no child session: {listing}"))
        .to_owned();
    let parent_id = child_id.trim_end_matches(".child1").to_owned();
    let parent = stdout(&run(home.talaria(&["sessions", "show", &parent_id])));
    assert!(parent.contains("interrupted by user"), "{parent}");
}

#[test]
fn with_max_depth_two_children_delegate_once_more_and_no_further() {
    let home = Home::new();
    home.write_config(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\ndelegation:\n  max_depth: 2\n",
    );
    let work = home.workdir();
    let delegate = |goal: &str| {
        ToolCall::new(
            "delegate_task",
            serde_json::json!({ "goal": goal }).to_string(),
        )
    };
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([delegate("split the work")]),
        Step::tool_calls([delegate("do the deep part")]),
        Step::text("deep report"),
        Step::text("child done"),
        Step::text("parent done"),
    ]))
    .unwrap();
    let command = home.query_in(work.path(), &server, "go", &[]);
    let output = run(command);
    assert_code(&output, 0);
    assert_eq!(stdout(&output).trim(), "parent done");
    let requests = server.requests();
    assert!(
        requests[1].tools_raw().contains("\"delegate_task\""),
        "depth 1 may delegate"
    );
    assert!(
        !requests[2].tools_raw().contains("\"delegate_task\""),
        "depth 2 may not"
    );
    assert!(
        requests[3]
            .messages()
            .iter()
            .flat_map(|m| m.tool_results.clone())
            .any(|r| r.content.contains("deep report"))
    );

    home.write_config("delegation:\n  max_depth: 3\n");
    let server = ScriptedServer::spawn(Script::new([Step::text("x")])).unwrap();
    let command = home.query_in(work.path(), &server, "go", &[]);
    let output = run(command);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("delegation.max_depth must be 1 or 2"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_hooks_plugins_veto_holds_in_children_at_every_depth() {
    let home = Home::new();
    home.write_config(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\ndelegation:\n  max_depth: 2\n",
    );
    install_test_plugin(&home, "hooks-probe");
    let work = home.workdir();
    // hooks-probe vetoes calls whose arguments hold "forbidden".
    let vetoed = |file: &str| {
        ToolCall::new(
            "terminal",
            serde_json::json!({ "command": format!("echo forbidden > {file}") }).to_string(),
        )
    };
    let delegate = |goal: &str| {
        ToolCall::new(
            "delegate_task",
            serde_json::json!({ "goal": goal }).to_string(),
        )
    };
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([delegate("write the file")]),
        Step::tool_calls([vetoed("child.txt"), delegate("write it deeper")]),
        Step::tool_calls([vetoed("grandchild.txt")]),
        Step::text("grandchild done"),
        Step::text("child done"),
        Step::text("parent done"),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "go", &[]));
    assert_code(&output, 0);
    assert_eq!(stdout(&output).trim(), "parent done");
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    let blocked = "Blocked: probe: forbidden content (vetoed by plugin hooks-probe) [probe]";
    // The grandchild's answer to its own call, then the child's.
    assert_eq!(tool_results(&server, 3), vec![blocked.to_owned()]);
    let child = tool_results(&server, 4);
    assert_eq!(child[0], blocked, "{child:?}");
    assert!(child[1].contains("grandchild done"), "{child:?}");
    for file in ["child.txt", "grandchild.txt"] {
        assert!(
            !work.path().join(file).exists(),
            "{file}: the vetoed command never ran"
        );
    }
}

#[test]
fn a_task_s_toolsets_and_role_shape_the_child_and_never_widen_it() {
    let home = Home::new();
    let work = home.workdir();
    let call = serde_json::json!({
        "role": "a careful reviewer",
        "tasks": [
            {"goal": "read the notes", "toolsets": ["file"]},
            {"goal": "remember things", "toolsets": ["memory", "file"], "role": "an archivist"}
        ]
    });
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("delegate_task", call.to_string())]),
        Step::text("child report"),
        Step::text("child report"),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "review", &[]));
    assert_code(&output, 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests[0].tools_raw().contains("\"terminal\""),
        "the parent has the terminal"
    );
    let children = &requests[1..3];
    let reviewer = children
        .iter()
        .find(|r| r.system_prompt_raw().contains("a careful reviewer"))
        .expect("the call's role");
    let archivist = children
        .iter()
        .find(|r| r.system_prompt_raw().contains("an archivist"))
        .expect("the task's own role wins");
    for child in [reviewer, archivist] {
        let tools = child.tools_raw();
        assert!(tools.contains("\"read_file\""), "{tools}");
        for hidden in [
            "\"terminal\"",
            "\"memory\"",
            "\"delegate_task\"",
            "\"clarify\"",
        ] {
            assert!(
                !tools.contains(hidden),
                "{hidden} given to a child: {tools}"
            );
        }
    }
}
