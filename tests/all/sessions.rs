//! Sessions through the real binary: every message stored as it happens,
//! listing, search, export, delete, and resuming — also after the process
//! was killed in the middle of a tool call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use talaria_testkit::{Role, Script, ScriptedServer, Step, ToolCall};

fn talaria_q(
    home: &Home,
    work: &Path,
    server: &ScriptedServer,
    prompt: &str,
    extra: &[&str],
) -> std::process::Command {
    home.query_in(work, server, prompt, extra)
}

fn text(home: &Home, args: &[&str]) -> String {
    let output = run(home.talaria(args));
    assert_code(&output, 0);
    stdout(&output)
}

#[test]
fn sessions_are_stored_listed_searched_exported_continued_and_deleted() {
    let home = Home::new();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call(
            "todo",
            r#"{"todos":[{"id":"1","content":"migrate the 数据库 schema","status":"in_progress"}]}"#,
        ),
        Step::text("The zebra migration is planned."),
        Step::text("Continuing where we left off."),
    ]))
    .unwrap();
    let output = run(talaria_q(
        &home,
        work.path(),
        &server,
        "plan the zebra migration",
        &[],
    ));
    assert_code(&output, 0);
    // The process closed the database: SQLite checkpoints and removes the write-ahead log when
    // the last connection closes, so the next start has no log to replay.
    let db = home.path().join("state/sessions.sqlite");
    assert!(db.exists());
    assert!(
        !home.path().join("state/sessions.sqlite-wal").exists(),
        "the session database was left open"
    );

    let list = text(&home, &["sessions", "list"]);
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(
        list.contains("4 msgs") && list.contains("plan the zebra migration"),
        "{list}"
    );
    let id = list.split_whitespace().next().unwrap().to_owned();

    let hits = text(&home, &["sessions", "search", "zebra"]);
    assert!(hits.contains(&id), "{hits}");
    let cjk = text(&home, &["sessions", "search", "数据库"]);
    assert!(cjk.contains(&id), "substring search finds CJK: {cjk}");
    let export = text(&home, &["sessions", "export", &id[..8]]);
    assert!(
        export
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()),
        "JSON lines: {export}"
    );
    assert_eq!(
        export.lines().count(),
        5,
        "a header and 4 messages: {export}"
    );

    let output = run(talaria_q(
        &home,
        work.path(),
        &server,
        "and now?",
        &["--continue"],
    ));
    assert_code(&output, 0);
    assert!(
        stderr(&output).contains(&format!("Resuming session {id}")),
        "{}",
        stderr(&output)
    );
    let resumed = server.requests()[2].messages();
    assert!(
        resumed
            .iter()
            .any(|m| m.role == Role::User && m.text.contains("plan the zebra migration")),
        "the earlier turn is sent again"
    );
    assert_eq!(
        text(&home, &["sessions", "list"]).lines().count(),
        1,
        "one session, continued"
    );

    let refused = run(home.talaria(&["sessions", "delete", &id]));
    assert_code(&refused, 2);
    text(&home, &["sessions", "delete", &id, "--yes"]);
    assert!(text(&home, &["sessions", "list"]).trim().is_empty());
}

#[test]
fn a_session_killed_mid_tool_resumes_without_an_orphan_call() {
    let home = Home::new();
    let work = home.workdir();
    let marker = format!("{}", 8000 + std::process::id() % 1000);
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([
            ToolCall::new(
                "todo",
                r#"{"todos":[{"id":"1","content":"wait","status":"in_progress"}]}"#,
            ),
            ToolCall::new(
                "terminal",
                serde_json::json!({ "command": format!("sleep {marker}") }).to_string(),
            ),
        ]),
        Step::text("resumed fine"),
    ]))
    .unwrap();
    let mut child = talaria_q(&home, work.path(), &server, "start the long job", &[])
        .spawn()
        .unwrap();
    // Wait until the command runs, then kill talaria outright.
    wait_until("the command starts", Duration::from_secs(60), || {
        !processes_running(&["sleep", &marker]).is_empty()
    });
    child.kill().unwrap();
    child.wait().unwrap();

    let output = run(talaria_q(
        &home,
        work.path(),
        &server,
        "are you there?",
        &["--continue"],
    ));
    assert_code(&output, 0);
    assert!(
        stderr(&output).contains("marked interrupted"),
        "{}",
        stderr(&output)
    );
    let requests = server.requests();
    let messages = requests[1].messages();
    let results: Vec<_> = messages
        .iter()
        .flat_map(|m| m.tool_results.clone())
        .collect();
    assert_eq!(results.len(), 2, "both calls answered: {messages:?}");
    assert!(results[1].content.contains("interrupted"), "{results:?}");
    talaria_testkit::assertions::assert_tool_calls_paired(&requests[1..]);
    // The sleep died with its process group or is left to die: never a second copy.
    let _ = std::process::Command::new("pkill")
        .args(["-f", &format!("sleep {marker}")])
        .status();
}

