//! A session reads a plugin's code only when it calls one of its tools: after a warm-up (the
//! profile's plugins listed once), a session that calls only `read_file` loads `fs` and nothing
//! else (the host logs each component it reads: "loaded NAME …"), and a later `web_extract` in
//! the same session loads `web` then.

use crate::common::*;
use serde_json::json;
use talaria_testkit::{Script, ScriptedServer, Step};

/// The plugins whose code the host read, in order, from the plugin log.
fn loaded(home: &Home) -> Vec<String> {
    let log = std::fs::read_to_string(home.path().join("logs/plugins.log")).unwrap_or_default();
    log.lines()
        .filter_map(|line| line.split("[host] loaded ").nth(1))
        .filter_map(|rest| rest.split(' ').next())
        .map(str::to_owned)
        .collect()
}

fn session(home: &Home, steps: Vec<Step>) -> ScriptedServer {
    let server = ScriptedServer::spawn(Script::new(steps)).unwrap();
    let work = home.workdir();
    std::fs::write(work.path().join("notes.txt"), "marker line\n").unwrap();
    let output = run(home.query_in(work.path(), &server, "go", &[]));
    assert_code(&output, 0);
    server
}

#[test]
fn a_session_reads_only_the_plugins_whose_tools_it_calls() {
    build_plugins();
    let home = Home::new();
    session(&home, vec![Step::text("warm")]);
    std::fs::remove_file(home.path().join("logs/plugins.log")).unwrap();

    let read = Step::tool_call("read_file", json!({"path": "notes.txt"}).to_string());
    let server = session(&home, vec![read.clone(), Step::text("done")]);
    assert_contains(&tool_results(&server, 1)[0], "marker line");
    assert_eq!(
        loaded(&home),
        ["fs"],
        "only fs's code should have been read"
    );

    std::fs::remove_file(home.path().join("logs/plugins.log")).unwrap();
    let extract = Step::tool_call(
        "web_extract",
        json!({"urls": ["http://127.0.0.1:9/private"]}).to_string(),
    );
    let server = session(&home, vec![read, extract, Step::text("done")]);
    // The private address is refused by the plugin's host checks: its code ran.
    let results = tool_results(&server, 2);
    assert_contains(results.last().unwrap(), "allow_private_urls");
    assert_eq!(loaded(&home), ["fs", "web"]);
}
