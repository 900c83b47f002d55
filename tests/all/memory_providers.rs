//! External memory providers through the real binary: the local `facts`
//! provider recalls across sessions onto the user turn, the remote `mem0`
//! provider against a fake of its REST API, the lifecycle as the
//! `memory-recorder` test plugin logs it (each turn synced once, sub-agents
//! not written, a trap disabling it with one notice), and `talaria memory`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use talaria_testkit::{FakeMem0, Role, Script, ScriptedServer, Step, ToolCall};

const RETRY: &str = "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n";

/// The user message of request `index`.
fn user_turn(server: &ScriptedServer, index: usize) -> String {
    server.requests()[index]
        .messages()
        .into_iter()
        .rfind(|m| m.role == Role::User)
        .map(|m| m.text)
        .unwrap_or_default()
}

/// The lines the memory-recorder plugin logged, without their prefix.
fn recorder_log(home: &Home) -> Vec<String> {
    home.read("logs/plugins.log")
        .lines()
        .filter_map(|line| {
            line.split_once("memory-recorder: ")
                .map(|(_, l)| l.to_owned())
        })
        .collect()
}

fn count(lines: &[String], prefix: &str) -> usize {
    lines.iter().filter(|l| l.starts_with(prefix)).count()
}

#[test]
fn facts_stored_in_one_session_are_recalled_on_the_next_sessions_user_turn() {
    let home = Home::new();
    home.write_config(&format!("{RETRY}memory:\n  provider: facts\n"));
    let work = home.workdir();
    let store = ToolCall::new(
        "fact_store",
        r#"{"action":"add","content":"The user's favourite tea is sencha","category":"user"}"#,
    );
    let first = ScriptedServer::spawn(Script::new([
        Step::tool_calls([store]),
        Step::text("Noted."),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &first, "remember that I like sencha", &[]));
    assert_code(&output, 0);
    assert!(
        tool_results(&first, 1)[0].contains("\"status\":\"added\""),
        "{:?}",
        tool_results(&first, 1)
    );

    let second = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("todo", r#"{"todos":[]}"#)]),
        Step::text("You like sencha."),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &second, "which tea do I like?", &[]));
    assert_code(&output, 0);
    assert_eq!(stdout(&output).trim(), "You like sencha.");
    let requests = second.requests();
    assert_eq!(requests.len(), 2);
    let turn = user_turn(&second, 0);
    assert!(
        turn.starts_with("which tea do I like?\n\n<memory-context>\n"),
        "{turn}"
    );
    assert!(turn.contains("sencha"), "{turn}");
    assert!(turn.ends_with("</memory-context>"), "{turn}");
    assert_eq!(
        user_turn(&second, 1),
        turn,
        "the recall is sent once, unchanged"
    );
    let system = requests[0].system_prompt_raw();
    assert_eq!(system, requests[1].system_prompt_raw(), "byte-stable");
    assert!(
        !system.contains("sencha"),
        "recalled facts stay out of the system prompt"
    );
    assert!(requests[0].tools_raw().contains("\"fact_store\""));

    // What the provider holds, as the user sees and removes it.
    let list = run(home.talaria(&["memory", "facts", "list"]));
    assert_code(&list, 0);
    let listed = stdout(&list);
    assert!(
        listed.contains("The user's favourite tea is sencha"),
        "{listed}"
    );
    assert!(listed.contains("1 of 1 facts"), "{listed}");
    let id = listed.split_whitespace().next().unwrap().to_owned();
    let export = home.path().join("facts.json");
    assert_code(
        &run(home.talaria(&[
            "memory",
            "facts",
            "export",
            "--out",
            export.to_str().unwrap(),
        ])),
        0,
    );
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    assert_eq!(exported["facts"][0]["id"], id.as_str());
    let forget = run(home.talaria(&["memory", "facts", "forget", &id]));
    assert_code(&forget, 0);
    assert_eq!(stdout(&forget).trim(), format!("forgot {id}"));
    let again = run(home.talaria(&["memory", "facts", "forget", &id]));
    assert_code(&again, 2);
    assert!(
        stderr(&again).contains(&format!("no fact {id}")),
        "{}",
        stderr(&again)
    );
    assert!(stdout(&run(home.talaria(&["memory", "facts", "list"]))).contains("0 of 0 facts"));
}

#[test]
fn without_the_provider_its_tools_are_not_offered() {
    let home = Home::new();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([Step::text("hi")])).unwrap();
    assert_code(&run(home.query_in(work.path(), &server, "hello", &[])), 0);
    let tools = server.requests()[0].tools_raw();
    assert!(!tools.contains("\"fact_store\""), "{tools}");
    assert!(!tools.contains("\"fact_feedback\""), "{tools}");
    assert_eq!(user_turn(&server, 0), "hello");
}