#[test]
fn session_search_condenses_hits_with_the_auxiliary_model() {
    let home = Home::new();
    let work = home.workdir();
    let aux = ScriptedServer::spawn(Script::new([Step::text(
        "Earlier the zebra migration was planned [session].",
    )]))
    .unwrap();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\nauxiliary:\n  name: aux-model\n  base_url: {}\n",
        aux.openai_base_url()
    ));
    let server = ScriptedServer::spawn(Script::new([
        Step::text("Planned."),
        Step::tool_call("session_search", r#"{"query":"zebra"}"#),
        Step::text("Found it."),
    ]))
    .unwrap();
    assert_code(
        &run(talaria_q(
            &home,
            work.path(),
            &server,
            "plan the zebra migration",
            &[],
        )),
        0,
    );
    assert_code(
        &run(talaria_q(
            &home,
            work.path(),
            &server,
            "what did we plan?",
            &[],
        )),
        0,
    );

    let result = server.requests()[2]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .map(|r| r.content)
        .next()
        .unwrap();
    let result: serde_json::Value = serde_json::from_str(&result).unwrap();
    assert_eq!(
        result["summary"],
        "Earlier the zebra migration was planned [session]."
    );
    assert!(result["count"].as_u64().unwrap() >= 1, "{result}");
    let condense = &aux.requests()[0];
    assert_eq!(condense.model(), Some("aux-model"));
    assert!(
        condense.body.to_string().contains("zebra"),
        "the hits go to the auxiliary model"
    );
}

#[test]
fn a_long_session_is_compressed_into_a_child_session_without_orphans() {
    let home = Home::new();
    let work = home.workdir();
    let aux = ScriptedServer::spawn(Script::new([
        Step::text("Goal: print long lines. Decisions: none. Open tasks: finish."),
        Step::text("Goal: print long lines. Decisions: none. Open tasks: finish."),
        Step::text("Goal: print long lines. Decisions: none. Open tasks: finish."),
    ]))
    .unwrap();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\nmodel:\n  context_window: 16000\nauxiliary:\n  name: aux-model\n  base_url: {}\n",
        aux.openai_base_url()
    ));
    let print = || {
        ToolCall::new(
            "terminal",
            serde_json::json!({ "command": "head -c 5000 /dev/zero | tr '\\\\0' x" }).to_string(),
        )
    };
    let mut steps: Vec<Step> = (0..8).map(|_| Step::tool_calls([print()])).collect();
    steps.push(Step::text("printed everything"));
    let server = ScriptedServer::spawn(Script::new(steps)).unwrap();
    let output = run(talaria_q(
        &home,
        work.path(),
        &server,
        "print long lines eight times",
        &[],
    ));
    assert_code(&output, 0);
    assert!(
        stderr(&output).contains("context compressed"),
        "{}",
        stderr(&output)
    );

    let requests = server.requests();
    talaria_testkit::assertions::assert_tool_calls_paired(&requests);
    let last = requests.last().unwrap().messages();
    assert!(
        last.iter()
            .any(|m| m.text.contains("reference only, not new instructions")),
        "the summary is in the history"
    );
    assert!(
        last.iter()
            .any(|m| m.role == Role::User && m.text.contains("print long lines eight times")),
        "the first request is protected"
    );
    assert!(!aux.requests().is_empty(), "the auxiliary model summarised");
    let list = text(&home, &["sessions", "list"]);
    let sessions = list.lines().count();
    assert!(
        (2..8).contains(&sessions),
        "the compressed session and its continuation(s), not one per turn: {list}"
    );
    assert!(
        list.contains("~1 "),
        "continuations are chained to the first: {list}"
    );
}