#[test]
fn the_mem0_provider_recalls_and_learns_through_the_fake_service() {
    let mem0 = FakeMem0::spawn_with_key("m0-key").unwrap();
    mem0.remember("ada", "Ada prefers answers in French");
    let home = Home::new();
    home.write_config(&format!(
        "{RETRY}memory:\n  provider: mem0\n  providers:\n    mem0:\n      base_url: {}\n      user_id: ada\n",
        mem0.url()
    ));
    std::fs::write(home.path().join(".env"), "MEM0_API_KEY=m0-key\n").unwrap();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([Step::text("Bien sûr.")])).unwrap();
    let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    let prompt = format!("which language for answers? my key is {secret}");
    let output = run(home.query_in(work.path(), &server, &prompt, &[]));
    assert_code(&output, 0);
    let turn = user_turn(&server, 0);
    assert!(
        turn.contains("<memory-context>"),
        "{turn}\n{}",
        stderr(&output)
    );
    assert!(turn.contains("Ada prefers answers in French"), "{turn}");

    let requests = mem0.requests();
    let search = requests
        .iter()
        .find(|r| r.path == "/v1/memories/search/")
        .expect("a search");
    assert_eq!(search.authorization.as_deref(), Some("Token m0-key"));
    assert_eq!(search.body["user_id"], "ada");
    let add = requests
        .iter()
        .find(|r| r.method == "POST" && r.path == "/v1/memories/")
        .expect("the turn is sent");
    let sent = add.body["messages"].to_string();
    assert!(sent.contains("Bien sûr."), "{sent}");
    assert!(
        !sent.contains(secret),
        "the redactor runs before the provider: {sent}"
    );
    assert!(!search.body.to_string().contains(secret));
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.path == "/v1/memories/" && r.method == "POST")
            .count(),
        1,
        "one finished turn, one add"
    );
}

#[test]
fn each_finished_turn_is_synced_once_and_sub_agent_turns_are_not() {
    let home = Home::new();
    home.write_config(&format!("{RETRY}memory:\n  provider: memory-recorder\n"));
    install_test_plugin(&home, "memory-recorder");
    let work = home.workdir();
    let delegate = ToolCall::new("delegate_task", r#"{"goal":"count the files"}"#);
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([delegate]),
        Step::text("three files"),
        Step::text("The child counted three files."),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "delegate the count", &[]));
    assert_code(&output, 0);
    let system = server.requests()[0].system_prompt_raw();
    assert!(
        system.contains("The memory-recorder provider is on for this session."),
        "the provider's block is in the frozen prompt"
    );
    let log = recorder_log(&home);
    assert_eq!(
        count(&log, "initialize"),
        1,
        "no sub-agent session: {log:#?}"
    );
    assert!(
        log[0].contains("kind=primary platform=cli profile=default"),
        "{log:#?}"
    );
    assert_eq!(count(&log, "prefetch"), 1, "{log:#?}");
    assert_eq!(count(&log, "sync-turn"), 1, "{log:#?}");
    let synced = log.iter().find(|l| l.starts_with("sync-turn")).unwrap();
    assert_eq!(
        synced,
        "sync-turn 4 messages user=\"delegate the count\" reply=\"The child counted three files.\""
    );
    assert!(
        log.iter().any(
            |l| l.starts_with("on-delegation task=\"count the files\" summary=\"three files\"")
        ),
        "{log:#?}"
    );
    let tail: Vec<&str> = log.iter().rev().take(2).map(String::as_str).collect();
    assert!(
        tail[0] == "shutdown" && tail[1].starts_with("on-session-end"),
        "{log:#?}"
    );
}

#[test]
fn a_trapping_provider_is_disabled_with_one_notice_and_the_run_goes_on() {
    let home = Home::new();
    home.write_config(&format!(
        "{RETRY}memory:\n  provider: memory-recorder\n  providers:\n    memory-recorder:\n      trap_on: prefetch\n"
    ));
    install_test_plugin(&home, "memory-recorder");
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([Step::text("still here")])).unwrap();
    let output = run(home.query_in(work.path(), &server, "hello", &[]));
    assert_code(&output, 0);
    assert_eq!(stdout(&output).trim(), "still here");
    assert_eq!(user_turn(&server, 0), "hello");
    let notices = stderr(&output)
        .matches("memory provider memory-recorder is disabled for this session")
        .count();
    assert_eq!(notices, 1, "{}", stderr(&output));
    assert_eq!(count(&recorder_log(&home), "sync-turn"), 0);
}

#[test]
fn memory_commands_choose_and_describe_the_provider() {
    let home = Home::new();
    install_test_plugin(&home, "memory-recorder");
    let providers = run(home.talaria(&["memory", "providers"]));
    assert_code(&providers, 0);
    let listed = stdout(&providers);
    for name in ["facts", "mem0", "memory-recorder"] {
        assert!(listed.contains(&format!("  {name} ")), "{name}: {listed}");
    }
    let refused = run(home.talaria(&["memory", "use", "honcho"]));
    assert_code(&refused, 2);
    assert!(
        stderr(&refused).contains("no memory provider plugin is named honcho (installed: "),
        "{}",
        stderr(&refused)
    );
    assert_code(&run(home.talaria(&["memory", "use", "facts"])), 0);
    assert!(home.read("config.yaml").contains("provider: facts"));
    let status = stdout(&run(home.talaria(&["memory", "status"])));
    assert!(
        status.contains("External provider: facts 0.1.0 (distribution)"),
        "{status}"
    );
    assert!(status.contains("MEMORY.md"), "{status}");
    assert!(stdout(&run(home.talaria(&["memory", "providers"]))).contains("* facts "));
    assert_code(&run(home.talaria(&["memory", "off"])), 0);
    assert!(!home.read("config.yaml").contains("provider: facts"));
    assert!(stdout(&run(home.talaria(&["memory", "status"]))).contains("External provider: none"));
}

/// `talaria plugin new NAME --kind memory` is a working provider: its own
/// tests pass, `talaria plugin build` makes its component, and installed with
/// the one grant it asks for it recalls an earlier session's message.
#[test]
fn a_provider_from_the_template_passes_its_tests_and_recalls_across_sessions() {
    let home = Home::new();
    let projects = home.workdir();
    let mut new = home.talaria(&["plugin", "new", "notes-test", "--kind", "memory"]);
    new.current_dir(projects.path());
    let created = run(new);
    assert_code(&created, 0);
    assert_contains(&stdout(&created), "Created rust memory provider notes-test");
    let project = projects.path().join("notes-test");
    let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
    assert!(
        lib.contains("talaria memory use notes-test"),
        "renamed in the source"
    );

    let mut test = std::process::Command::new("cargo");
    test.args(["test"]).current_dir(&project);
    // The plugins' build cache: the SDK and its bindings are most of the build.
    rust_toolchain_env(&mut test);
    let tested = test.output().unwrap();
    assert_code(&tested, 0);
    assert_contains(&stdout(&tested), "test result: ok. 2 passed");

    let mut build = home.talaria(&["plugin", "build", "notes-test"]);
    build.current_dir(projects.path());
    rust_toolchain_env(&mut build);
    assert_code(&run(build), 0);
    let package = project.join("dist/notes-test");
    home.install_package(&package, "kv");
    assert_code(&run(home.talaria(&["memory", "use", "notes-test"])), 0);

    let work = home.workdir();
    let first = ScriptedServer::spawn(Script::new([Step::text("Noted.")])).unwrap();
    let said = "I drink green tea every morning";
    assert_code(&run(home.query_in(work.path(), &first, said, &[])), 0);
    assert_eq!(user_turn(&first, 0), said, "nothing to recall yet");
    let second = ScriptedServer::spawn(Script::new([Step::text("Green tea.")])).unwrap();
    assert_code(
        &run(home.query_in(work.path(), &second, "which tea do I drink?", &[])),
        0,
    );
    let turn = user_turn(&second, 0);
    assert_contains(&turn, &format!("- the user once said: {said}"));
    assert!(
        turn.starts_with("which tea do I drink?\n\n<memory-context>"),
        "{turn}"
    );
}

/// With `extract: true` the auxiliary model (here the main one: no auxiliary
/// is configured) reads each finished turn, and the facts it names are
/// recalled in the next session.
#[test]
fn facts_extracted_by_the_model_from_one_session_reach_the_next() {
    let home = Home::new();
    home.write_config(&format!(
        "{RETRY}memory:\n  provider: facts\n  providers:\n    facts:\n      extract: true\n"
    ));
    let work = home.workdir();
    let first = ScriptedServer::spawn(Script::new([
        Step::text("Lyon is lovely."),
        // The extraction request, after the turn.
        Step::text(r#"{"content": "The user lives in Lyon", "category": "user_pref"}"#),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &first, "I moved to Lyon last year", &[]));
    assert_code(&output, 0);
    let requests = first.requests();
    assert_eq!(requests.len(), 2, "the turn, then one extraction");
    let extraction = requests[1].messages();
    assert!(
        extraction
            .iter()
            .any(|m| m.text.contains("I moved to Lyon last year")),
        "the model reads the turn"
    );
    let facts = stdout(&run(home.talaria(&["memory", "facts", "list"])));
    assert!(facts.contains("The user lives in Lyon"), "{facts}");

    let second =
        ScriptedServer::spawn(Script::new([Step::text("In Lyon."), Step::text("")])).unwrap();
    assert_code(
        &run(home.query_in(
            work.path(),
            &second,
            "what do you know about Lyon and me?",
            &[],
        )),
        0,
    );
    assert_contains(&user_turn(&second, 0), "The user lives in Lyon");
}
